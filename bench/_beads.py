"""The beads import scenario (issue 22): a generated ``bd export`` into a fresh project.

Goals: 1,000 issues in under 5 s and 100,000 in under 2 minutes, on PostgreSQL,
through the library (one transaction each). Also timed: the second import of
the same file (everything unchanged) and the export back to JSONL.

Wall time on a shared machine says mostly how busy it is, so the import's CPU
is measured too: this process's (``import_cpu_s``) and, when PostgreSQL runs
on this machine, its backends' on the scratch database (``import_pg_cpu_s``,
from /proc). The import is one sequence of client work and statements, so
their sum is about what it takes on an idle machine.
"""

from __future__ import annotations

import time
from pathlib import Path

import psycopg

import skift

from . import beads_gen
from ._env import Server, scratch
from ._stats import Result

GOALS = {1_000: 5.0, 100_000: 120.0}


def backend_cpu(dsn: str) -> dict[int, float] | None:
    """CPU seconds (user + system) of each PostgreSQL backend on ``dsn``'s database, read
    from /proc; None when the server is not on this machine (or /proc cannot be read)."""
    tick = 100.0
    try:
        import os

        tick = float(os.sysconf("SC_CLK_TCK"))
        with psycopg.connect(dsn, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid()"
            ).fetchall()
        out: dict[int, float] = {}
        for (pid,) in rows:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            out[pid] = (int(fields[11]) + int(fields[12])) / tick
        return out
    except (OSError, psycopg.Error, ValueError, IndexError):
        return None


def cpu_spent(before: dict[int, float] | None, after: dict[int, float] | None) -> float | None:
    if before is None or after is None:
        return None
    return sum(v - before.get(pid, 0.0) for pid, v in after.items())


async def beads_import(srv: Server, sizes: tuple[int, ...]) -> list[Result]:
    out: list[Result] = []
    for n in sizes:
        data = beads_gen.text(n, seed=1)
        async with (
            scratch(srv, f"beads{n}") as dsn,
            skift.open(dsn, principal=skift.User("importer")) as sk,
        ):
            await sk.list_projects()  # the pool's connection is open before the clocks start
            pg0 = backend_cpu(dsn)
            cpu0 = time.process_time()
            t0 = time.perf_counter()
            first = await sk.import_beads(data, project="bd")
            took = time.perf_counter() - t0
            cpu = time.process_time() - cpu0
            pg_cpu = cpu_spent(pg0, backend_cpu(dsn))
            t0 = time.perf_counter()
            again = await sk.import_beads(data, project="bd")
            took_again = time.perf_counter() - t0
            t0 = time.perf_counter()
            exported = await sk.export_beads("bd")
            took_export = time.perf_counter() - t0
        goal = GOALS.get(n)
        metrics = {
            "import_s": round(took, 2),
            "issues_per_s": round(n / took),
            "import_cpu_s": round(cpu, 2),
            "reimport_s": round(took_again, 2),
            "export_s": round(took_export, 2),
            "edges": first.edges,
            "comments": first.comments,
        }
        if pg_cpu is not None:
            metrics["import_pg_cpu_s"] = round(pg_cpu, 2)
        if goal is not None:
            metrics["goal_s"] = goal
            metrics["met"] = took < goal
        assert again.unchanged == n
        assert len(exported.splitlines()) == n
        out.append(
            Result(
                "beads",
                f"import {n:,} issues",
                metrics,
                "generated bd export (bench/beads_gen.py); one transaction; PostgreSQL",
            )
        )
    return out
