"""``skift-mcp`` start-up as an agent harness sees it: a new process per session, over stdio.

The harness spawns ``skift-mcp``, writes ``initialize`` at once and waits for
the answer, then lists the tools; the agent's first tool call comes later.
Each run measures, from the spawn: the ``initialize`` answer, the
``tools/list`` answer, and the answer to a first ``ready`` call (a real
round trip to ``skift serve``). Plain JSON-RPC lines, so the harness side
costs nothing to import.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

from ._stats import Result, summary

RUNS = 7  # the first warms the OS file cache and writes bytecode; it is dropped


def _rpc(stdin: IO[bytes], stdout: IO[bytes], msg: dict[str, Any]) -> dict[str, Any] | None:
    stdin.write((json.dumps(msg) + "\n").encode())
    stdin.flush()
    if "id" not in msg:
        return None
    while True:
        line = stdout.readline()
        if not line:
            raise RuntimeError("skift-mcp closed its output")
        answer = json.loads(line)
        if answer.get("id") == msg["id"]:
            return answer


def session_timings(argv: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """Seconds from the spawn to the initialize, tools/list and first tools/call answers."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    try:
        init = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"},
        }
        got = _rpc(
            proc.stdin,
            proc.stdout,
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
        )
        t_init = time.perf_counter() - t0
        assert got is not None, "no answer"
        assert "result" in got, got
        _rpc(proc.stdin, proc.stdout, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        got = _rpc(proc.stdin, proc.stdout, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        t_list = time.perf_counter() - t0
        assert got is not None, "no answer"
        assert got["result"]["tools"], got
        call: dict[str, Any] = {"name": "ready", "arguments": {}}
        got = _rpc(
            proc.stdin,
            proc.stdout,
            {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call},
        )
        t_call = time.perf_counter() - t0
        assert got is not None, "no answer"
        assert not got["result"].get("isError"), got
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    return t_init, t_list, t_call


def mcp_startup(server_url: str | None = None, runs: int = RUNS) -> list[Result]:
    """``skift-mcp`` over stdio as a new process: initialize, tools/list and a first call
    (``runs`` sessions, the first a warm-up left out)."""
    exe = Path(sys.executable).with_name("skift-mcp")
    if not exe.exists():
        return [Result("mcp", "skift-mcp initialize", {}, "skipped: no skift-mcp command")]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory() as d:
        server: subprocess.Popen[bytes] | None = None
        note = "new process, stdio; skift serve over the unix socket"
        if server_url is None:
            sock = Path(d) / "skift.sock"
            serve = Path(sys.executable).with_name("skift")
            server = subprocess.Popen(
                [str(serve), "serve", "--memory", "--socket", str(sock)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env={**env, "HOME": d, "XDG_STATE_HOME": d},
            )
            deadline = time.monotonic() + 60
            while not sock.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            server_url = f"unix://{sock}"
            note += " (an in-memory skift serve)"
        try:
            argv = [str(exe), "--server", server_url]
            runs = [session_timings(argv, env) for _ in range(max(2, runs))][1:]
        finally:
            if server is not None:
                server.terminate()
                server.wait(timeout=60)
    return [
        Result("mcp", "skift-mcp initialize", summary([r[0] for r in runs]), note),
        Result("mcp", "skift-mcp tools/list", summary([r[1] for r in runs]), "from the spawn"),
        Result(
            "mcp", "skift-mcp first call", summary([r[2] for r in runs]), "ready, from the spawn"
        ),
    ]


if __name__ == "__main__":
    for r in mcp_startup(sys.argv[1] if len(sys.argv) > 1 else None):
        print(r.case, r.metrics, r.note)
