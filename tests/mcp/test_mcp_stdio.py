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


async def test_skift_mcp_with_a_minimal_environment_finds_the_server_its_user_started(
    tmp_path: Path,
) -> None:
    """An MCP harness starts servers with a minimal environment (no XDG_RUNTIME_DIR, no
    SKIFT_SERVER): skift-mcp still finds the server its user started, through the socket
    ``skift serve`` records under the home directory."""
    from serverproc import ServerProcess

    home = tmp_path / "home"
    home.mkdir()
    server = ServerProcess(
        "--memory", env={"HOME": str(home), "XDG_STATE_HOME": "", "XDG_RUNTIME_DIR": ""}
    )
    try:
        await server.start()
        params = mcp.StdioServerParameters(command=_command(), args=[], env={"HOME": str(home)})
        async with mcp.Client(params) as client:
            got = await client.call_tool("ready", {})
            assert not got.is_error, got.content
            assert got.structured_content is not None
            assert got.structured_content["nodes"] == []
    finally:
        await server.stop()
        server.cleanup()


async def test_skift_mcp_without_a_server_names_the_paths_it_tried(tmp_path: Path) -> None:
    import os

    defaults = [
        Path(f"/run/user/{os.getuid()}/skift/skift.sock"),
        Path(f"/tmp/skift-{os.getuid()}/skift.sock"),
    ]
    params = mcp.StdioServerParameters(command=_command(), args=[], env={"HOME": str(tmp_path)})
    async with mcp.Client(params) as client:
        got = await client.call_tool("ready", {})
        if any(p.exists() for p in defaults):
            return  # a real server of this user answers: nothing to assert about its absence
        assert got.is_error
        text = got.content[0].text  # type: ignore[union-attr]
        assert "cannot reach the skift server at " in text
        assert str(defaults[0]) in text
        assert str(defaults[1]) in text
        assert "Next: " in text
