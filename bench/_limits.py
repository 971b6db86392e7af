"""The ``limits`` scenario (issue 29's measure): claim + complete and Ready through
``skift serve`` with its connection limits on (the defaults) and loosened past reach.

"Off" is not a configuration of ``skift serve``: authentication before the body,
decoding large messages off the loop and the one long-poll listener are how it
works, not limits. What the flags bound is set past anything a run reaches
(:data:`LOOSE`): streams per connection, the reset rate, the timeouts, the
unauthenticated window, frames per turn, long polls per principal. Two servers over one graph, each called over its unix socket
as the owner, in interleaved rounds (on, off, off, on, ...): the ratio on/off of
each round's figures, and their median.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any, Final

from . import _graph, _scenarios
from ._env import Server, scratch
from ._stats import Result, pct

LOOSE: Final = (
    "--max-concurrent-streams", "100000",
    "--stream-reset-burst", "1000000000",
    "--stream-resets-per-second", "1000000000",
    "--preface-timeout", "100000",
    "--header-timeout", "100000",
    "--idle-timeout", "100000",
    "--max-header-bytes", "1048576",
    "--unauthenticated-body-bytes", "4194309",
    "--frames-per-turn", "1000000",
    "--busy-frames-per-turn", "1000000",
    "--limit", "long_polls_per_principal=1000000",
)  # fmt: skip
"""``skift serve`` flags that put every connection limit past anything the bench reaches."""


async def _ready(remote: Any, n: int) -> list[float]:
    out: list[float] = []
    for _ in range(n):
        t0 = time.perf_counter()
        await remote.ready(limit=50)
        out.append(time.perf_counter() - t0)
    return out


async def _claims(remote: Any, workers: int, pairs: int) -> tuple[float, list[float]]:
    """``workers`` loops of claim + complete, ``pairs`` in all: pairs a second, each pair's time."""
    left = [pairs]
    times: list[float] = []

    async def work() -> None:
        while left[0] > 0:
            left[0] -= 1
            t0 = time.perf_counter()
            c = await remote.claim_next()
            await remote.complete(c.node.ref, lease=c.lease.id)
            times.append(time.perf_counter() - t0)

    t0 = time.perf_counter()
    await asyncio.gather(*(work() for _ in range(workers)))
    return pairs / (time.perf_counter() - t0), times


async def scenario(srv: Server, *, smoke: bool = False) -> list[Result]:
    rounds, ready_n, pairs, workers = (1, 3, 4, 2) if smoke else (10, 20, 40, 4)
    size = 10 * rounds * pairs * 2 + 1000
    async with scratch(srv, "limits") as dsn:
        await asyncio.to_thread(_graph.load, dsn, size=size, projects=20, chain=0, pool=True)
        async with (
            _scenarios.serve(dsn) as (on, _),
            _scenarios.serve(dsn, *LOOSE) as (off, _),
        ):
            got: dict[str, dict[str, list[float]]] = {
                k: {"ready_p50": [], "pairs_per_s": [], "pair_p50": []} for k in ("on", "off")
            }
            for remote in (on, off):  # warm both (connections, caches)
                await _ready(remote, 3)
                await _claims(remote, workers, workers)
            for r in range(rounds):
                order = (("on", on), ("off", off)) if r % 2 == 0 else (("off", off), ("on", on))
                for name, remote in order:
                    ready = await _ready(remote, ready_n)
                    rate, times = await _claims(remote, workers, pairs)
                    got[name]["ready_p50"].append(pct(ready, 50) * 1000)
                    got[name]["pairs_per_s"].append(rate)
                    got[name]["pair_p50"].append(pct(times, 50) * 1000)
    out: list[Result] = []
    for name in ("on", "off"):
        g = got[name]
        out.append(
            Result(
                "limits",
                f"limits {name}",
                {
                    "ready_p50_ms": round(statistics.median(g["ready_p50"]), 2),
                    "pairs_per_s": round(statistics.median(g["pairs_per_s"]), 1),
                    "pair_p50_ms": round(statistics.median(g["pair_p50"]), 2),
                },
                f"median of {rounds} interleaved rounds; {workers} claimers over one socket",
            )
        )
    on_, off_ = got["on"], got["off"]

    def ratios(key: str) -> float:
        return round(statistics.median(a / b for a, b in zip(on_[key], off_[key], strict=True)), 3)

    def rounds_of(key: str) -> list[float]:
        return [round(a / b, 2) for a, b in zip(on_[key], off_[key], strict=True)]

    out.append(
        Result(
            "limits",
            "on / off",
            {
                "ready_p50": ratios("ready_p50"),
                "pairs_per_s": ratios("pairs_per_s"),
                "pair_p50": ratios("pair_p50"),
                "ready_rounds": rounds_of("ready_p50"),
                "pairs_rounds": rounds_of("pairs_per_s"),
            },
            "median of each round's ratio; goal within 10% (0.9-1.1)",
        )
    )
    return out
