"""Migration 0025's keys (issue 33): Ready and ClaimNext + complete on one graph with the
keys as they were before 0025 and with org_id leading every key, side by side.

The same graph (same seed) is loaded into two databases: ``before`` migrated without
0025, ``after`` with it. The same code reads both, interleaved round by round with the
order alternating, so another process's load falls on both alike. The goal: within 10%.
A claim's event insert names the open-delivery key 0025 changed as its ``ON CONFLICT``
target, so ``before`` gets that one index too (webhook_deliveries is empty here: no
endpoint, no row, nothing else read or written differs).
The beads import changes an ``ON CONFLICT`` target, so it is compared by running
``--only beads`` from both commits one after the other (docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio
import time

import psycopg

import skift
import skift_pg
from skift_pg import PgStore

from . import _graph
from ._beads import backend_cpu, cpu_spent
from ._env import Server, scratch
from ._scenarios import _size_label  # pyright: ignore[reportPrivateUsage]
from ._stats import Result, summary

MIGRATION = 25


def _client(dsn: str) -> skift.LocalSkift:
    return skift.LocalSkift(
        PgStore(dsn, min_size=1, max_size=2), principal=skift.Agent(_graph.AGENT)
    )


async def org_keys(srv: Server, size: int, rounds: int = 10, per: int = 6) -> list[Result]:
    label = _size_label(size)
    async with (
        scratch(srv, f"orgkeys_before_{label.lower()}", migrate=False) as before,
        scratch(srv, f"orgkeys_after_{label.lower()}") as after,
    ):
        await skift_pg.migrate(before, skip=(MIGRATION,))
        async with await psycopg.AsyncConnection.connect(before, autocommit=True) as conn:
            await conn.execute(
                "CREATE UNIQUE INDEX webhook_deliveries_open_0025 ON webhook_deliveries "
                "(org_id, endpoint_id) WHERE sealed_at IS NULL"
            )
        for dsn in (before, after):
            await asyncio.to_thread(_graph.load, dsn, size=size, projects=1000)
        dsns = {"before": before, "after": after}
        clients = {side: _client(dsn) for side, dsn in dsns.items()}
        wall: dict[str, dict[str, list[float]]] = {}
        cpu: dict[str, dict[str, float | None]] = {}
        async with clients["before"], clients["after"]:
            for sk in clients.values():  # warm: pool open, statements prepared
                for _ in range(3):
                    await sk.ready(limit=50)

            async def ready(sk: skift.LocalSkift) -> None:
                await sk.ready(limit=50)

            async def pair(sk: skift.LocalSkift) -> None:
                c = await sk.claim_next()
                await sk.complete(c.node.ref, lease=c.lease.id)

            for what, op in (("Ready page", ready), ("ClaimNext + complete", pair)):
                samples: dict[str, list[float]] = {"before": [], "after": []}
                cpu0 = {side: backend_cpu(dsn) for side, dsn in dsns.items()}
                for r in range(rounds):
                    order = ("before", "after") if r % 2 == 0 else ("after", "before")
                    for side in order:
                        for _ in range(per):
                            t0 = time.perf_counter()
                            await op(clients[side])
                            samples[side].append(time.perf_counter() - t0)
                wall[what] = samples
                cpu[what] = {
                    side: cpu_spent(cpu0[side], backend_cpu(dsn)) for side, dsn in dsns.items()
                }
    out: list[Result] = []
    for what, samples in wall.items():
        b, a = summary(samples["before"]), summary(samples["after"])
        metrics: dict[str, float | int] = {
            "before_p50_ms": b["p50_ms"],
            "after_p50_ms": a["p50_ms"],
            "p50_ratio": round(a["p50_ms"] / b["p50_ms"], 3),
            "before_mean_ms": b["mean_ms"],
            "after_mean_ms": a["mean_ms"],
            "mean_ratio": round(a["mean_ms"] / b["mean_ms"], 3),
            "n": len(samples["after"]),
        }
        pg_b, pg_a = cpu[what]["before"], cpu[what]["after"]
        if pg_b and pg_a is not None:
            n = len(samples["after"])
            metrics["before_pg_cpu_ms"] = round(pg_b * 1000 / n, 2)
            metrics["after_pg_cpu_ms"] = round(pg_a * 1000 / n, 2)
            metrics["pg_cpu_ratio"] = round(pg_a / pg_b, 3)
        out.append(
            Result(
                "orgkeys",
                f"{label} {what}",
                metrics,
                f"keys before migration 0025 and after, one graph each, {rounds} interleaved "
                "rounds; PostgreSQL's CPU per operation from /proc",
            )
        )
    return out
