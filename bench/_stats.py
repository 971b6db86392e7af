"""Timing helpers and the result records every scenario returns."""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any


def pct(samples: list[float], q: float) -> float:
    """The q-th percentile (0..100) of samples, nearest-rank."""
    if not samples:
        return float("nan")
    ordered = sorted(samples)
    k = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[k]


def summary(seconds: list[float]) -> dict[str, float]:
    """p50/p95/mean in milliseconds."""
    ms = [s * 1000 for s in seconds]
    return {
        "n": len(ms),
        "p50_ms": round(pct(ms, 50), 3),
        "p95_ms": round(pct(ms, 95), 3),
        "mean_ms": round(statistics.fmean(ms), 3) if ms else float("nan"),
    }


async def timed(fn: Callable[[], Awaitable[Any]], n: int, *, warmup: int = 2) -> list[float]:
    """Run fn n times after a warm-up; the wall time of each call in seconds."""
    for _ in range(warmup):
        await fn()
    out: list[float] = []
    for _ in range(n):
        t0 = time.perf_counter()
        await fn()
        out.append(time.perf_counter() - t0)
    return out


async def timed_pair(
    a: Callable[[], Awaitable[Any]],
    b: Callable[[], Awaitable[Any]],
    n: int,
    *,
    warmup: int = 2,
) -> tuple[list[float], list[float]]:
    """Run ``a`` and ``b`` n times each, interleaved (a b, then b a, ...) after a warm-up of
    both: the wall time of each call, in seconds. Two calls compared side by side this way
    see the same machine (its speed drifts within a minute here), where n of one then n
    of the other put the drift between them into their difference."""
    for _ in range(warmup):
        await a()
        await b()
    out_a: list[float] = []
    out_b: list[float] = []
    for i in range(n):
        for fn, out in ((a, out_a), (b, out_b)) if i % 2 == 0 else ((b, out_b), (a, out_a)):
            t0 = time.perf_counter()
            await fn()
            out.append(time.perf_counter() - t0)
    return out_a, out_b


@dataclass
class Result:
    """One row of the table: a scenario, a case, and what was measured."""

    scenario: str
    case: str
    metrics: dict[str, Any] = field(default_factory=lambda: dict[str, Any]())
    note: str = ""

    def as_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "case": self.case,
            "metrics": self.metrics,
            "note": self.note,
        }
