"""The ``adversary`` scenario (issue 29): a bystander's reads, quiet and under each attack.

One ``skift serve`` (``tests/adversary/adversary_harness.start_target``: a fresh
database, gRPC on TCP, HTTP); a person of another organization reads
ListProjects every 50 ms from a process of its own. Its p50/p95 is measured
quiet, then while each attack of the adversary suite runs, in :data:`ROUNDS`
rounds in this one run: the figures are ratios to the quiet runs beside them
(the pooled p95 over the pooled quiet p95, and the median of each round's
ratio), never absolute claims. The goal: within 2x of the quiet p95.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

from ._env import ROOT, Server, scratch
from ._stats import Result

sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "adversary")]

import adversary_harness as ah  # noqa: E402

QUIET_SECONDS = 6.0
ROUNDS = 3


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


def _pooled(stats: list[ah.Stats]) -> ah.Stats:
    return ah.Stats(
        tuple(x for s in stats for x in s.latencies), sum((s.statuses for s in stats), Counter())
    )


def _row(case: str, runs: list[ah.Stats], quiet: list[ah.Stats], extra: dict[str, Any]) -> Result:
    """One attack over every round: the bystander's pooled p50/p95, the pooled p95 over the
    pooled quiet p95, and the median of each round's p95 over that round's quiet p95."""
    s, q = _pooled(runs), _pooled(quiet)
    per_round = [r.p95 / qr.p95 for r, qr in zip(runs, quiet, strict=True) if qr.p95]
    metrics: dict[str, Any] = {
        "n": s.n,
        "p50_ms": round(s.p50 * 1000, 1),
        "p95_ms": round(s.p95 * 1000, 1),
        "p95_vs_quiet": round(s.p95 / q.p95, 2) if q.p95 else None,
        "median_round_ratio": round(statistics.median(per_round), 2) if per_round else None,
        "round_ratios": [round(x, 2) for x in per_round],
        "statuses": dict(s.statuses),
        **extra,
    }
    return Result("adversary", case, metrics, "bystander ListProjects; goal p95 within 2x quiet")


async def scenario(srv: Server, *, smoke: bool = False, rounds: int = ROUNDS) -> list[Result]:
    """``rounds`` rounds, each a quiet run then every attack; ``smoke``: one short round
    with the first attack only (tests the harness)."""
    async with scratch(srv, "adversary") as dsn:
        t = await ah.start_target(dsn)
        try:
            seconds = 2.0 if smoke else QUIET_SECONDS
            attacks = _attacks(t)[: 1 if smoke else None]
            quiet: list[ah.Stats] = []
            runs: dict[str, list[ah.Stats]] = {name: [] for name, _ in attacks}
            shown: dict[str, str] = {}
            for _ in range(1 if smoke else rounds):
                quiet.append(await _quiet(t, seconds))
                for name, attack in attacks:
                    got, stats = await ah.while_watched(t, attack)
                    runs[name].append(stats)
                    answer = {k: v for k, v in dict(got).items() if k != "a_reply"} if got else {}
                    shown[name] = str(answer)[:200]
            results = [_row("quiet", quiet, quiet, {})]
            for name, _ in attacks:
                results.append(_row(name, runs[name], quiet, {"attack (last round)": shown[name]}))
        finally:
            await ah.stop_target(t)
    return results
