"""Numbered ``.sql`` migrations, applied in order under an advisory lock.

Each file in ``migrations/`` is applied once, in its own transaction, and
recorded in ``skift_migrations``. Several servers starting at once over one
database serialize on the lock, so exactly one applies each migration. The lock
is a transaction's (taken again by each migration's transaction, which reads what
was applied under it): a pooler in transaction mode (PgBouncer) may run each
transaction on another server connection and keeps no session lock.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from datetime import timedelta
from importlib import resources
from typing import Any, Final
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg

from ._queries import q

_FILE = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")
# an arbitrary constant naming "skift's migration lock" among advisory locks
_LOCK_KEY = 0x736B696674_01


STORE_PARAMS: Final = ("blobs", "listen_dsn", "pooler")
"""Query parameters of a store URL that are skift's, not libpq's (removed before connecting)."""


def split_params(url: str) -> tuple[str, dict[str, str]]:
    """The DSN without skift's query parameters (:data:`STORE_PARAMS`), and their values
    (the last of each; empty ones left out)."""
    parts = urlsplit(url)
    if not parts.query:
        return url, {}
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    found = {k: v for k, v in pairs if k in STORE_PARAMS and v}
    if not any(k in STORE_PARAMS for k, _ in pairs):
        return url, found
    rest = urlencode([(k, v) for k, v in pairs if k not in STORE_PARAMS])
    return urlunsplit(parts._replace(query=rest)), found


def migrations() -> list[tuple[int, str, str]]:
    """(version, name, sql) of every migration shipped, in order."""
    folder = resources.files("skift_pg") / "migrations"
    out: list[tuple[int, str, str]] = []
    for entry in folder.iterdir():
        m = _FILE.match(entry.name)
        if m:
            out.append((int(m.group(1)), entry.name, entry.read_text(encoding="utf-8")))
    out.sort()
    versions = [v for v, _, _ in out]
    if len(set(versions)) != len(versions):
        raise RuntimeError("two migrations share a number")
    return out


async def migrate(dsn: str, *, upto: int | None = None, skip: Collection[int] = ()) -> list[str]:
    """Bring the database at ``dsn`` up to date; returns the names of migrations applied.

    For tests and benchmarks of one migration: ``upto`` stops after that one, ``skip``
    leaves some out (a later run applies them: each is applied once when not recorded).
    """
    dsn, _ = split_params(dsn)
    applied: list[str] = []
    # nothing prepared: behind a pooler the next statement may meet another session
    async with await psycopg.AsyncConnection.connect(
        dsn, autocommit=True, prepare_threshold=None
    ) as conn:
        async with conn.transaction():
            await conn.execute(q("migration_lock"), {"key": _LOCK_KEY})
            await conn.execute(q("migrations_table"))
            done = await _applied(conn)
        for version, name, sql in migrations():
            if version in done or version in skip or (upto is not None and version > upto):
                continue
            async with conn.transaction():
                await conn.execute(q("migration_lock"), {"key": _LOCK_KEY})
                if version in await _applied(conn):  # another migrator was first
                    continue
                await conn.execute(sql.encode())
                await conn.execute(q("record_migration"), {"version": version, "name": name})
            applied.append(name)
        # Partitions ahead of the present (migrations/0012): every migrate run extends them.
        cur = await conn.execute(q("partitioned"))
        row = await cur.fetchone()
        if row is not None and row[0]:
            await conn.execute(q("extend_event_partitions"), {"offset": timedelta()})
    return applied


async def _applied(conn: psycopg.AsyncConnection[Any]) -> set[int]:
    cur = await conn.execute(q("applied_migrations"))
    return {row[0] for row in await cur.fetchall()}
