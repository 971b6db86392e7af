"""PostgreSQL's and the client's CPU a pair by the age of the claimers' connections: N new
handles (a pool each, as the benchmark's claimers) claim + complete in lockstep, phase by
phase, so a new connection's planning and its re-plan (skift_pg._tx.REPLAN_AT) show.

    uv run python -m bench._claimage --claimers 32 --phases 1,4,1,1,5,12
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import time
from typing import Any

import psycopg

import skift
from skift_pg import PgStore

from . import _graph
from ._claimprof import backend_cpu
from ._env import scratch, server


async def run(dsn_base: Any, claimers: int, phases: list[int]) -> None:
    async with scratch(dsn_base, f"age{claimers}") as dsn:
        size = claimers * sum(phases) + 20
        await asyncio.to_thread(_graph.load, dsn, size=size, projects=10, chain=0, pool=True)
        db = psycopg.conninfo.conninfo_to_dict(dsn)["dbname"]
        handles = [
            skift.LocalSkift(PgStore(dsn, min_size=1, max_size=2), principal=skift.Agent(f"c{i}"))
            for i in range(claimers)
        ]
        async with contextlib.AsyncExitStack() as st:
            for h in handles:
                await st.enter_async_context(h)
            done = 0
            for k in phases:

                async def work(h: skift.LocalSkift, k: int = k) -> None:
                    for _ in range(k):
                        c = await h.claim_next()
                        await h.complete(c.node.ref, lease=c.lease.id)

                pg0, cpu0 = await backend_cpu(dsn, db), time.process_time()
                await asyncio.gather(*(work(h) for h in handles))
                pg1, cpu1 = await backend_cpu(dsn, db), time.process_time()
                n = claimers * k
                print(
                    f"pairs {done + 1}-{done + k} of each connection: "
                    f"PG CPU {(pg1 - pg0) / n * 1000:.2f} ms/pair, "
                    f"client CPU {(cpu1 - cpu0) / n * 1000:.2f} ms/pair, "
                    f"load {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
                done += k


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--claimers", type=int, default=32)
    ap.add_argument("--phases", default="1,4,1,1,5,12", help="pairs per connection, by phase")
    ap.add_argument("--dsn", default=os.environ.get("SKIFT_TEST_DSN"))
    a = ap.parse_args()
    with server(a.dsn) as srv:
        asyncio.run(run(srv, a.claimers, [int(x) for x in a.phases.split(",")]))


if __name__ == "__main__":
    main()
