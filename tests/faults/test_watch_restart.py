"""A watcher on the change stream across a kill -9 of the server and a new one on the
same socket: it resumes from its cursor and sees every event exactly once, in order
(issue 17, fault suite). The watcher is the library's own loop over
``watch_events`` (what ``skift events --follow`` runs), retrying Unavailable with
the cursor it holds."""

from __future__ import annotations

import asyncio
import os
import signal
from datetime import timedelta
from typing import TYPE_CHECKING

import pytest
from faultload import all_events

import skift
import skift_server

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from serverproc import ServerProcess

pytestmark = pytest.mark.pg

PATCHES = 40


async def watch(url: str, seen: list[str], stop: asyncio.Event, restarts: list[int]) -> None:
    cursor: str | None = None
    async with skift_server.connect(url, principal=skift.User("ada"), attempts=1) as sk:
        while not stop.is_set():
            try:
                page = await sk.watch_events(after=cursor, wait=timedelta(seconds=0.5))
            except skift.Unavailable:
                restarts.append(len(seen))
                await asyncio.sleep(0.05)
                continue
            seen.extend(e.id for e in page.events)
            cursor = page.cursor


async def write(url: str, written: list[str]) -> None:
    async with skift_server.connect(url, principal=skift.User("ada"), attempts=80) as sk:
        for i in range(PATCHES):
            ops = [skift.CreateNode(title=f"p{i} n{k}") for k in range(3)]
            await sk.patch("watch", ops, request_id=f"watch-{i}")
            written.append(f"watch-{i}")
            await asyncio.sleep(0.02)


async def test_a_watcher_across_a_server_kill_sees_every_event_once(
    fault_dsn: str, servers: Callable[..., Awaitable[ServerProcess]]
) -> None:
    flags = ("--dsn", fault_dsn, "--test-hooks")
    server = await servers(*flags)
    async with skift_server.connect(server.url, principal=skift.User("ada")) as sk:
        await sk.create_project("Watch")
    seen: list[str] = []
    written: list[str] = []
    restarts: list[int] = []
    stop = asyncio.Event()
    watcher = asyncio.create_task(watch(server.url, seen, stop, restarts))
    writer = asyncio.create_task(write(server.url, written))
    while len(written) < PATCHES // 3:
        await asyncio.sleep(0.01)
        assert not writer.done(), writer.exception()
    os.kill(server.pid, signal.SIGKILL)
    await asyncio.sleep(0.3)
    again = await servers(*flags, socket=server.socket)
    await asyncio.wait_for(writer, 120)
    async with skift_server.connect(again.url, principal=skift.User("ada")) as sk:
        every = [e.id for e in await all_events(sk)]
        while len(seen) < len(every):
            await asyncio.sleep(0.05)
            assert not watcher.done(), watcher.exception()
        await asyncio.sleep(0.6)  # a duplicate would arrive now
    stop.set()
    await asyncio.wait_for(watcher, 10)
    print(f"{len(every)} events; the watcher met Unavailable {len(restarts)} times")
    assert restarts, "the watcher never noticed the kill"
    assert len(every) == 1 + PATCHES * 3
    assert len(seen) == len(set(seen)), "an event was delivered twice"
    assert seen == every, "the watcher missed events or saw them out of order"
