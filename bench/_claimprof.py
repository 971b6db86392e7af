"""Profile one claimer's claim + complete: client CPU (process), PostgreSQL CPU (the
backends' /proc times), wall, and optionally cProfile of the client.

    uv run python -m bench._claimprof --pairs 300 [--profile out.prof] [--claimers 1]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import os
import time
from typing import Any

import psycopg

import skift
from skift_pg import PgStore

from . import _graph
from ._env import scratch, server


def _ticks(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        parts = f.read().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")


async def backend_cpu(dsn: str, db: str) -> float:
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as c:
        cur = await c.execute(
            "select pid from pg_stat_activity where datname = %s and pid <> pg_backend_pid()",
            (db,),
        )
        pids = [r[0] for r in await cur.fetchall()]
    total = 0.0
    for p in pids:
        with contextlib.suppress(OSError):
            total += _ticks(p)
    return total


async def run(
    dsn_base: Any,
    pairs: int,
    claimers: int,
    prof: str | None,
    rounds: int,
    stmts: str | None,
    warm: int,
) -> None:
    async with scratch(dsn_base, f"prof{claimers}") as dsn:
        await asyncio.to_thread(
            _graph.load,
            dsn,
            size=pairs * rounds + claimers * warm + 50,
            projects=10,
            chain=0,
            pool=True,
        )
        db = psycopg.conninfo.conninfo_to_dict(dsn)["dbname"]
        handles = [
            skift.LocalSkift(PgStore(dsn, min_size=1, max_size=2), principal=skift.Agent(f"c{i}"))
            for i in range(claimers)
        ]
        async with contextlib.AsyncExitStack() as st:
            for h in handles:
                await st.enter_async_context(h)
            # warm up
            for h in handles:
                for _ in range(warm):
                    c = await h.claim_next()
                    await h.complete(c.node.ref, lease=c.lease.id)
            for r in range(rounds):
                per = pairs // claimers

                async def work(h: skift.LocalSkift, per: int = per) -> None:
                    for _ in range(per):
                        c = await h.claim_next()
                        await h.complete(c.node.ref, lease=c.lease.id)

                if stmts:
                    async with await psycopg.AsyncConnection.connect(stmts, autocommit=True) as c:
                        await c.execute("select pg_stat_statements_reset()")
                pg0 = await backend_cpu(dsn, db)
                cpu0, w0 = time.process_time(), time.perf_counter()
                p = cProfile.Profile(time.thread_time) if prof else None
                if p:
                    p.enable()
                await asyncio.gather(*(work(h) for h in handles))
                if p:
                    p.disable()
                    p.dump_stats(f"{prof}.{r}")
                cpu1, w1 = time.process_time(), time.perf_counter()
                pg1 = await backend_cpu(dsn, db)
                n = per * claimers
                if stmts:
                    async with await psycopg.AsyncConnection.connect(stmts, autocommit=True) as c:
                        cur = await c.execute(
                            "select calls, total_exec_time, total_plan_time, plans, query"
                            " from pg_stat_statements s join pg_database d on d.oid = s.dbid"
                            " where d.datname = %s order by total_exec_time + total_plan_time desc",
                            (db,),
                        )
                        tot = 0.0
                        for calls, ex, pl, plans, qtext in await cur.fetchall():
                            tot += ex + pl
                            print(
                                f"  {calls / n:5.2f}/pair exec {ex / n:6.3f} plan {pl / n:6.3f} ms/pair"
                                f" (plans {plans})  {' '.join(qtext.split())[:110]}"
                            )
                        print(f"  total statement time {tot / n:.2f} ms/pair")
                print(
                    f"round {r}: {n} pairs, {n / (w1 - w0):.1f} pairs/s, "
                    f"client CPU {(cpu1 - cpu0) / n * 1000:.2f} ms/pair, "
                    f"PG CPU {(pg1 - pg0) / n * 1000:.2f} ms/pair, "
                    f"wall {(w1 - w0) / n * 1000:.2f} ms/pair  load {os.getloadavg()[0]:.1f}",
                    flush=True,
                )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=300)
    ap.add_argument("--claimers", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--profile")
    ap.add_argument("--warm", type=int, default=5, help="pairs per claimer before measuring")
    ap.add_argument("--dsn", default=os.environ.get("SKIFT_TEST_DSN"))
    ap.add_argument("--stmts", help="a DSN of the server's database with pg_stat_statements")
    a = ap.parse_args()
    with server(a.dsn) as srv:
        asyncio.run(run(srv, a.pairs, a.claimers, a.profile, a.rounds, a.stmts, a.warm))


if __name__ == "__main__":
    main()
