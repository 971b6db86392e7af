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
