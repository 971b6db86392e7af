"""A claim's, a complete's and Ready's "has this node a live lease" probes read that node's
lease entries, however many live leases its organization has, on a new database (no
statistics: CI, the bench, a new deployment) and after ANALYZE alike (issue 31, migration
0030). Each statement they send that reads leases is asked again with EXPLAIN ANALYZE, planned
as the store plans it (skift_pg._tx.PgCursor: prepared, generic, without sequential scans
for SEEK_PLANNED; custom_planned ones for their values)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Generator
from typing import Any

import psycopg
import pytest
from pgrows import columns, select_list

import skift
from skift._refs import parse_ulid  # pyright: ignore[reportPrivateUsage]
from skift_pg import PgStore
from skift_pg._queries import custom_planned, queries, seek_planned  # pyright: ignore[reportPrivateUsage]

pytestmark = pytest.mark.pg

LIVE = 200  # other agents' live leases in the organization
HISTORY = 10  # released leases on each node
PER_PROBE = HISTORY + 3  # entries a probe of one node may read: its unreleased one, its history
_WRITES = re.compile(r"INSERT INTO|DELETE FROM|UPDATE \w+ SET")


@contextlib.contextmanager
def _sent() -> Generator[dict[bytes, Any]]:
    """The store's named statements that read leases and write nothing, sent meanwhile: the
    first parameters of each by text."""
    names = {
        sql.encode() for sql in queries().values() if "leases" in sql and not _WRITES.search(sql)
    }
    calls: dict[bytes, Any] = {}
    orig = psycopg.AsyncCursor.execute

    async def execute(self: Any, query: Any, params: Any = None, **kw: Any) -> Any:
        if isinstance(query, bytes) and query in names:
            calls.setdefault(query, params)
        return await orig(self, query, params, **kw)

    psycopg.AsyncCursor.execute = execute  # type: ignore[method-assign]
    try:
        yield calls
    finally:
        psycopg.AsyncCursor.execute = orig  # type: ignore[method-assign]


def _lease_scans(plan: dict[str, Any]) -> list[dict[str, Any]]:
    found = [plan] if plan.get("Relation Name") == "leases" else []
    for child in plan.get("Plans", ()):
        found += _lease_scans(child)
    return found


async def _explain(dsn: str, query: bytes, params: Any, claimed: Any) -> list[dict[str, Any]]:
    """The plan's scans of leases, the statement planned as the store plans it (in a
    transaction rolled back, where take_next_ready would have marked ``claimed``)."""
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        await conn.execute("SET jit = off")
        prepared = query not in custom_planned()
        if prepared:
            await conn.execute("SET plan_cache_mode = force_generic_plan")
        async with conn.transaction(force_rollback=True):
            if query in seek_planned():
                await conn.execute("SET LOCAL enable_seqscan = off")
            await conn.execute("SELECT set_config('skift.claimed', %s::text, true)", [claimed])
            cur = await conn.execute(
                b"EXPLAIN (ANALYZE, FORMAT JSON) " + query, params, prepare=prepared
            )
            row = await cur.fetchone()
    assert row is not None
    plan: dict[str, Any] = row[0][0]["Plan"]
    return _lease_scans(plan)


async def _live_leases(dsn: str, slug: str) -> None:
    """One claim by an agent, then LIVE copies of its lease on other open nodes (as LIVE
    agents' claims would leave them), and HISTORY released ones on every node."""
    async with skift.LocalSkift(PgStore(dsn), principal=skift.Agent("other")) as other:
        await other.claim_next(projects=[slug])
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        names = await columns(conn, "leases")
        made = {"id": "md5(n.id::text)::uuid", "node_id": "n.id"}
        await conn.execute(
            f"INSERT INTO leases ({', '.join(names)}) SELECT {select_list(names, made, 'l')} "
            "FROM leases l "
            "JOIN LATERAL (SELECT * FROM nodes n WHERE n.org_id = l.org_id "
            "AND n.id <> l.node_id ORDER BY n.number LIMIT %(n)s) n ON true".encode(),
            {"n": LIVE - 1},
        )
        # and a history: HISTORY released leases on each node (a table of many pages, where
        # reading it whole is no longer the cheap way to find one node's lease)
        made |= {
            "id": "md5(n.id::text || g)::uuid",
            "released_at": "l.created_at + interval '1 second'",
            "release_reason": "'crash'",
        }
        await conn.execute(
            f"INSERT INTO leases ({', '.join(names)}) SELECT {select_list(names, made, 'l')} "
            "FROM leases l "
            "JOIN nodes n ON n.org_id = l.org_id, generate_series(1, %(n)s) g "
            "WHERE l.released_at IS NULL AND l.id = (SELECT min(id::text)::uuid FROM leases)".encode(),
            {"n": HISTORY},
        )


@pytest.mark.parametrize("analyzed", [False, True], ids=["new database", "after ANALYZE"])
async def test_a_nodes_live_lease_probe_does_not_grow_with_the_orgs_live_leases(
    pg_dsn: str, analyzed: bool
) -> None:
    async with skift.LocalSkift(PgStore(pg_dsn), principal=skift.User("person")) as person:
        proj = await person.create_project("Probes")
        await person.patch(proj.slug, [skift.CreateNode(title=f"n{i}") for i in range(LIVE + 20)])
    await _live_leases(pg_dsn, proj.slug)
    if analyzed:
        async with await psycopg.AsyncConnection.connect(pg_dsn, autocommit=True) as conn:
            await conn.execute("ANALYZE")

    async with skift.LocalSkift(PgStore(pg_dsn), principal=skift.Agent("me")) as me:
        with _sent() as calls:
            await me.ready()
            claim = await me.claim_next()
            await me.complete(claim.node.ref, lease=claim.lease.id)
            await me.get(claim.node.ref)
            claim = await me.claim_next()
            await me.ready()
    probes = {
        name: sql.encode()
        for name, sql in queries().items()
        if sql.encode() in calls and "ORDER BY created_at, id" not in sql  # not a lease list
    }
    # the claim's, the complete's, Ready's and a node's: each probes leases by node
    assert {"take_next_ready_any", "claim_reads", "derive_by_number", "derive"} <= set(probes)

    read: dict[str, list[float]] = {}
    for name, query in probes.items():
        for scan in await _explain(pg_dsn, query, calls[query], parse_ulid(str(claim.node.id))):
            if scan["Actual Loops"]:
                # entries read per probe: those kept and those the filter threw away
                read.setdefault(name, []).append(
                    scan["Actual Rows"] + scan.get("Rows Removed by Filter", 0)
                )
    assert read
    grown = {name: r for name, r in read.items() if max(r) > PER_PROBE}
    assert not grown, f"lease entries read per probe, with {LIVE} live leases: {grown}"
