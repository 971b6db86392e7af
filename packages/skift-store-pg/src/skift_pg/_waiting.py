"""A connection's waits for PostgreSQL without a timer on the event loop for each.

psycopg's ``wait_async`` arms ``loop.call_later(0.1, ...)`` for every wait and cancels it
when the socket answers: a ``TimerHandle`` made, pushed onto the loop's heap, cancelled and
later popped or swept, each a few dozen comparisons in Python on a heap that holds every
cancelled timer of the last tenth of a second (~5 waits a call, ~100 Python calls a GetNode
in ``skift serve``). With no timeout the timer only wakes the loop to send the generator
"nothing ready" and wait again; an asyncio task is interrupted by cancellation, which
reaches the wait's future whether or not a timer is armed. :func:`wait_untimed` is psycopg
3.3's ``wait_async`` without that timer (and without a timeout); an interrupted wait is
handed back to psycopg's own handling (:class:`Interrupted`: the query cancelled on the
server and drained, as ``AsyncConnection.wait`` does). tests/pg/test_waiting.py pins the
psycopg code this stands for.
"""

from __future__ import annotations

import asyncio
from asyncio import Future, get_running_loop
from time import monotonic
from typing import Any, TypeVar

from psycopg import errors as e
from psycopg import waiting
from psycopg.abc import PQGen
from psycopg.waiting import READY_R, READY_W, WAIT_R, WAIT_W, Ready

__all__ = ["Interrupted", "wait_untimed"]

RV = TypeVar("RV")


async def wait_untimed(gen: PQGen[RV], fileno: int) -> RV:
    """``psycopg.waiting.wait_async(gen, fileno)`` (no timeout) without its timer."""
    try:
        s = next(gen)
    except StopIteration as ex:
        rv: RV = ex.value
        if monotonic() - waiting._last_yield >= waiting.MAX_BUSY_TIME:  # pyright: ignore[reportPrivateUsage]
            await asyncio.sleep(0)
            waiting._last_yield = monotonic()  # pyright: ignore[reportPrivateUsage]
        return rv

    loop = get_running_loop()
    ready = 0
    fut: Future[None] | None = None

    def wakeup(state: Ready) -> None:
        nonlocal ready
        ready |= state
        if fut is not None and not fut.done():
            fut.set_result(None)

    try:
        while True:
            reader = s & WAIT_R
            writer = s & WAIT_W
            if not (reader or writer):
                raise e.InternalError(f"bad poll status: {s}")
            if writer:
                if monotonic() - waiting._last_yield >= waiting.MAX_BUSY_TIME:  # pyright: ignore[reportPrivateUsage]
                    await asyncio.sleep(0)
                    waiting._last_yield = monotonic()  # pyright: ignore[reportPrivateUsage]
                if ready := waiting._ready(fileno, s):  # pyright: ignore[reportPrivateUsage]
                    s = gen.send(ready)
                    continue
            ready = 0
            if reader:
                loop.add_reader(fileno, wakeup, READY_R)
            if writer:
                loop.add_writer(fileno, wakeup, READY_W)
            try:
                fut = loop.create_future()
                try:
                    await fut
                finally:
                    fut = None
                    waiting._last_yield = monotonic()  # pyright: ignore[reportPrivateUsage]
            finally:
                if reader:
                    loop.remove_reader(fileno)
                if writer:
                    loop.remove_writer(fileno)
            s = gen.send(ready)
    except OSError as ex:
        raise e.OperationalError("connection socket closed") from ex
    except StopIteration as ex:
        rv = ex.value
        return rv


class Interrupted:
    """The generator of a wait that was interrupted, for psycopg's handling of it: the
    interruption raised at its first step (where psycopg's own wait raised it), then the
    generator itself, which psycopg drains after cancelling the query."""

    def __init__(self, gen: PQGen[Any], exc: BaseException) -> None:
        self._gen = gen
        self._exc: BaseException | None = exc

    def __iter__(self) -> Interrupted:
        return self

    def __next__(self) -> Any:
        exc, self._exc = self._exc, None
        if exc is not None:
            raise exc
        return next(self._gen)

    def send(self, value: Any) -> Any:
        return self._gen.send(value)
