"""The schema against docs/operations.md's plan for a Citus deployment distributed by
organization (issue 17): every table carries ``org_id`` and every unique index (primary
keys included) contains it, except the ones listed here, each with its reason; and the
documentation names every exception, so neither the schema nor the page can drift.

A new table without ``org_id``, or a new unique index without it, fails here until it
is keyed by organization or listed (with a reason) here and in the docs.
"""

from __future__ import annotations

import re
from pathlib import Path

import psycopg

DOCS = Path(__file__).resolve().parents[2] / "docs" / "operations.md"
SECTION = "### Beyond one PostgreSQL primary"

SERVER_WIDE: dict[str, str] = {
    "orgs": "the organizations themselves: a reference table under Citus",
    "skift_migrations": "which migrations ran: one per database",
    "server_secrets": "keys the servers share (board sessions): one set per deployment",
    "prune_runs": "the last prune over every organization (retention is server-wide)",
    "event_partitioning": "how the events table is partitioned: one row per database",
}
"""Tables without ``org_id``: server-wide by design (reference or coordinator-only tables)."""

GLOBAL_KEYS: dict[str, str] = {
    # unique by a global id (a ULID) today; (org_id, id) under Citus, with the
    # foreign keys that point at them made (org_id, x_id)
    "artifacts_pkey": "artifacts by id",
    "budgets_pkey": "budgets by the project or node they scope",
    "comment_revisions_pkey": "a comment's revisions by (comment, n)",
    "comments_pkey": "comments by id",
    "edges_pkey": "edges by (to, from, kind)",
    "events_pkey": "events by (id, occurred_at), the partition key",
    "identities_pkey": "identities by id",
    "leases_pkey": "leases by id, the fencing token",
    "nodes_pkey": "nodes by id",
    "principals_pkey": "principals by id",
    "projects_pkey": "projects by id",
    "usage_records_pkey": "usage records by id",
    "webhook_deliveries_pkey": "deliveries by id",
    "webhook_endpoints_pkey": "endpoints by id",
    # unique within a row of another table: that row's org is this one's
    "leases_one_unreleased": "one unreleased lease per node",
    "nodes_project_id_number_key": "one number per project",
    "node_origins_pkey": "one origin per (node, source)",
    "node_origins_project_id_source_external_id_key": "one node per external id in a project",
    "webhook_deliveries_open": "one open delivery per endpoint",
    # across organizations by design
    "identities_live": "a live identity names one principal across every organization "
    "(the transport's lookup comes before the org is known): a reference table, or a "
    "directory table keyed by (scheme, value), under Citus",
    "signins_pkey": "a sign-in code is looked up by its digest before its org is known",
}
"""Unique indexes of org-scoped tables that do not contain ``org_id``, and why."""

_TABLES = """
SELECT c.relname,
       EXISTS (SELECT 1 FROM pg_attribute a
               WHERE a.attrelid = c.oid AND a.attname = 'org_id' AND NOT a.attisdropped)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition
"""

_UNIQUE_WITHOUT_ORG = """
SELECT t.relname, i.relname
FROM pg_index x
JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_class t ON t.oid = x.indrelid
JOIN pg_namespace n ON n.oid = t.relnamespace
WHERE n.nspname = 'public' AND x.indisunique AND NOT t.relispartition
  AND NOT EXISTS (SELECT 1 FROM pg_attribute a
                  WHERE a.attrelid = t.oid AND a.attname = 'org_id'
                    AND a.attnum = ANY (x.indkey))
"""


def _section() -> str:
    text = DOCS.read_text()
    start = text.index(SECTION)
    end = text.find("\n## ", start)
    return text[start : end if end != -1 else len(text)]


def test_every_table_is_keyed_by_org_or_listed(pg_dsn: str) -> None:
    with psycopg.connect(pg_dsn) as conn:
        tables = dict(conn.execute(_TABLES).fetchall())
        unique = conn.execute(_UNIQUE_WITHOUT_ORG).fetchall()
    without_org = {name for name, has in tables.items() if not has}
    assert without_org == set(SERVER_WIDE), (
        "tables without org_id changed: key new tables by org_id, or list them in "
        "SERVER_WIDE and docs/operations.md with the reason"
    )
    org_tables = {name for name, has in tables.items() if has}
    found = {index for table, index in unique if table in org_tables}
    assert found == set(GLOBAL_KEYS), (
        "unique indexes without org_id changed: include org_id, or list the index in "
        "GLOBAL_KEYS and docs/operations.md with the reason"
    )


def test_the_docs_name_every_exception() -> None:
    section = _section()
    named = set(re.findall(r"`([a-z_]+)`", section))
    missing = (set(SERVER_WIDE) | set(GLOBAL_KEYS)) - named
    assert not missing, f"docs/operations.md ({SECTION}) does not name {sorted(missing)}"
