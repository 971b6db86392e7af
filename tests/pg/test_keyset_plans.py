"""A keyset page reads only its own rows (issue 30, AIP-158): PostgreSQL's plan of a page
deep into a long list, asked with EXPLAIN ANALYZE, reads the table from the page's
key on through an index, ``limit + 1`` rows (an offset read every row before it; the
lists once read whole read all of them): webhook deliveries, nodes, and comments,
artifacts, leases, live leases, principals, rates, organizations and webhooks."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import psycopg
import pytest
from pgrows import columns, select_list
from psycopg.rows import dict_row

import skift
from skift_pg import PgStore
from skift_pg._queries import queries  # pyright: ignore[reportPrivateUsage]

pytestmark = pytest.mark.pg

ROWS = 3000
PAGE = 10


def _scans(plan: dict[str, Any], table: str) -> list[dict[str, Any]]:
    """The plan's nodes that read ``table``."""
    found = [plan] if plan.get("Relation Name") == table else []
    for child in plan.get("Plans", ()):
        found += _scans(child, table)
    return found


async def _explain(dsn: str, name: str, params: dict[str, Any]) -> dict[str, Any]:
    async with await psycopg.AsyncConnection.connect(dsn, row_factory=dict_row) as conn:
        cur = await conn.execute(
            b"EXPLAIN (ANALYZE, FORMAT JSON) " + queries()[name].encode(), params
        )
        row = await cur.fetchone()
        assert row is not None
        return row["QUERY PLAN"][0]["Plan"]


def _assert_reads_only_the_page(plan: dict[str, Any], table: str) -> None:
    scans = _scans(plan, table)
    assert scans, plan
    for scan in scans:
        assert scan["Node Type"] != "Seq Scan", scan
        read = scan["Actual Rows"] * scan["Actual Loops"] + scan.get("Rows Removed by Filter", 0)
        assert read <= PAGE + 1, f"{table}: {read} rows read for a page of {PAGE}"


async def test_a_delivery_page_deep_in_the_list_reads_its_own_rows(pg_dsn: str) -> None:
    async with skift.LocalSkift(PgStore(pg_dsn), principal=skift.User("person")) as sk:
        proj = await sk.create_project("Plans")
        hook = await sk.add_webhook(proj.slug, "https://hooks.example.com/plans")
        await sk.test_webhook(hook.id)
    # copies of the delivery, sealed (one open delivery per endpoint), a second apart
    made = {
        "id": "md5(t.id::text || g)::uuid",
        "sealed_at": "coalesce(t.sealed_at, now())",
        "created_at": "t.created_at - g * interval '1 second'",
    }
    await _copy_rows(pg_dsn, "webhook_deliveries", made)
    async with await psycopg.AsyncConnection.connect(pg_dsn, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT org_id, created_at, id FROM webhook_deliveries "
            "ORDER BY created_at DESC, id DESC OFFSET %(n)s LIMIT 1",
            {"n": ROWS // 2},
        )
        org, at, ident = await cur.fetchone() or (None, None, None)
    plan = await _explain(
        pg_dsn,
        "deliveries",
        {
            "org": org,
            "endpoint_id": None,
            "project_id": None,
            "parked_only": False,
            "limit": PAGE + 1,
            "hidden": [],
            "after_at": at,
            "after_id": ident,
        },
    )
    _assert_reads_only_the_page(plan, "webhook_deliveries")


async def test_a_node_page_deep_in_the_list_reads_its_own_rows(pg_dsn: str) -> None:
    async with skift.LocalSkift(PgStore(pg_dsn), principal=skift.User("person")) as sk:
        proj = await sk.create_project("Plans")
        await sk.create(proj.slug, "the first")
    await _copy_rows(
        pg_dsn, "nodes", {"id": "md5(t.id::text || g)::uuid", "number": "t.number + g"}
    )
    async with await psycopg.AsyncConnection.connect(pg_dsn, autocommit=True) as conn:
        cur = await conn.execute("SELECT org_id, project_id FROM nodes LIMIT 1")
        org, project = await cur.fetchone() or (None, None)
    plan = await _explain(
        pg_dsn,
        "list_nodes",
        {
            "org": org,
            "projects": [project],
            "kinds": [],
            "labels": [],
            "anyl": [],
            "akind": None,
            "agents": False,
            "skip": "",
            "max_rank": 4,
            "parent": None,
            "exclude": [],
            "hidden": [],
            "now": None,
            "status": None,
            "held": None,
            "limit": PAGE + 1,
            "after_project": project,
            "after_number": ROWS // 2,
        },
    )
    _assert_reads_only_the_page(plan, "nodes")


# ------------------------------------------------------------------ the lists read whole before


async def _copy_rows(dsn: str, table: str, made: dict[str, str], where: str = "TRUE") -> None:
    """ROWS copies of ``table``'s rows (those ``where`` picks, as ``t``), the columns in
    ``made`` computed from ``t`` and ``g`` (1..ROWS), then ANALYZE."""
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        names = await columns(conn, table)
        await conn.execute(
            f"INSERT INTO {table} ({', '.join(names)}) SELECT {select_list(names, made, 't')} "
            f"FROM {table} t, generate_series(1, %(n)s) g WHERE {where}".encode(),
            {"n": ROWS},
        )
        await conn.execute(f"ANALYZE {table}".encode())


async def _middle(dsn: str, sql: str) -> tuple[Any, ...]:
    """The row of ``sql`` (ordered by the list's key) halfway down the list."""
    async with await psycopg.AsyncConnection.connect(dsn) as conn:
        cur = await conn.execute(f"{sql} OFFSET %(n)s LIMIT 1".encode(), {"n": ROWS // 2})
        row = await cur.fetchone()
        assert row is not None
        return tuple(row)


def _later(column: str = "created_at") -> str:
    return f"t.{column} + g * interval '1 millisecond'"


_ID = "md5(t.id::text || g)::uuid"


async def _work(dsn: str) -> tuple[str, str]:
    """A project with a node that has a comment, an artifact, a lease (released), a rate
    and a webhook: (the project's slug, the node's ref)."""
    async with skift.LocalSkift(PgStore(dsn), principal=skift.User("person")) as sk:
        proj = await sk.create_project("Lists")
        node = await sk.create(proj.slug, "the first")
        await sk.add_comment(node.ref, "a comment")
        await sk.attach_artifact(
            node.ref, skift.Artifact(name="report", parts=[skift.TextPart(text="hi")])
        )
        claim = await sk.claim(node.ref)
        await sk.release(node.ref, lease=claim.lease.id)
        await sk.set_rate("model", input="1", output="2")
        await sk.add_webhook(proj.slug, "https://hooks.example.com/lists")
        return proj.slug, node.ref


async def test_comment_artifact_and_lease_pages_read_their_own_rows(pg_dsn: str) -> None:
    await _work(pg_dsn)
    await _copy_rows(pg_dsn, "comments", {"id": _ID, "created_at": _later()})
    await _copy_rows(
        pg_dsn, "artifacts", {"id": _ID, "created_at": _later(), "name": "t.name || g"}
    )
    await _copy_rows(
        pg_dsn,
        "leases",
        {"id": _ID, "created_at": _later(), "released_at": "coalesce(t.released_at, now())"},
    )
    for name, table in (
        ("comment_page", "comments"),
        ("artifact_page", "artifacts"),
        ("lease_page", "leases"),
    ):
        org, node, at, ident = await _middle(
            pg_dsn, f"SELECT org_id, node_id, created_at, id FROM {table} ORDER BY created_at, id"
        )
        params = {"org": org, "id": node, "limit": PAGE + 1, "after_at": at, "after_id": ident}
        _assert_reads_only_the_page(await _explain(pg_dsn, name, params), table)


async def test_live_lease_pages_read_their_own_rows(pg_dsn: str) -> None:
    async with skift.LocalSkift(PgStore(pg_dsn), principal=skift.User("person")) as sk:
        proj = await sk.create_project("Live")
        node = await sk.create(proj.slug, "the first")
        await sk.claim(node.ref, ttl=timedelta(hours=1))
    # a node per live lease (one live lease a node)
    await _copy_rows(pg_dsn, "nodes", {"id": _ID, "number": "t.number + g"})
    async with await psycopg.AsyncConnection.connect(pg_dsn, autocommit=True) as conn:
        names = await columns(conn, "leases")
        made = {
            "id": "md5(n.id::text)::uuid",
            "node_id": "n.id",
            "created_at": "l.created_at + n.number * interval '1 millisecond'",
        }
        await conn.execute(
            f"INSERT INTO leases ({', '.join(names)}) SELECT {select_list(names, made, 'l')} "
            "FROM leases l JOIN nodes n ON n.org_id = l.org_id AND n.id <> l.node_id".encode()
        )
        await conn.execute("ANALYZE leases")
    org, at, ident = await _middle(
        pg_dsn,
        "SELECT org_id, created_at, id FROM leases WHERE released_at IS NULL "
        "ORDER BY created_at, id",
    )
    for projects in (None, [await _project_of(pg_dsn)]):
        params = {
            "org": org,
            "projects": projects,
            "holder": None,
            "hidden": [],
            "now": at,
            "limit": PAGE + 1,
            "after_at": at,
            "after_id": ident,
        }
        plan = await _explain(pg_dsn, "live_lease_page", params)
        _assert_reads_only_the_page(plan, "leases")


async def _project_of(dsn: str) -> Any:
    async with await psycopg.AsyncConnection.connect(dsn) as conn:
        cur = await conn.execute("SELECT project_id FROM nodes LIMIT 1")
        row = await cur.fetchone()
        assert row is not None
        return row[0]


async def test_principal_rate_org_and_webhook_pages_read_their_own_rows(pg_dsn: str) -> None:
    await _work(pg_dsn)
    await _copy_rows(pg_dsn, "principals", {"id": _ID, "name": "t.name || '-' || g"})
    await _copy_rows(pg_dsn, "rates", {"model": "t.model || lpad(g::text, 6, '0')"})
    await _copy_rows(
        pg_dsn, "orgs", {"id": _ID, "name": "t.name || '-' || g", "created_at": _later()}
    )
    await _copy_rows(pg_dsn, "webhook_endpoints", {"id": _ID, "url": "t.url || '/' || g"})

    org, name, ident = await _middle(
        pg_dsn, "SELECT org_id, name, id FROM principals ORDER BY name, id"
    )
    params = {"org": org, "limit": PAGE + 1, "after_name": name, "after_id": ident}
    _assert_reads_only_the_page(await _explain(pg_dsn, "principal_page", params), "principals")

    org, model = await _middle(pg_dsn, "SELECT org_id, model FROM rates ORDER BY model")
    params = {"org": org, "limit": PAGE + 1, "after": model}
    _assert_reads_only_the_page(await _explain(pg_dsn, "rate_page", params), "rates")

    at, name = await _middle(pg_dsn, "SELECT created_at, name FROM orgs ORDER BY created_at, name")
    params = {"limit": PAGE + 1, "after_at": at, "after_name": name}
    _assert_reads_only_the_page(await _explain(pg_dsn, "org_page", params), "orgs")

    org, project, ident = await _middle(
        pg_dsn, "SELECT org_id, project_id, id FROM webhook_endpoints ORDER BY id"
    )
    for project_id in (None, project):
        params = {
            "org": org,
            "project_id": project_id,
            "hidden": [],
            "limit": PAGE + 1,
            "after": ident,
        }
        plan = await _explain(pg_dsn, "endpoint_page", params)
        _assert_reads_only_the_page(plan, "webhook_endpoints")
