"""Webhook scenarios (docs/webhooks.md): what endpoints cost a write, and how soon a
commit reaches a receiver.

- write latency: one-node creates alternating between a project with no endpoint
  and one with 10, while ``skift serve`` delivers to a receiver that holds every
  request for 10 s (target: the 10-endpoint writes within 10% of the others);
- delivery lag: on an idle server, from a create returning (committed) to its
  delivery's POST arriving at a receiver on loopback (target: p50 under 100 ms).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator
from typing import Any

import skift

from ._env import Server, scratch
from ._stats import Result, pct, summary


class _Receiver:
    """An HTTP receiver on loopback: records when each request arrived, answers 204
    after ``delay`` seconds."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.arrivals: list[float] = []
        self.arrived = asyncio.Event()
        self.port = 0

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            headers: dict[str, str] = {}
            await reader.readline()
            while (h := await reader.readline()) not in (b"\r\n", b"\n", b""):
                k, _, v = h.decode().partition(":")
                headers[k.strip().lower()] = v.strip()
            await reader.readexactly(int(headers.get("content-length", "0")))
            self.arrivals.append(time.perf_counter())
            self.arrived.set()
            await asyncio.sleep(self.delay)
            writer.write(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncGenerator[str]:
        server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        try:
            yield f"http://127.0.0.1:{self.port}/hook"
        finally:
            server.close()


def _person(dsn: str) -> skift.LocalSkift:
    from skift_pg import PgStore

    limits = skift.Limits(webhook_allow_private=True)
    return skift.LocalSkift(
        PgStore(dsn, min_size=1, max_size=2), principal=skift.User("bench"), limits=limits
    )


async def scenarios(srv: Server, writes: int, deliveries: int, hold: float) -> list[Result]:
    """Both scenarios over one database and one ``skift serve``: the lag first (idle),
    then the write latency against the slow receiver."""
    from ._scenarios import serve

    fast, slow = _Receiver(), _Receiver(delay=hold)
    async with contextlib.AsyncExitStack() as stack:
        dsn = await stack.enter_async_context(scratch(srv, "webhooks"))
        fast_url = await stack.enter_async_context(fast.running())
        slow_url = await stack.enter_async_context(slow.running())
        sk = await stack.enter_async_context(_person(dsn))
        lag = await sk.create_project("Lag")
        await sk.add_webhook(lag.slug, fast_url)
        quiet = await sk.create_project("No endpoints")
        busy = await sk.create_project("Ten endpoints")
        for i in range(10):
            await sk.add_webhook(busy.slug, f"{slow_url}/{i}")
        await stack.enter_async_context(
            serve(dsn, "--webhook-allow-private", "--webhook-timeout", f"{hold + 5:g}s")
        )
        return [
            await _lag(sk, lag.slug, fast, deliveries),
            await _writes(sk, quiet.slug, busy.slug, slow, writes, hold),
        ]
    raise AssertionError("unreachable")


async def _writes(
    sk: skift.LocalSkift, quiet: str, busy: str, slow: _Receiver, writes: int, hold: float
) -> Result:
    times: dict[str, list[float]] = {quiet: [], busy: []}
    for i in range(writes + 4):
        for slug in (quiet, busy) if i % 2 else (busy, quiet):
            t0 = time.perf_counter()
            await sk.create(slug, f"write {i}")
            if i >= 4:  # warm-up
                times[slug].append(time.perf_counter() - t0)
    none, ten = summary(times[quiet]), summary(times[busy])
    return Result(
        "webhook",
        "write latency, 0 vs 10 endpoints",
        {
            "n": none["n"],
            "p50_ms_0": none["p50_ms"],
            "p50_ms_10": ten["p50_ms"],
            "mean_ms_0": none["mean_ms"],
            "mean_ms_10": ten["mean_ms"],
            "p50_ratio": round(ten["p50_ms"] / none["p50_ms"], 3),
            "requests_held": len(slow.arrivals),
        },
        f"one-node creates, alternating; the receiver holds every POST {hold:g} s "
        "(target ratio <= 1.10)",
    )


async def _lag(sk: skift.LocalSkift, slug: str, fast: _Receiver, deliveries: int) -> Result:
    lags: list[float] = []
    for i in range(deliveries + 2):
        fast.arrived.clear()
        before = len(fast.arrivals)
        await sk.create(slug, f"write {i}")
        committed = time.perf_counter()
        await asyncio.wait_for(fast.arrived.wait(), 30)
        if i >= 2 and len(fast.arrivals) > before:  # warm-up
            lags.append(fast.arrivals[before] - committed)
        await asyncio.sleep(0.2)  # idle between writes
    ms = [x * 1000 for x in lags]
    metrics: dict[str, Any] = {
        "n": len(ms),
        "p50_ms": round(pct(ms, 50), 2),
        "p95_ms": round(pct(ms, 95), 2),
        "max_ms": round(max(ms), 2) if ms else float("nan"),
    }
    return Result(
        "webhook",
        "delivery lag, commit to POST",
        metrics,
        "idle server, one endpoint, PostgreSQL NOTIFY wake-up (target p50 < 100 ms)",
    )
