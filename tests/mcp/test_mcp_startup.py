"""An agent harness starts ``skift-mcp`` per session: the handshake is answered before the MCP SDK loads.

Importing the MCP SDK takes most of a second, and a harness waits for the
``initialize`` answer and the tool list before its session starts. The stdio
front answers both from what the SDK's own server answers (precomputed in
``skift_mcp/_manifest.json``) while the SDK loads in the background. The
guard is on what the answer needs, not on a clock (the time is measured in
bench/): a fresh ``skift-mcp`` whose SDK never loads still answers the
handshake, and has imported neither the SDK, nor pydantic, nor the gRPC
client, nor any HTTP transport, nor asyncio: the front reads and writes the
wire blocking (``skift_mcp._front``) until the session needs the SDK.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import mcp

import skift
from skift_mcp import _manifest, _stdio

if TYPE_CHECKING:
    from pathlib import Path

    from serverproc import ServerProcess

    import skift_server

# What a handshake answer must not wait for.
NOT_FOR_THE_HANDSHAKE = (
    "mcp",
    "mcp_types",
    "pydantic",
    "pydantic_core",
    "starlette",
    "uvicorn",
    "sse_starlette",
    "httpx",
    "httpx2",
    "grpclib",
    "betterproto2",
    "skift_server",
    "skift_mcp._server",
    "skift_mcp._tooling",
    "skift_mcp._tools",
    "skift_mcp._manifest",
    # reading the installed version costs more than the rest of the answer: it is in the manifest
    "importlib.metadata",
    "asyncio",
    "anyio",
)

# skift-mcp with the SDK's loading switched off (nor started by the clock: a slow machine may
# take longer than LOAD_AFTER between two lines): only the front can answer.
FRONT_ONLY = """
import json, sys
import skift_mcp._front as early
early.LOAD_AFTER = 3600.0
from skift_mcp._cli import main
try:
    main(["--server", "unix:///nowhere/skift.sock"])
finally:
    with open(sys.argv[1], "w") as fh:
        json.dump(sorted(sys.modules), fh)
"""


def _session(script: list[str], messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    proc = subprocess.run(
        script,
        input="".join(json.dumps(m) + "\n" for m in messages),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def offenders(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if m in names or any(m.startswith(n + ".") for n in names))


def hello(version: str = "2025-11-25") -> dict[str, Any]:
    params = {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    }
    return {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}


def test_the_handshake_is_answered_without_the_sdk(tmp_path: Path) -> None:
    report = tmp_path / "modules.json"
    answers = _session(
        [sys.executable, "-c", FRONT_ONLY, str(report)],
        [
            {"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": {}},
            hello(),
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            {"jsonrpc": "2.0", "id": 3, "method": "ping"},
        ],
    )
    by_id = {a["id"]: a for a in answers}
    assert by_id[0]["error"]["code"] == -32601  # a server of the initialize handshake
    init = by_id[1]["result"]
    assert init["protocolVersion"] == "2025-11-25"
    assert init["serverInfo"]["name"] == "skift"
    assert init["serverInfo"]["version"] not in ("", None)
    assert init["instructions"].startswith("skift is the work graph")
    names = {t["name"] for t in by_id[2]["result"]["tools"]}
    assert {"ready", "claim", "complete", "patch", "gate", "release"} <= names
    assert by_id[3]["result"] == {}

    modules = set(json.loads(report.read_text()))
    assert "skift_mcp._front" in modules
    assert offenders(modules, NOT_FOR_THE_HANDSHAKE) == []


def test_an_unknown_protocol_version_gets_the_latest_the_sdk_offers(tmp_path: Path) -> None:
    answers = _session(
        [sys.executable, "-c", FRONT_ONLY, str(tmp_path / "m.json")], [hello("1999-01-01")]
    )
    assert answers[0]["result"]["protocolVersion"] == _stdio.load_manifest()["latest"]


async def test_the_front_answers_what_the_sdk_server_answers() -> None:
    """The precomputed answers are the SDK server's own for the current tools.

    When this fails after a change to a tool, a description or the
    instructions: ``uv run python -m skift_mcp._manifest`` and commit the file.
    """
    assert _manifest.render(await _manifest.compute()) == _stdio.MANIFEST.read_text()


async def test_a_session_hands_over_to_the_sdk_in_order(
    mcp_server: ServerProcess, owner: skift_server.RemoteSkift, project: str
) -> None:
    """A harness of the handshake era (mode="legacy"): calls queued while the SDK loads are
    answered once it has, by the SDK's server, refusals included."""
    await owner.patch(project, [skift.CreateNode(title="Say hello")])
    params = mcp.StdioServerParameters(
        command=sys.executable, args=["-m", "skift_mcp", "--server", mcp_server.url]
    )
    async with mcp.Client(params, mode="legacy") as client:
        assert client.protocol_version == "2025-11-25"
        got = await client.call_tool("ready", {"projects": [project]})
        assert not got.is_error, got.content
        assert got.structured_content is not None
        assert [n["ref"] for n in got.structured_content["nodes"]] == [f"{project}#1"]
        bad = await client.call_tool("complete", {})
        assert bad.is_error
        block = bad.content[0]
        assert block.type == "text"
        text = block.text
        assert text.startswith("invalid: `ref` is required"), text
        assert "Next: " in text
        listed = {t.name for t in (await client.list_tools()).tools}  # now from the SDK
        assert "claim" in listed
