"""Bulk-load a benchmark graph straight into skift's schema with COPY.

Generating a million nodes through patches would take hours, so this
bench-only loader writes rows directly, after the real migrations, keeping
every invariant the engine keeps: one organization, numbers dense from 1 per
project with ``node_counter`` at the last one, a fresh ``context_id`` per node,
at most one unreleased lease per node, holds with when/who/why together,
children in their parent's project, and an acyclic wait relation (blocks
edges plus parent-to-child waits). Events are not written: readiness never
reads them (only ``human_written`` does, and it is false for every node here).

Shape (per project of k nodes, numbers 1..k):

- about 5% of nodes are epics with four children (an epic is never ready
  while a child is open); epics take part in no blocks edge, and every edge
  goes from a lower number to a higher one within a project, so no cycle can
  form through either relation;
- about 30% of nodes are done, the rest open;
- about a third of open nodes are blocked by an open node, some more wait on
  a done one (a satisfied edge);
- about 1% of projects and 0.5% of nodes carry a hold (a held epic parks its
  children); about 2% of open nodes hold a live lease; 3% are gates
  (assignee_kind user); priorities, kinds and labels are spread at random.

A separate ``chain`` project holds a chain of nodes, each blocked by the one
before, for Explain and the cycle check on a deep node.
"""

from __future__ import annotations

import random
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from skift import new_id

ORG = "default"
USER = "bench-user"
AGENT = "bench-agent"
KINDS = ("task", "task", "task", "bug", "spike", "chore")
LABELS = ("backend", "frontend", "docs", "infra", "research")

NODE_COLS = (
    "id, org_id, project_id, number, parent_id, kind, title, body, status, priority, "
    "assignee_kind, assignee, labels, held_at, held_by, held_reason, hold_group, result, "
    "context_id, created_by, created_at, updated_at"
)


@dataclass
class Graph:
    """What a scenario needs to know about a loaded graph."""

    nodes: int = 0
    open: int = 0
    edges: int = 0
    leases: int = 0
    held_projects: int = 0
    held_nodes: int = 0
    projects: list[str] = field(default_factory=lambda: list[str]())  # slugs, in id order
    chain: str = "chain"  # slug of the chain project
    chain_length: int = 0
    edge_targets: list[str] = field(
        default_factory=lambda: list[str]()
    )  # refs an edge from the chain tail may enter
    load_seconds: float = 0.0


def _hold(at: datetime, by: uuid.UUID, why: str) -> tuple[Any, ...]:
    return (at, by, why, None)


_NO_HOLD: tuple[Any, ...] = (None, None, None, None)


def load(
    dsn: str,
    *,
    size: int,
    projects: int = 1000,
    chain: int = 100,
    seed: int = 9,
    pool: bool = False,
) -> Graph:
    """Load a graph of about ``size`` nodes over ``projects`` projects into a migrated database.

    ``pool=True`` loads only open, unblocked, unheld nodes: a pool for ClaimNext to drain.
    """
    t0 = time.perf_counter()
    rnd = random.Random(seed)
    g = Graph()
    base = datetime(2025, 1, 1, tzinfo=UTC)
    now = datetime.now(UTC)
    org = new_id()
    user, agent = new_id(), new_id()
    per = max(1, size // projects)
    node_rows: list[tuple[Any, ...]] = []
    edge_rows: list[tuple[Any, ...]] = []
    lease_rows: list[tuple[Any, ...]] = []
    project_rows: list[tuple[Any, ...]] = []
    tick = 0

    def stamp() -> datetime:
        nonlocal tick
        tick += 1
        return base + timedelta(milliseconds=tick)

    def node(
        pid: uuid.UUID,
        number: int,
        *,
        parent: uuid.UUID | None = None,
        status: str = "open",
        hold: tuple[Any, ...] = _NO_HOLD,
        gate: bool = False,
    ) -> uuid.UUID:
        nid = new_id()
        at = stamp()
        labels = [] if pool else rnd.sample(LABELS, rnd.choice((0, 1, 1, 2)))
        node_rows.append(
            (
                nid,
                org,
                pid,
                number,
                parent,
                "task" if pool else rnd.choice(KINDS),
                f"node {number}",
                "",
                status,
                2 if pool else rnd.randrange(5),
                "user" if gate else None,
                None,
                labels,
                *hold,
                "done" if status == "done" else None,
                uuid.uuid4(),
                user,
                at,
                at,
            )
        )
        return nid

    for pi in range(projects):
        pid = new_id()
        slug = f"p{pi:04d}"
        g.projects.append(slug)
        held = not pool and rnd.random() < 0.01
        g.held_projects += held
        project_rows.append(
            (
                pid,
                org,
                slug,
                f"Project {pi}",
                per,
                2,
                "",
                None,
                *(_hold(now, user, "parked") if held else _NO_HOLD),
                base,
            )
        )
        number = 1
        open_leaves: list[uuid.UUID] = []
        done_leaves: list[uuid.UUID] = []
        while number <= per:
            if not pool and number + 4 <= per and rnd.random() < 0.05:
                held_epic = rnd.random() < 0.05
                g.held_nodes += held_epic
                epic = node(pid, number, hold=_hold(now, user, "later") if held_epic else _NO_HOLD)
                number += 1
                for _ in range(4):
                    status = "open" if rnd.random() < 0.7 else "done"
                    kid = node(pid, number, parent=epic, status=status)
                    (open_leaves if status == "open" else done_leaves).append(kid)
                    number += 1
                continue
            if pool:
                node(pid, number)
                number += 1
                continue
            status = "done" if rnd.random() < 0.3 else "open"
            held_node = status == "open" and rnd.random() < 0.004
            g.held_nodes += held_node
            nid = node(
                pid,
                number,
                status=status,
                hold=_hold(now, user, "later") if held_node else _NO_HOLD,
                gate=rnd.random() < 0.03,
            )
            number += 1
            if status == "done":
                done_leaves.append(nid)
                continue
            if open_leaves and rnd.random() < 1 / 3:
                edge_rows.append((org, rnd.choice(open_leaves), nid, "blocks", base))
            elif done_leaves and rnd.random() < 0.15:
                edge_rows.append((org, rnd.choice(done_leaves), nid, "blocks", base))
            elif rnd.random() < 0.02:
                lease_rows.append(
                    (
                        new_id(),
                        org,
                        nid,
                        agent,
                        "bench",
                        "",
                        "",
                        now,
                        now + timedelta(days=1),
                        timedelta(days=1),
                        None,
                        None,
                    )
                )
            open_leaves.append(nid)
        if pi % max(1, projects // 40) == 0 and open_leaves and len(g.edge_targets) < 40:
            g.edge_targets.append(f"{slug}#{per}")

    if chain and not pool:
        cid = new_id()
        project_rows.append((cid, org, g.chain, "Chain", chain, 2, "", None, *_NO_HOLD, base))
        prev: uuid.UUID | None = None
        for i in range(1, chain + 1):
            nid = node(cid, i)
            if prev is not None:
                edge_rows.append((org, prev, nid, "blocks", base))
            prev = nid
        g.chain_length = chain

    g.nodes = len(node_rows)
    g.open = sum(1 for r in node_rows if r[8] == "open")
    g.edges = len(edge_rows)
    g.leases = len(lease_rows)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO orgs (id, name, created_at) VALUES (%s, %s, %s)", (org, ORG, base)
        )
        # the person is the organization's first, so its admin (as skift makes the first person)
        for pid, name, kind in ((user, USER, "user"), (agent, AGENT, "agent")):
            conn.execute(
                "INSERT INTO principals (id, org_id, name, kind, created_at, admin)"
                " VALUES (%s, %s, %s, %s, %s, %s)",
                (pid, org, name, kind, base, kind == "user"),
            )
        with conn.transaction(), conn.cursor() as cur:
            with cur.copy(
                "COPY projects (id, org_id, slug, title, node_counter, priority, vcs_url,"
                " archived_at, held_at, held_by, held_reason, hold_group, created_at) FROM STDIN"
            ) as cp:
                for row in project_rows:
                    cp.write_row(row)
            with cur.copy("COPY project_slugs (org_id, slug, project_id) FROM STDIN") as cp:
                for row in project_rows:
                    cp.write_row((org, row[2], row[0]))
            with cur.copy(f"COPY nodes ({NODE_COLS}) FROM STDIN") as cp:
                for row in node_rows:
                    cp.write_row(row)
            with cur.copy("COPY edges (org_id, from_id, to_id, kind, created_at) FROM STDIN") as cp:
                for row in edge_rows:
                    cp.write_row(row)
            with cur.copy(
                "COPY leases (id, org_id, node_id, holder, harness, agent_ref, session_ref,"
                " created_at, expires_at, ttl, released_at, release_reason) FROM STDIN"
            ) as cp:
                for row in lease_rows:
                    cp.write_row(row)
        conn.execute("VACUUM ANALYZE")
    g.load_seconds = time.perf_counter() - t0
    return g
