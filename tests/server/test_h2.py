"""HTTP/2 connections gather one event-loop turn's writes into one (skift_server._h2)."""

from __future__ import annotations

import asyncio
from typing import Any

from skift_server._h2 import GatheringTransport


class Recorder:
    """A transport that records each write it is handed."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False
        self.aborted = False

    def write(self, data: bytes) -> None:
        assert not self.closed
        self.writes.append(data)

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return f"info:{name}"


async def test_one_turns_writes_leave_as_one_in_order() -> None:
    raw = Recorder()
    t = GatheringTransport(raw)
    t.write(b"headers")
    t.write(b"")
    t.write(b"data")
    t.write(b"trailers")
    assert raw.writes == []  # nothing before the turn ends
    await asyncio.sleep(0)
    assert raw.writes == [b"headersdatatrailers"]
    t.write(b"next")
    await asyncio.sleep(0)
    assert raw.writes == [b"headersdatatrailers", b"next"]
    assert t.get_extra_info("socket") == "info:socket"  # the rest is the transport's


async def test_closing_sends_what_was_gathered_first() -> None:
    raw = Recorder()
    t = GatheringTransport(raw)
    t.write(b"goaway")
    t.close()
    assert raw.writes == [b"goaway"]
    assert raw.closed
    await asyncio.sleep(0)
    assert raw.writes == [b"goaway"]  # the scheduled flush finds nothing left


async def test_abort_drops_what_was_gathered() -> None:
    raw = Recorder()
    t = GatheringTransport(raw)
    t.write(b"lost")
    t.abort()
    await asyncio.sleep(0)
    assert raw.writes == []
    assert raw.aborted


class Waiter:
    """A busy connection's stand-in: ``frames`` waiting, ``per_turn`` taken per turn."""

    def __init__(self, share: Any, frames: int, per_turn: int, log: list[str], name: str) -> None:
        self.share, self.frames, self.per_turn, self.log, self.name = (
            share,
            frames,
            per_turn,
            log,
            name,
        )

    def resume_turn(self) -> None:
        took = min(self.per_turn, self.share.left, self.frames)
        self.share.spend(took)
        self.frames -= took
        self.log.append(f"{self.name}{took}")
        if self.frames:
            self.share.wait(self)


async def test_busy_connections_share_each_turn_in_turn() -> None:
    from skift_server._turns import TurnShare

    share = TurnShare(4)
    log: list[str] = []
    a = Waiter(share, 6, 2, log, "a")
    b = Waiter(share, 2, 2, log, "b")
    c = Waiter(share, 4, 2, log, "c")
    share.spend(4)  # this turn's allowance is gone: they wait for the next turns
    for w in (a, b, c):
        share.wait(w)
    await asyncio.sleep(0)
    assert log == ["a2", "b2"]  # 4 frames a turn, first come first served
    await asyncio.sleep(0)
    assert log == ["a2", "b2", "c2", "a2"]
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert log == ["a2", "b2", "c2", "a2", "c2", "a2"]
    assert not share.queue


async def test_a_partys_connections_are_light_together() -> None:
    """One identity's connections share one connection's light frames a turn, and while one
    of them waits its turn they are all busy; another identity's are not held up by them."""
    from skift_server._turns import TurnShare

    share = TurnShare(4)
    a, b = ("token", "a"), ("token", "b")
    assert share.light_left(a, 16) == 16
    share.spend_light(a, 10)
    assert share.light_left(a, 16) == 6  # its other connections share the rest this turn
    assert share.light_left(b, 16) == 16
    assert share.light_left(None, 16) == 16  # identity not known yet: a party of its own
    share.party_waits(a, True)
    share.party_waits(a, True)
    assert share.light_left(a, 16) == 0  # one of its connections waits: all of them are busy
    share.party_waits(a, False)
    assert share.light_left(a, 16) == 0
    share.party_waits(a, False)
    assert share.light_left(a, 16) == 6
    await asyncio.sleep(0)  # the next turn
    assert share.light_left(a, 16) == 16
    assert share.light_left(b, 16) == 16
