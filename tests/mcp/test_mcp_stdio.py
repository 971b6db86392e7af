"""The real ``skift-mcp`` command over stdio, as an agent harness runs it.

The harness starts ``skift-mcp --server unix://…`` as a subprocess and speaks
MCP on its stdin and stdout. The MCP process reaches ``skift serve`` through
the unix socket, so the caller is this process's uid: the server's owner.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import mcp

import skift

if TYPE_CHECKING:
    from serverproc import ServerProcess

    import skift_server


def _command() -> str:
    beside = Path(sys.executable).parent / "skift-mcp"
    found = str(beside) if beside.exists() else shutil.which("skift-mcp")
    assert found, "the skift-mcp console script is not installed"
    return found


async def test_skift_mcp_over_stdio_initializes_lists_tools_claims_and_completes(
    mcp_server: ServerProcess, owner: skift_server.RemoteSkift, project: str
) -> None:
    await owner.patch(project, [skift.CreateNode(title="Say hello", body="Greet the world.")])
    params = mcp.StdioServerParameters(command=_command(), args=["--server", mcp_server.url])
    async with mcp.Client(params) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert {"claim", "complete", "patch", "gate"} <= tools

        got = await client.call_tool("claim", {"projects": [project]})
        assert not got.is_error, got.content
        claim = got.structured_content
        assert claim is not None
        assert claim["node"]["ref"] == f"{project}#1"
        assert claim["node"]["body"]["text"] == "Greet the world."

        done = await client.call_tool(
            "complete",
            {"ref": claim["node"]["ref"], "lease": claim["lease"]["id"], "result": "Hello."},
        )
        assert not done.is_error, done.content

    node = await owner.get(f"{project}#1")
    assert node.status is skift.Status.DONE
    assert node.result == "Hello."
