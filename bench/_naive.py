"""The naive baseline for Ready: every row into Python, readiness recomputed there.

It applies the same rules as skift (open; no blocks edge from an open node or
a dropped gate; no live lease; no open child; no hold on the node, an
ancestor or its project; project not archived; an agent never sees a gate)
and the same turn order (one node per project per pass, projects in id
order; priority, age, number within one), to show what the SQL saves.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any
from uuid import UUID

import psycopg


async def ready_page(dsn: str, *, limit: int) -> tuple[float, float, list[str]]:
    """(seconds to fetch, seconds to compute, the page's refs) for an agent with no cursor."""
    t0 = time.perf_counter()
    async with await psycopg.AsyncConnection.connect(dsn) as conn:
        projects = await (
            await conn.execute("SELECT id, slug, held_at, archived_at FROM projects")
        ).fetchall()
        nodes = await (
            await conn.execute(
                "SELECT id, project_id, number, parent_id, status, priority, assignee_kind,"
                " held_at, created_at FROM nodes"
            )
        ).fetchall()
        edges = await (
            await conn.execute("SELECT from_id, to_id FROM edges WHERE kind = 'blocks'")
        ).fetchall()
        leased = await (
            await conn.execute(
                "SELECT node_id FROM leases WHERE released_at IS NULL AND expires_at > now()"
            )
        ).fetchall()
    fetched = time.perf_counter()
    page = compute(projects, nodes, edges, leased, limit)
    return fetched - t0, time.perf_counter() - fetched, page


def compute(
    projects: list[tuple[Any, ...]],
    nodes: list[tuple[Any, ...]],
    edges: list[tuple[Any, ...]],
    leased: list[tuple[Any, ...]],
    limit: int,
) -> list[str]:
    proj = {p[0]: p for p in projects}
    by_id = {n[0]: n for n in nodes}
    live = {r[0] for r in leased}
    open_children: set[UUID] = {n[3] for n in nodes if n[3] is not None and n[4] == "open"}
    blocked: set[UUID] = set()
    for src, dst in edges:
        s = by_id[src]
        if s[4] == "open" or (s[4] == "dropped" and s[6] == "user"):
            blocked.add(dst)
    held_memo: dict[UUID, bool] = {}

    def held(nid: UUID) -> bool:
        chain: list[UUID] = []
        cur: UUID | None = nid
        result = False
        while cur is not None:
            if cur in held_memo:
                result = held_memo[cur]
                break
            chain.append(cur)
            n = by_id[cur]
            if n[7] is not None:
                result = True
                break
            cur = n[3]
        for c in chain:
            held_memo[c] = result
        return result

    per_project: dict[UUID, list[tuple[Any, ...]]] = defaultdict(list)
    for n in nodes:
        p = proj[n[1]]
        if (
            n[4] == "open"
            and n[6] != "user"
            and p[3] is None
            and p[2] is None
            and n[0] not in blocked
            and n[0] not in live
            and n[0] not in open_children
            and not held(n[0])
        ):
            per_project[n[1]].append(n)
    keyed: list[tuple[int, UUID, tuple[Any, ...]]] = []
    for pid, members in per_project.items():
        members.sort(key=lambda n: (n[5], n[8], n[2]))
        keyed.extend((rank, pid, n) for rank, n in enumerate(members))
    keyed.sort(key=lambda t: (t[0], t[1]))
    return [f"{proj[t[2][1]][1]}#{t[2][2]}" for t in keyed[:limit]]
