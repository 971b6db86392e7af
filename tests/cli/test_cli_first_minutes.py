"""The first ten minutes at the terminal: a server that is still starting, and one that is absent.

Real ``skift`` processes against real ``skift serve`` processes: a client
started before its server has finished starting waits for it and says so; a
client with no server names the socket it tried and the next move.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cli_harness import SKIFT, Cli
from serverproc import ServerProcess


def test_a_client_waits_for_a_server_that_is_starting_and_says_so(cli: Cli) -> None:
    sock_dir = Path(tempfile.mkdtemp(prefix="skift-start-", dir="/tmp"))
    sock = sock_dir / "skift.sock"
    # what `skift serve` leaves while its store opens: the marker with its pid
    (sock_dir / "skift.sock.starting").write_text(f"{os.getpid()}\n")
    env = cli.env(SKIFT_SERVER=f"unix://{sock}")
    client = subprocess.Popen(
        [str(SKIFT), "project", "list", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    server = ServerProcess("--memory", socket=sock)
    try:
        assert client.stderr is not None
        said = client.stderr.readline()  # the client says it waits before the server exists
        assert "waiting for the skift server" in said
        assert str(sock) in said
        asyncio.run(server.start())
        out, err = client.communicate(timeout=60)
        assert client.returncode == 0, err
        assert '"projects"' in out
    finally:
        client.kill()
        asyncio.run(server.stop())
        server.cleanup()


def test_without_a_server_the_error_names_the_socket_and_the_next_move(
    cli: Cli, tmp_path: Path
) -> None:
    sock = tmp_path / "nobody-here.sock"
    got = cli.run("ready", expect=4, SKIFT_SERVER=f"unix://{sock}")
    assert f"cannot reach the skift server at {sock}" in got.err
    assert "skift serve" in got.err  # the next move


def test_skift_mcp_help_names_skift_mcp(cli: Cli) -> None:
    got = cli.run("mcp", "--help")
    assert got.out.startswith("usage: skift mcp ")
    assert "--transport" in got.out
    # skift mcp runs the skift-mcp program: its misuse is the program's, named as skift mcp
    bad = cli.run("mcp", "--no-such-flag", expect=2)
    assert bad.err.startswith("usage: skift mcp ")
    # whatever the order of the global options (test_cli_surface's lines, as processes)
    server = "unix:///nonexistent/skift.sock"
    for line in (
        ["--json", "mcp", "--no-such-flag"],
        ["--server", server, "mcp", "--no-such-flag"],
        ["-p", "x", "--json", "--server", server, "mcp", "--no-such-flag"],
        ["mcp", "--no-such-flag", "--json"],
        ["mcp", "--json", "--server", server, "--no-such-flag"],
    ):
        bad = cli.run(*line, expect=2)
        assert "usage: skift mcp " in bad.err, line
    assert "--no-such-flag" in bad.err


def test_the_python_snippet_skift_serve_prints_runs_as_written(tmp_path: Path) -> None:
    """The banner's Python lines, pasted into a file, run; so does a connection made at
    module level and used inside ``asyncio.run`` (the channels open in the running loop)."""
    server = ServerProcess("--memory")
    try:
        asyncio.run(server.start())
        deadline = time.monotonic() + 30
        while "asyncio.run(main())" not in server.log() and time.monotonic() < deadline:
            time.sleep(0.1)
        banner = server.log().splitlines()
        start = banner.index("From Python:") + 1
        snippet = "\n".join(line[2:] for line in banner[start : start + 5])
        assert "skift_server.connect(" in snippet
        (tmp_path / "snippet.py").write_text(snippet + "\n")
        got = subprocess.run(
            [sys.executable, str(tmp_path / "snippet.py")], capture_output=True, text=True
        )
        assert got.returncode == 0, got.stderr
        assert "[]" in got.stdout
        module_level = (
            "import asyncio, skift_server\n"
            f'sk = skift_server.connect("{server.url}")\n'
            "async def main():\n"
            "    async with sk:\n"
            "        print(len(await sk.list_projects()))\n"
            "asyncio.run(main())\n"
        )
        got = subprocess.run([sys.executable, "-c", module_level], capture_output=True, text=True)
        assert got.returncode == 0, got.stderr
        assert got.stdout.strip() == "0"
    finally:
        asyncio.run(server.stop())
        server.cleanup()
