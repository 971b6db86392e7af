"""The ``adversary`` scenario (issue 29): a bystander's reads, quiet and under each attack.

One ``skift serve`` (``tests/adversary/adversary_harness.start_target``: a fresh
database, gRPC on TCP, HTTP); a person of another organization reads
ListProjects every 50 ms from a process of its own. Its p50/p95 is measured
quiet, then while each attack of the adversary suite runs, then quiet again,
all in this one run: the figures are ratios to the quiet run beside them,
never absolute claims. The goal: within 2x of the quiet p95.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from ._env import ROOT, Server, scratch
from ._stats import Result

sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "adversary")]

import adversary_harness as ah  # noqa: E402

QUIET_SECONDS = 8.0


def _attacks(t: Any) -> list[tuple[str, Callable[[], Awaitable[Any]]]]:
    preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
    open_block = b"\x00\x00\x01\x01\x00\x00\x00\x00\x01\x82"
    out: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
        ("rapid reset: 20,000 HEADERS+RST_STREAM", lambda: ah.rapid_reset(t.grpc_port)),
        (
            "500 connections without a preface",
            lambda: ah.silent_connections(t.grpc_port, count=500, wait=8),
        ),
        (
            "100 connections inside a header block",
            lambda: ah.silent_connections(
                t.grpc_port, count=100, send=preface + open_block, wait=8
            ),
        ),
        (
            "200 HTTP requests without the end of their head",
            lambda: ah.silent_connections(
                t.http_port, count=200, send=b"GET / HTTP/1.1\r\nhost: x\r\n", wait=8
            ),
        ),
        ("1,000 WatchEvents + 200 ClaimNext from one token", lambda: ah.long_poll_flood(t)),
        ("one 4.1 MB Patch with no token", lambda: ah.no_token_patch(t.grpc_port)),
    ]
    extra = getattr(ah, "EXTRA_ATTACKS", None)  # attacks other modules add
    if extra:
        out += [(name, (lambda f=f: f(t))) for name, f in extra]
    return out


async def _quiet(t: Any, seconds: float) -> ah.Stats:
    async with ah.Bystander(t) as b:
        await asyncio.sleep(seconds)
    return b.stats()


def _row(case: str, s: ah.Stats, quiet: ah.Stats, extra: dict[str, Any]) -> Result:
    metrics: dict[str, Any] = {
        "n": s.n,
        "p50_ms": round(s.p50 * 1000, 1),
        "p95_ms": round(s.p95 * 1000, 1),
        "p95_vs_quiet": round(s.p95 / quiet.p95, 2) if quiet.p95 else None,
        "statuses": dict(s.statuses),
        **extra,
    }
    return Result("adversary", case, metrics, "bystander ListProjects; goal p95 within 2x quiet")


async def scenario(srv: Server, *, smoke: bool = False) -> list[Result]:
    """``smoke``: a short quiet run and the first attack only (tests the harness)."""
    async with scratch(srv, "adversary") as dsn:
        t = await ah.start_target(dsn)
        try:
            seconds = 2.0 if smoke else QUIET_SECONDS
            quiet = await _quiet(t, seconds)
            results = [_row("quiet (before)", quiet, quiet, {})]
            for name, attack in _attacks(t)[: 1 if smoke else None]:
                got, stats = await ah.while_watched(t, attack)
                shown = {k: v for k, v in dict(got).items() if k != "a_reply"} if got else {}
                results.append(_row(name, stats, quiet, {"attack": str(shown)[:200]}))
            after = await _quiet(t, seconds)
            results.append(_row("quiet (after)", after, quiet, {}))
        finally:
            await ah.stop_target(t)
    return results
