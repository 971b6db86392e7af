"""The beads import scenario (issue 22): a generated ``bd export`` into a fresh project.

Goals: 1,000 issues in under 5 s and 100,000 in under 2 minutes, on PostgreSQL,
through the library (one transaction each). Also timed: the second import of
the same file (everything unchanged) and the export back to JSONL.
"""

from __future__ import annotations

import time

import skift

from . import beads_gen
from ._env import Server, scratch
from ._stats import Result

GOALS = {1_000: 5.0, 100_000: 120.0}


async def beads_import(srv: Server, sizes: tuple[int, ...]) -> list[Result]:
    out: list[Result] = []
    for n in sizes:
        data = beads_gen.text(n, seed=1)
        async with (
            scratch(srv, f"beads{n}") as dsn,
            skift.open(dsn, principal=skift.User("importer")) as sk,
        ):
            t0 = time.perf_counter()
            first = await sk.import_beads(data, project="bd")
            took = time.perf_counter() - t0
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
            "reimport_s": round(took_again, 2),
            "export_s": round(took_export, 2),
            "edges": first.edges,
            "comments": first.comments,
        }
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
