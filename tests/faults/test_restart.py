"""A server restart is a pause to its clients, not an error (issue 17 point 7).

A real ``skift serve`` over PostgreSQL is killed with SIGKILL and a new one is
started on the same socket a few seconds later:

- calls that are safe to retry (reads, heartbeats, writes carrying a request id,
  now including hold, unhold and focus) wait the restart out: the client's retry
  window outlasts it;
- ``skift events --follow`` (the installed CLI, as a process) waits and resumes
  after its cursor: every event once, none missed, even when the outage outlasts
  the client's retry window (``SKIFT_RETRY_WINDOW``);
- a server that was never reached is still reported at once.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from serverproc import ServerProcess

import skift
import skift_server

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

SKIFT = Path(sys.executable).parent / "skift"
RESTART_PAUSE = 3.0  # seconds between the kill and the new server's start


@pytest.fixture
async def first(pg_dsn: str) -> AsyncIterator[ServerProcess]:
    server = ServerProcess("--dsn", pg_dsn, "--sweep-every", "0")
    try:
        yield await server.start()
    finally:
        server.cleanup()


async def _restart(server: ServerProcess, pg_dsn: str, pause: float) -> ServerProcess:
    """SIGKILL ``server``, wait ``pause`` seconds, serve the same database on its socket."""
    os.kill(server.pid, signal.SIGKILL)
    await server.stop()  # waits for the exit the kill caused
    await asyncio.sleep(pause)
    again = ServerProcess("--dsn", pg_dsn, "--sweep-every", "0", socket=server.socket)
    return await again.start()


async def test_safe_calls_wait_out_a_restart(first: ServerProcess, pg_dsn: str) -> None:
    async with skift_server.connect(first.url) as sk:
        slug = (await sk.create_project("Restart")).slug
        await sk.patch(slug, [skift.CreateNode(title=f"n{i}") for i in range(4)])
        claim = await sk.claim(f"{slug}#1", ttl=None)
        restarting = asyncio.create_task(_restart(first, pg_dsn, RESTART_PAUSE))
        await asyncio.sleep(0.2)  # the server is down now
        started = time.monotonic()
        try:
            # every one of these is safe to send again; each waits for the new server
            done = await sk.complete(f"{slug}#1", lease=claim.lease.id, result="ok")
            held = await sk.hold(f"{slug}#2", reason="wait")
            focus = await sk.focus(["#3"], reason="this week", project=slug)
            page = await sk.ready(projects=[slug])
        finally:
            second = await restarting
        try:
            assert time.monotonic() - started >= RESTART_PAUSE - 0.5
            assert done.nodes[0].status is skift.Status.DONE
            assert held.nodes[0].held
            assert focus.held == (f"{slug}#4",)
            assert [n.ref for n in page.nodes] == [f"{slug}#3"]
            assert "Traceback" not in second.log()
        finally:
            assert await second.stop() == 0
            second.cleanup()


async def test_a_server_never_reached_is_said_at_once(tmp_path: Path) -> None:
    started = time.monotonic()
    async with skift_server.connect(f"unix://{tmp_path}/none.sock") as sk:
        with pytest.raises(skift.Unavailable):
            await sk.ready()
    assert time.monotonic() - started < 3.0


async def test_events_follow_resumes_after_a_restart(first: ServerProcess, pg_dsn: str) -> None:
    async with skift_server.connect(first.url) as sk:
        slug = (await sk.create_project("Watched")).slug
    env = {
        **os.environ,
        "SKIFT_SERVER": first.url,
        "NO_COLOR": "1",
        "XDG_CONFIG_HOME": str(first.dir / "config"),
        # the client alone would wait out this restart; a window shorter than it makes
        # the watcher's own wait-and-resume do the work (an outage longer than 20 s)
        "SKIFT_RETRY_WINDOW": "0.5",
    }
    watcher = subprocess.Popen(  # noqa: ASYNC220 (read below without blocking the loop)
        [str(SKIFT), "events", "--follow", "--from-start", "--json", "-p", slug],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert watcher.stdout is not None
    loop = asyncio.get_running_loop()
    seen: list[dict[str, object]] = []

    async def read_until(count: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while sum(1 for e in seen if e["op"] == "create_node") < count:
            left = deadline - time.monotonic()
            assert left > 0, f"saw {len(seen)} events; stderr: {watcher.stderr}"
            line = await asyncio.wait_for(loop.run_in_executor(None, watcher.stdout.readline), left)  # type: ignore[union-attr]
            assert line, (
                f"skift events --follow ended with {watcher.wait()}: {watcher.stderr.read()!r}"
            )  # type: ignore[union-attr]
            seen.append(json.loads(line))

    second: ServerProcess | None = None
    try:
        async with skift_server.connect(first.url) as sk:
            await sk.patch(slug, [skift.CreateNode(title=f"before {i}") for i in range(3)])
        await read_until(3, 30)
        second = await _restart(first, pg_dsn, RESTART_PAUSE)
        async with skift_server.connect(second.url) as sk:
            await sk.patch(slug, [skift.CreateNode(title=f"after {i}") for i in range(3)])
        await read_until(6, 60)
        assert watcher.poll() is None, "the watcher exited on the restart"
        ids = [e["id"] for e in seen]
        assert len(ids) == len(set(ids)), "an event was printed twice"
        titles = [
            e["after"]["title"]  # type: ignore[index]
            for e in seen
            if e["op"] == "create_node"
        ]
        assert titles == [f"before {i}" for i in range(3)] + [f"after {i}" for i in range(3)]
    finally:
        watcher.kill()
        watcher.communicate()
        if second is not None:
            assert await second.stop() == 0
            second.cleanup()
