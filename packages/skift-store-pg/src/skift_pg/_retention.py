"""Pruning what is not audit in PostgreSQL (skift._retention): one run under an advisory lock."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import psycopg

from skift import PruneReport

from ._queries import q

# an arbitrary constant naming "skift's prune lock" among advisory locks
PRUNE_LOCK_KEY = 0x736B696674_02

Conn = psycopg.AsyncConnection[dict[str, Any]]


async def prune(
    conn: Conn,
    offset: timedelta,
    *,
    request_retention: timedelta,
    claim_cursor_retention: timedelta,
    dry_run: bool,
) -> PruneReport:
    """One run in one transaction on ``conn``; nothing when another run holds the lock."""
    async with conn.transaction():
        cur = await conn.execute(q("prune_lock"), {"key": PRUNE_LOCK_KEY, "offset": offset})
        lock = await cur.fetchone()
        assert lock is not None
        now = lock["now"]
        params = {
            "requests_before": now - request_retention,
            "cursors_before": now - claim_cursor_retention,
            "now": now,
        }
        counts: dict[str, Any] = {"requests": 0, "claim_cursors": 0}
        if lock["got"]:
            cur = await conn.execute(q("prune_count" if dry_run else "prune_delete"), params)
            row = await cur.fetchone()
            assert row is not None
            counts = row
        return PruneReport(
            at=now,
            dry_run=dry_run,
            ran=bool(lock["got"]),
            requests=int(counts["requests"]),
            claim_cursors=int(counts["claim_cursors"]),
            requests_before=params["requests_before"],
            claim_cursors_before=params["cursors_before"],
        )


async def last_prune(conn: Conn) -> PruneReport | None:
    cur = await conn.execute(q("last_prune"))
    row = await cur.fetchone()
    if row is None:
        return None
    return PruneReport(
        at=row["at"],
        dry_run=False,
        ran=True,
        requests=row["requests"],
        claim_cursors=row["claim_cursors"],
        requests_before=row["requests_before"],
        claim_cursors_before=row["claim_cursors_before"],
    )
