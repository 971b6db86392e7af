"""Baselines run beside skift: pgqueuer's dequeue-and-ack, and pgbench's simple-update TPS."""

from __future__ import annotations

import asyncio
import contextlib
import re
import subprocess
import time

import psycopg

from ._env import Server, pgbench_path, scratch
from ._stats import Result


async def pgqueuer(
    srv: Server, jobs: int, consumers: int, batch_size: int, seconds: float
) -> Result:
    """pgqueuer's own benchmark shape: ``consumers`` QueueManagers (psycopg, a connection
    each) dequeue, run a no-op and ack, while one producer keeps enqueueing batches of 10
    (the queue starts with ``jobs`` jobs); jobs completed per second over ``seconds``.

    The producer matters: pgqueuer's psycopg driver reads notifications on the
    consumer's own connection and holds it up to a second when none arrive, so a
    queue drained without new work stalls (measured: ~11 jobs/s on 12 jobs).
    """
    from pgqueuer.db import PsycopgDriver
    from pgqueuer.models import Job
    from pgqueuer.qm import QueueManager
    from pgqueuer.queries import Queries

    case = f"{consumers} consumer{'s' if consumers > 1 else ''}, batch {batch_size}"
    async with scratch(srv, f"pgq_c{consumers}_b{batch_size}", migrate=False) as dsn:
        producer_conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
        producer = Queries(PsycopgDriver(producer_conn))
        await producer.install()
        for start in range(0, jobs, 1000):
            n = min(1000, jobs - start)
            await producer.enqueue(["bench"] * n, [None] * n, [0] * n)
        stamps: list[float] = []
        conns: list[psycopg.AsyncConnection[object]] = [producer_conn]
        managers: list[QueueManager] = []
        for _ in range(consumers):
            conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
            conns.append(conn)
            qm = QueueManager(Queries(PsycopgDriver(conn)))

            @qm.entrypoint("bench")
            async def bench(job: Job) -> None:  # pyright: ignore[reportUnusedFunction]
                stamps.append(time.perf_counter())
                started.set()

            managers.append(qm)
        stop = asyncio.Event()
        started = asyncio.Event()

        async def produce() -> None:
            while not stop.is_set():
                await producer.enqueue(["bench"] * 10, [None] * 10, [0] * 10)
                await asyncio.sleep(0)

        tasks: list[asyncio.Task[None]] = []
        try:
            tasks = [asyncio.create_task(qm.run(batch_size=batch_size)) for qm in managers]
            tasks.append(asyncio.create_task(produce()))
            await started.wait()
            start_at = stamps[0]
            await asyncio.sleep(seconds)
            end_at = time.perf_counter()
            done = sum(1 for t in stamps if t <= end_at)
        finally:
            stop.set()
            for qm in managers:
                qm.shutdown.set()
            # a consumer's exit waits out its buffers' and health check's timers (seconds)
            _, pending = await asyncio.wait(tasks, timeout=0.5) if tasks else ((), ())
            for task in pending:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for conn in conns:
                with contextlib.suppress(Exception):
                    await conn.close()
        return Result(
            "pgqueuer",
            case,
            {"jobs": done, "jobs_per_s": round(done / (end_at - start_at), 1)},
            f"dequeue, no-op, ack while 1 producer enqueues; {seconds:g} s from the first job",
        )


async def pgbench(srv: Server, clients: int, seconds: int) -> Result:
    """``pgbench -N`` (simple update) TPS on a scratch database of the same server."""
    exe = pgbench_path()
    case = f"-N -c {clients}"
    if exe is None:
        return Result("pgbench", case, {}, "skipped: no pgbench on this machine")
    async with scratch(srv, "pgbench", migrate=False) as dsn:
        # libpq takes a connection string where pgbench takes a database name
        def run() -> str:
            subprocess.run([exe, "-i", "-q", "-s", "1", dsn], capture_output=True, check=True)
            done = subprocess.run(
                [
                    exe,
                    "-N",
                    "-c",
                    str(clients),
                    "-j",
                    str(min(clients, 2)),
                    "-T",
                    str(seconds),
                    dsn,
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            return done.stdout

        out = await asyncio.to_thread(run)
        m = re.search(r"tps = ([\d.]+) \(without initial connection time\)", out)
        tps = float(m.group(1)) if m else float("nan")
        lat = re.search(r"latency average = ([\d.]+) ms", out)
        return Result(
            "pgbench",
            case,
            {"tps": round(tps, 1), "latency_avg_ms": float(lat.group(1)) if lat else None},
            f"simple-update transactions, {seconds} s, -j {min(clients, 2)}",
        )
