"""Waiting calls that ask the same read share it (``skift._session.LongPoll.read``).

A principal's identical waiting WatchEvents (the same cursor, filters and page size) wake
together and one read answers all that asked before it started: each still gets exactly
what its own read would have (the contract suite's change-stream tests, on every store),
and the store is read once a wake, not once per call.
"""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from typing import Any

import pytest

import skift
from skift._memory import MemoryTx  # pyright: ignore[reportPrivateUsage]


async def _head(sk: skift.LocalSkift) -> str:
    page = await sk.watch_events()
    while page.events:
        page = await sk.watch_events(after=page.cursor)
    return page.cursor


async def test_identical_waiting_watches_read_once_a_wake(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sixteen waiting watches from one cursor, for about a second and a half with nothing
    to deliver: a handful of reads in all (the first, a wake or two, the final one), where
    each reading for itself made 16 of each."""
    reads = 0
    real = MemoryTx.events_after

    async def counted(self: MemoryTx, *args: Any, **kw: Any) -> Any:
        nonlocal reads
        reads += 1
        return await real(self, *args, **kw)

    async with skift.open("memory:") as sk:
        await sk.create_project("Quiet")
        head = await _head(sk)
        monkeypatch.setattr(MemoryTx, "events_after", counted)
        started = time.monotonic()
        pages = await asyncio.gather(
            *(sk.watch_events(after=head, wait=timedelta(seconds=1.5)) for _ in range(16))
        )
        assert time.monotonic() - started >= 1.4
    assert all(p.events == () for p in pages)
    assert reads <= 8, f"{reads} reads for 16 identical waiting calls"


async def test_each_shared_waiter_gets_what_commits_and_its_own_filter() -> None:
    """Eight identical waiting watches each get the node created while they wait; a ninth,
    waiting beside them with another filter, is not answered from their read."""
    async with skift.open("memory:") as sk:
        p = await sk.create_project("Shared")
        head = await _head(sk)
        same = [
            asyncio.ensure_future(sk.watch_events(after=head, wait=timedelta(seconds=10)))
            for _ in range(8)
        ]
        holds = asyncio.ensure_future(
            sk.watch_events(after=head, ops=["hold"], wait=timedelta(seconds=1))
        )
        await asyncio.sleep(0.2)
        await sk.patch(p.slug, [skift.CreateNode(title="new")])
        pages = await asyncio.gather(*same)
        held = await holds
    assert {tuple((e.op, e.id) for e in page.events) for page in pages} == {
        (("create_node", pages[0].events[0].id),)
    }
    assert held.events == ()
