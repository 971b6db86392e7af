"""What an agent reads from the tools: compact definitions, one-sentence errors, its own vocabulary.

Through the official MCP client against a real ``skift serve``: the tool
definitions stay small (names, descriptions and input schemas measured as the
JSON that crosses the wire), a bad argument is one sentence and a next move
(never a validator's dump), and a refusal's next move names the tools'
parameters, never the command line's flags.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from test_mcp_tools import talk

import skift

if TYPE_CHECKING:
    import skift_server

# names + descriptions + input schemas, as compact JSON (what an agent pays before any work)
BUDGET = 9_000
CLI_WORDS = re.compile(r"--[a-z]|-p/|'skift |`skift ")


def _one_sentence_and_a_move(text: str) -> None:
    assert "pydantic" not in text, text
    assert "\n" not in text, text
    assert "Next: " in text, text
    assert not CLI_WORDS.search(text), text


def _titles(schema: object) -> list[str]:
    """Every ``title`` keyword in a schema (a property named title is not one)."""
    found: list[str] = []
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "properties" and isinstance(value, dict):
                for sub in value.values():
                    found += _titles(sub)
            elif key == "title":
                found.append(str(value))
            else:
                found += _titles(value)
    elif isinstance(schema, list):
        for value in schema:
            found += _titles(value)
    return found


async def test_the_tool_definitions_fit_the_budget_without_noise(
    agent: skift_server.RemoteSkift,
) -> None:
    async with talk(agent) as bot:
        tools = (await bot.client.list_tools()).tools
        size = 0
        for t in tools:
            schema = json.dumps(t.input_schema, separators=(",", ":"))
            size += len(t.name) + len(t.description or "") + len(schema)
            assert not _titles(t.input_schema), t.name  # pydantic's titles repeat the names
            assert '{"type":"null"}' not in schema, t.name  # leaving a parameter out is "none"
            assert "\n        " not in (t.description or ""), t.name  # no docstring indentation
        assert size <= BUDGET, f"the tool definitions cost {size} characters (budget {BUDGET})"


async def test_a_missing_or_wrong_argument_is_one_sentence_and_a_next_move(
    agent: skift_server.RemoteSkift, owner: skift_server.RemoteSkift, project: str
) -> None:
    await owner.patch(project, [skift.CreateNode(title="Work")])
    async with talk(agent) as bot:
        missing = await bot.refused("heartbeat", ref=f"{project}#1")
        _one_sentence_and_a_move(missing)
        assert "`lease` is required" in missing
        wrong = await bot.refused(
            "release", ref=f"{project}#1", lease="01J0000000000000000000000", reason="bored"
        )
        _one_sentence_and_a_move(wrong)
        assert "`reason`" in wrong
        assert "crash" in wrong


async def test_refusals_name_the_tools_parameters_not_the_command_lines_flags(
    agent: skift_server.RemoteSkift, owner: skift_server.RemoteSkift, project: str
) -> None:
    await owner.patch(project, [skift.CreateNode(title="Only a person can", assignee_kind="user")])
    async with talk(agent) as bot:
        nothing = await bot.refused("claim", projects=[project])
        _one_sentence_and_a_move(nothing)
        assert "nothing_ready" in nothing
        assert "wait_seconds" in nothing

        bare = await bot.refused("get", ref="#1")
        _one_sentence_and_a_move(bare)
        assert "`project`" in bare


async def test_a_gated_lease_says_the_gate_is_pending_not_claim_again(
    agent: skift_server.RemoteSkift, owner: skift_server.RemoteSkift, project: str
) -> None:
    await owner.patch(project, [skift.CreateNode(title="Needs an OAuth app")])
    async with talk(agent) as bot:
        ref = f"{project}#1"
        lease = (await bot.call("claim", ref=ref))["lease"]["id"]
        await bot.call("gate", ref=ref, lease=lease, title="Mint an OAuth app")
        text = await bot.refused("complete", ref=ref, lease=lease, result="done anyway")
        _one_sentence_and_a_move(text)
        assert "gate" in text.split("Next: ", 1)[1]
        assert "claim the node again" not in text
        assert "call claim" not in text


async def test_claim_records_the_harness_and_where_the_attempt_runs(
    agent: skift_server.RemoteSkift, owner: skift_server.RemoteSkift, project: str
) -> None:
    await owner.patch(project, [skift.CreateNode(title="Placed work")])
    async with talk(agent) as bot:
        got = await bot.call(
            "claim",
            projects=[project],
            harness="claude-code",
            agent_ref="https://agents.example/a",
            verbose=True,
        )
        assert (got["lease"]["harness"], got["lease"]["agent_ref"]) == (
            "claude-code",
            "https://agents.example/a",
        )


async def test_the_server_names_its_version(agent: skift_server.RemoteSkift) -> None:
    from importlib.metadata import version

    async with talk(agent) as bot:
        info = bot.client.server_info
        assert info is not None
        assert info.name == "skift"
        assert info.version == version("skift-mcp")


async def test_a_duration_out_of_range_names_the_argument_and_its_range(
    agent: skift_server.RemoteSkift, owner: skift_server.RemoteSkift, project: str
) -> None:
    """``ttl_seconds = 1e300`` (or infinity, NaN, negative) is an invalid argument naming
    itself and the range, not "Error executing tool claim" (issue 17 point 8)."""
    await owner.patch(project, [skift.CreateNode(title="Work")])
    async with talk(agent) as bot:
        # (infinity and NaN do not survive the client's JSON: they arrive as null, the
        # default; skift_mcp._tooling.ttl refuses them when they do arrive)
        for bad in (1e300, 1e20, -5.0):
            said = await bot.refused("claim", ref=f"{project}#1", ttl_seconds=bad)
            _one_sentence_and_a_move(said)
            assert "`ttl_seconds`" in said, said
            assert "Error executing" not in said, said
        said = await bot.refused("claim", projects=[project], wait_seconds=1e300)
        _one_sentence_and_a_move(said)
        assert "`wait_seconds`" in said
        assert "1,000,000,000" in said
        claimed = await bot.call("claim", ref=f"{project}#1", ttl_seconds=60)
        assert claimed["lease"]["id"]
