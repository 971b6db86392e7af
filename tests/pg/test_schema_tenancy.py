"""The schema against docs/operations.md's plan for a Citus deployment distributed by
organization (issues 17, 33): every table carries ``org_id``, and in every table distributed
by it ``org_id`` leads every unique index (primary keys included) and every foreign key
between two of them: none lacks it (migration 0025). The tables that do not follow it are
listed here, each with its reason, and the documentation names every one, so neither the
schema nor the page can drift.

A new table without ``org_id``, a unique index or a foreign key without it in front fails
here until it is keyed by organization or its table is listed (with a reason) here and in
the docs.
"""

from __future__ import annotations

import re
from pathlib import Path

import psycopg

DOCS = Path(__file__).resolve().parents[2] / "docs" / "operations.md"
SECTION = "### Citus: distributed by organization"

SERVER_WIDE: dict[str, str] = {
    "orgs": "the organizations themselves: a reference table under Citus",
    "skift_migrations": "which migrations ran: one per database",
    "server_secrets": "keys the servers share (board sessions): one set per deployment",
    "prune_runs": "the last prune over every organization (retention is server-wide)",
    "event_partitioning": "how the events table is partitioned: one row per database",
}
"""Tables without ``org_id``: server-wide by design (reference or coordinator-only tables)."""

REFERENCE: dict[str, str] = {
    "identities": "a caller's uid, token digest or OIDC subject is looked up before its "
    "organization is known (identities_live is unique across organizations)",
    "signins": "a board sign-in code or session is looked up by its digest alone",
}
"""Tables with ``org_id`` that are Citus reference tables (on every node), and why: keyed
across organizations by what is looked up before the organization is known."""

_TABLES = """
SELECT c.relname,
       EXISTS (SELECT 1 FROM pg_attribute a
               WHERE a.attrelid = c.oid AND a.attname = 'org_id' AND NOT a.attisdropped)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition
"""

_UNIQUE_NOT_BY_ORG = """
SELECT t.relname, i.relname
FROM pg_index x
JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_class t ON t.oid = x.indrelid
JOIN pg_namespace n ON n.oid = t.relnamespace
JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = x.indkey[0]
WHERE n.nspname = 'public' AND x.indisunique AND NOT t.relispartition AND a.attname <> 'org_id'
"""

_FOREIGN_KEYS = """
SELECT c.conrelid::regclass::text, c.conname, c.confrelid::regclass::text,
       (SELECT attname FROM pg_attribute WHERE attrelid = c.conrelid AND attnum = c.conkey[1]),
       (SELECT attname FROM pg_attribute WHERE attrelid = c.confrelid AND attnum = c.confkey[1])
FROM pg_constraint c
WHERE c.contype = 'f' AND c.connamespace = 'public'::regnamespace AND c.conparentid = 0
"""


def _section() -> str:
    text = DOCS.read_text()
    start = text.index(SECTION)
    end = text.find("\n## ", start)
    return text[start : end if end != -1 else len(text)]


def test_every_table_is_keyed_by_org_or_listed(pg_dsn: str) -> None:
    with psycopg.connect(pg_dsn) as conn:
        tables = dict(conn.execute(_TABLES).fetchall())
        unique = conn.execute(_UNIQUE_NOT_BY_ORG).fetchall()
        fks = conn.execute(_FOREIGN_KEYS).fetchall()
    without_org = {name for name, has in tables.items() if not has}
    assert without_org == set(SERVER_WIDE), (
        "tables without org_id changed: key new tables by org_id, or list them in "
        "SERVER_WIDE and docs/operations.md with the reason"
    )
    assert set(REFERENCE) <= set(tables)
    distributed = {name for name, has in tables.items() if has} - set(REFERENCE)
    lacking = sorted(index for table, index in unique if table in distributed)
    assert lacking == [], (
        f"unique indexes whose first column is not org_id: {lacking}; lead them with "
        "org_id (a new migration), or make the table a reference table (REFERENCE and "
        "docs/operations.md, with the reason)"
    )
    keyed = {name for name, has in tables.items() if has}
    bad = sorted(
        f"{table}.{name} -> {target}"
        for table, name, target, first, target_first in fks
        if table in keyed and target in keyed and (first, target_first) != ("org_id", "org_id")
    )
    assert bad == [], f"foreign keys between organization-scoped tables without org_id: {bad}"


def test_the_docs_name_every_exception() -> None:
    section = _section()
    named = set(re.findall(r"`([a-z_]+)`", section))
    missing = (set(SERVER_WIDE) | set(REFERENCE)) - named
    assert not missing, f"docs/operations.md ({SECTION}) does not name {sorted(missing)}"
