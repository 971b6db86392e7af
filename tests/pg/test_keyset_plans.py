"""A keyset page reads only its own rows (issue 30, AIP-158): PostgreSQL's plan of a page
deep into a long list, asked with EXPLAIN ANALYZE, reads the table from the page's
key on through an index, ``limit + 1`` rows (an offset read every row before it)."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
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
    async with await psycopg.AsyncConnection.connect(pg_dsn, autocommit=True) as conn:
        # copies of the delivery, sealed (one open delivery per endpoint), a second apart
        cur = await conn.execute(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_name = 'webhook_deliveries' ORDER BY ordinal_position"
        )
        columns = [str(r[0]) for r in await cur.fetchall()]
        made = {
            "id": "md5(d.id::text || g)::uuid",
            "sealed_at": "coalesce(d.sealed_at, now())",
            "created_at": "d.created_at - g * interval '1 second'",
        }
        select = ", ".join(made.get(c, f"d.{c}") for c in columns)
        await conn.execute(
            f"INSERT INTO webhook_deliveries ({', '.join(columns)}) "
            f"SELECT {select} FROM webhook_deliveries d, generate_series(1, %(n)s) g".encode(),
            {"n": ROWS},
        )
        await conn.execute("ANALYZE webhook_deliveries")
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
    async with await psycopg.AsyncConnection.connect(pg_dsn, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_name = 'nodes' AND is_generated = 'NEVER' ORDER BY ordinal_position"
        )
        columns = [str(r[0]) for r in await cur.fetchall()]
        made = {"id": "md5(n.id::text || g)::uuid", "number": "n.number + g"}
        select = ", ".join(made.get(c, f"n.{c}") for c in columns)
        await conn.execute(
            f"INSERT INTO nodes ({', '.join(columns)}) "
            f"SELECT {select} FROM nodes n, generate_series(1, %(n)s) g".encode(),
            {"n": ROWS},
        )
        await conn.execute("ANALYZE nodes")
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
