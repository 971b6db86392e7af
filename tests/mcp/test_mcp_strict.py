"""MCP arguments are strict, and the tool list fits its budget as a client receives it.

Through the official MCP client against a real ``skift serve``: an argument a
tool does not take (``label`` for ``labels``) is refused, naming it and the
closest known one, before the tool runs: no lease is taken, nothing is
written. The tool definitions are measured from the ``tools/list`` answer a
client receives over stdio (``skift-mcp`` as a harness starts it).
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

from test_mcp_tools import talk

import skift

if TYPE_CHECKING:
    import skift_server

# names + descriptions + input schemas, and the output schemas, as a client receives them
# (the JSON of tools/list: the counts take each part as json.dumps writes it, spaces
# after separators included, so no encoding of the same answer costs more)
INPUT_BUDGET = 9_000
OUTPUT_BUDGET = 6_000


async def test_an_unknown_argument_is_refused_naming_it_and_the_closest_and_no_lease_is_taken(
    agent: skift_server.RemoteSkift, owner: skift_server.RemoteSkift, project: str
) -> None:
    await owner.patch(
        project,
        [skift.CreateNode(title="Labelled", labels=("x",)), skift.CreateNode(title="Other")],
    )
    async with talk(agent) as bot:
        text = await bot.refused("claim", projects=[project], label=["x"])
        assert "`label`" in text
        assert "`labels`" in text
        assert "nothing was done" in text
        assert "Next: " in text
        assert "\n" not in text
        for n in (await owner.list_nodes(projects=[project])).nodes:
            assert not n.claimed, n.ref  # refused before the claim: no lease on anything
        far = await bot.refused("ready", zzz=1)
        assert "`zzz`" in far
        assert "did you mean" not in far  # no far-fetched suggestion
        got = await bot.call("claim", projects=[project], labels=["x"])
        assert got["node"]["title"] == "Labelled"


async def test_claim_without_a_ref_never_takes_a_gate_even_for_a_person(
    owner: skift_server.RemoteSkift, project: str
) -> None:
    """The server's owner is a user: over MCP, claim without a ref still takes only agent
    work (a gate waits for its person); by ref it may take the gate."""
    await owner.patch(project, [skift.CreateNode(title="Sign the contract", assignee_kind="user")])
    async with talk(owner) as me:
        text = await me.refused("claim", projects=[project])
        assert "nothing_ready" in text
        assert not (await owner.get(f"{project}#1")).claimed
        got = await me.call("claim", ref=f"{project}#1")
        assert got["node"]["title"] == "Sign the contract"


def _sizes(tools: list[dict[str, object]]) -> tuple[int, int]:
    inputs = outputs = 0
    for t in tools:
        inputs += len(str(t["name"])) + len(str(t.get("description") or ""))
        inputs += len(json.dumps(t["inputSchema"], ensure_ascii=False))
        if "outputSchema" in t:
            outputs += len(json.dumps(t["outputSchema"], ensure_ascii=False))
    return inputs, outputs


def test_the_tool_list_a_client_receives_fits_the_budgets() -> None:
    """``tools/list`` over skift-mcp's stdio, read as raw JSON-RPC lines (no client model
    in between), for the newest protocol version and every one the manifest answers."""
    import subprocess

    from skift_mcp import _stdio

    manifest = _stdio.load_manifest()
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": manifest["latest"],
            "capabilities": {},
            "clientInfo": {"name": "budget", "version": "0"},
        },
    }
    lines = [
        hello,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "skift_mcp", "--server", "unix:///nonexistent/skift.sock"],
        input="".join(json.dumps(m) + "\n" for m in lines),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    answers = {}
    for line in proc.stdout.splitlines():
        msg = json.loads(line)
        if "id" in msg:
            answers[msg["id"]] = msg
    tools = answers[2]["result"]["tools"]
    assert len(tools) >= 13
    inputs, outputs = _sizes(tools)
    assert inputs <= INPUT_BUDGET, f"tool definitions: {inputs} characters (budget {INPUT_BUDGET})"
    assert outputs <= OUTPUT_BUDGET, (
        f"output schemas: {outputs} characters (budget {OUTPUT_BUDGET})"
    )
    for tool_list in manifest["tool_lists"]:  # every protocol version's answer
        i, o = _sizes(tool_list)
        assert i <= INPUT_BUDGET, i
        assert o <= OUTPUT_BUDGET, o
