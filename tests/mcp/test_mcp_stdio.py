"""The real ``skift-mcp`` command over stdio, as an agent harness runs it.

The harness starts ``skift-mcp --server unix://…`` as a subprocess and speaks
MCP on its stdin and stdout. The MCP process reaches ``skift serve`` through
the unix socket, so the caller is this process's uid: the server's owner.
"""

from __future__ import annotations

import os
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


async def test_the_block_skift_mcp_config_prints_works_from_a_minimal_environment(
    tmp_path: Path,
) -> None:
    """An MCP harness starts servers with a minimal environment (no XDG_RUNTIME_DIR, no
    SKIFT_SERVER, a bare PATH): the block ``skift mcp config`` prints names the command by
    its absolute path and the server by its URL, and works as printed. A server started
    on another path is never found by having started: without the block, skift-mcp
    tries the user's default socket alone."""
    import asyncio
    import json
    import subprocess

    from serverproc import ServerProcess

    home = tmp_path / "home"
    home.mkdir()
    server = ServerProcess("--memory")
    try:
        await server.start()
        skift_cli = Path(sys.executable).parent / "skift"
        printed = await asyncio.to_thread(
            subprocess.run,
            [str(skift_cli), "--server", server.url, "mcp", "config", "--json"],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        entry = json.loads(printed.stdout)["entry"]
        assert Path(entry["command"]).is_absolute()
        assert entry["env"] == {"SKIFT_SERVER": server.url}
        minimal = {"HOME": str(home), "PATH": "/usr/bin:/bin"}
        params = mcp.StdioServerParameters(
            command=entry["command"], args=entry["args"], env={**minimal, **entry["env"]}
        )
        async with mcp.Client(params) as client:
            got = await client.call_tool("ready", {})
            assert not got.is_error, got.content
            assert got.structured_content is not None
            assert got.structured_content["nodes"] == []

        # without the block: the default socket only, never the server that started last
        bare = mcp.StdioServerParameters(command=entry["command"], args=[], env=minimal)
        async with mcp.Client(bare) as client:
            got = await client.call_tool("ready", {})
            if got.is_error:  # (else a server of this user's at the default socket answered)
                text = got.content[0].text  # type: ignore[union-attr]
                assert "cannot reach the skift server at " in text
                assert str(server.socket) not in text
    finally:
        await server.stop()
        server.cleanup()


async def test_skift_mcp_without_a_server_names_the_socket_it_tried(tmp_path: Path) -> None:
    from skift_server._paths import default_socket_path

    env = {"HOME": str(tmp_path)}
    old = {k: os.environ.pop(k, None) for k in ("XDG_RUNTIME_DIR",)}
    try:
        defaults = [default_socket_path()]  # as skift-mcp computes it in that environment
    finally:
        os.environ.update({k: v for k, v in old.items() if v is not None})
    params = mcp.StdioServerParameters(command=_command(), args=[], env=env)
    async with mcp.Client(params) as client:
        got = await client.call_tool("ready", {})
        if any(p.exists() for p in defaults):
            return  # a real server of this user answers: nothing to assert about its absence
        assert got.is_error
        text = got.content[0].text  # type: ignore[union-attr]
        assert "cannot reach the skift server at " in text
        assert str(defaults[0]) in text
        assert "Next: " in text
