"""Ready with the read policy on (issue 23): the read decision's cost on a large graph.

One graph, one run, three ways side by side, interleaved round by round so
another process's load falls on all three alike:

- ``off``: the read decision skipped (``Context.hidden`` answers "nothing
  hidden" without asking the store or the policy): Ready as it was before
  reads followed policy;
- ``on, none restricted``: the decision asked (one probe of the restricted
  projects' index, no policy evaluation: nothing is restricted);
- ``on, one restricted``: a project with ready work restricted to a person,
  read by an agent who is not a reader (the index probe, the reader names, one
  Rego evaluation, and the project left out in SQL).

The goal: ``on, one restricted`` within 10% of ``off`` at 1M nodes.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any
from uuid import UUID

import skift
from skift_pg import PgStore

from . import _graph, _trace
from ._env import Server, scratch
from ._scenarios import _size_label  # pyright: ignore[reportPrivateUsage]
from ._stats import Result, summary


def _client(dsn: str, principal: skift.PrincipalSpec) -> skift.LocalSkift:
    return skift.LocalSkift(PgStore(dsn, min_size=1, max_size=2), principal=principal)


async def _nothing_hidden(tx: object) -> frozenset[UUID]:
    return frozenset()


async def ready_read_policy(srv: Server, size: int, iters: int, rounds: int = 10) -> list[Result]:
    out: list[Result] = []
    label = _size_label(size)
    async with scratch(srv, f"readpolicy_{label.lower()}") as dsn:
        g = await asyncio.to_thread(_graph.load, dsn, size=size, projects=1000)
        # one client (one pool, the same connections and prepared statements) for all
        # three: "off" only swaps the read decision out while it runs
        on = _client(dsn, skift.Agent(_graph.AGENT))
        off = on
        user = _client(dsn, skift.User(_graph.USER))
        async with on, user:
            first = (await on.ready(limit=50)).nodes[0].project
            samples: dict[str, list[float]] = {"off": [], "none": [], "one": []}
            base: dict[str, list[float]] = {"none": [], "one": []}  # "off" beside each
            per = max(1, iters // rounds)

            async def run(h: skift.LocalSkift, key: str, beside: str = "") -> None:
                if key == "off":
                    h.engine.hidden = _nothing_hidden  # type: ignore[method-assign]
                try:
                    for _ in range(2):
                        await h.ready(limit=50)
                    for _ in range(per):
                        t0 = time.perf_counter()
                        await h.ready(limit=50)
                        took = time.perf_counter() - t0
                        samples[key].append(took)
                        if beside:
                            base[beside].append(took)
                finally:
                    h.engine.__dict__.pop("hidden", None)

            for i in range(rounds):  # alternate who goes first, so order favours neither
                for h, key in [(off, "off"), (on, "none")][:: 1 if i % 2 == 0 else -1]:
                    await run(h, key, "none" if key == "off" else "")
            await user.restrict_project(first, readers=[], reason="bench: read policy on")
            page = await on.ready(limit=50)
            assert all(n.project != first for n in page.nodes), "the restricted project leaked"
            for i in range(rounds):
                for h, key in [(off, "off"), (on, "one")][:: 1 if i % 2 == 0 else -1]:
                    await run(h, key, "one" if key == "off" else "")
            reps = max(2, per)
            with _trace.trace() as t:
                for _ in range(reps):
                    await on.ready(limit=50)
        names = {
            "off": "read policy off",
            "none": "on, none restricted",
            "one": "on, one restricted",
        }
        for key, name in names.items():
            s: dict[str, Any] = summary(samples[key])
            # against the "off" samples taken in the same rounds (the machine's load drifts)
            off_p50 = statistics.median(base.get(key) or samples["off"])
            s["vs_off"] = round(statistics.median(samples[key]) / off_p50, 3)
            out.append(Result("readpolicy", f"{label} ready {name}", s, "agent, page of 50"))
        out.append(
            Result(
                "readpolicy",
                f"{label} ready on, one restricted, per statement",
                {
                    k: round(v * 1000 / reps, 3)
                    for k, v in sorted(t.seconds.items(), key=lambda kv: -kv[1])
                },
                "ms per page spent in each query (client-side wall time)",
            )
        )
        out.append(
            Result(
                "readpolicy",
                f"{label} graph",
                {"nodes": g.nodes, "open": g.open, "load_seconds": round(g.load_seconds, 1)},
                "COPY into the migrated schema (bench-only loader)",
            )
        )
    return out
