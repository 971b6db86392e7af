"""The web board's pages at 10k nodes: what a person waits for when a page loads.

A graph of about ``size`` nodes in one project (the worst case for a
project's page; Ready spans it and the chain project) is loaded, a real
``skift serve --http`` serves it in another process, a person signs in with
a one-time code as a browser would (POST /signin, the session cookie), and
each page is fetched over HTTP again and again: the server's whole work for
the page (session lookup, the API reads as that person, rendering) plus the
loopback round trip. The goal (issue 21): Ready and Project under 150 ms p50.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

import skift

from . import _graph
from ._env import Server, scratch
from ._scenarios import _client, _size_label, _spawn  # pyright: ignore[reportPrivateUsage]
from ._stats import Result, summary, timed

GOAL_MS = 150.0


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def board_pages(srv: Server, size: int, iters: int) -> list[Result]:
    label = _size_label(size)
    out: list[Result] = []
    async with scratch(srv, f"board_{label.lower()}") as dsn:
        g = await asyncio.to_thread(_graph.load, dsn, size=size, projects=1)
        slug = g.projects[0]
        async with _client(dsn, skift.User(_graph.USER)) as user:
            code = (await user.mint_signin_code()).code
            node = (await user.list_nodes(projects=[slug], limit=1)).nodes[0]
        folder = Path(tempfile.mkdtemp(prefix="skift-bench-board-", dir="/tmp"))
        port = _free_port()
        log = (folder / "serve.log").open("wb")
        argv = [sys.executable, "-m", "skift_server", "serve", "--dsn", dsn,
                "--socket", str(folder / "s.sock"), "--http", f"127.0.0.1:{port}"]  # fmt: skip
        proc = _spawn(argv, log)
        base = f"http://127.0.0.1:{port}"
        try:
            async with httpx.AsyncClient(base_url=base, timeout=30) as http:
                deadline = time.monotonic() + 60
                while True:
                    try:
                        if (await http.get("/healthz")).status_code == 200:
                            break
                    except httpx.TransportError:
                        pass
                    if proc.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError((folder / "serve.log").read_text(errors="replace"))
                    await asyncio.sleep(0.1)
                signin = await http.post("/signin", data={"code": code}, headers={"origin": base})
                assert signin.status_code == 303, signin.text
                pages = {
                    "ready": "/ready",
                    "project": f"/p/{slug}",
                    "waiting on me": "/",
                    "node": "/n/" + node.ref.replace("#", "/"),
                }
                for name, path in pages.items():

                    async def get(path: str = path) -> None:
                        got = await http.get(path)
                        assert got.status_code == 200, (path, got.status_code)

                    first = await http.get(path)
                    s = summary(await timed(get, iters))
                    s["kb"] = round(len(first.content) / 1024, 1)
                    if name in ("ready", "project"):
                        s["goal_ms"] = GOAL_MS
                        s["met"] = s["p50_ms"] < GOAL_MS
                    note = "HTTP GET, signed in; server in another process"
                    if name == "project":
                        note += f" ({g.nodes} nodes in the project, first page of 200)"
                    out.append(Result("board", f"{label} {name} page", s, note))
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.close()
    return out
