"""Pruning what is not audit in PostgreSQL (skift._retention): one run under an advisory
lock; and the store's growth (skift._growth): table sizes, partitions, waiting deliveries."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import psycopg

from skift import PruneReport, StoreStats, TableStat

from . import _webhooks as webhooks
from ._queries import q

# an arbitrary constant naming "skift's prune lock" among advisory locks
PRUNE_LOCK_KEY = 0x736B696674_02

log = logging.getLogger("skift.retention")

Conn = psycopg.AsyncConnection[dict[str, Any]]


async def prune(
    conn: Conn,
    offset: timedelta,
    *,
    request_retention: timedelta,
    claim_cursor_retention: timedelta,
    dry_run: bool,
) -> PruneReport:
    """One run in one transaction on ``conn``; nothing when another run holds the lock.

    Event partitions ahead of the present are created first, in a transaction of their own
    (under the partition lock, giving up after a few seconds behind a long reader: the
    default partition takes any event meanwhile and the next run retries)."""
    made = 0
    if not dry_run:
        made = await extend_partitions(conn, offset)
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
            partitions_created=made,
        )


async def extend_partitions(conn: Conn, offset: timedelta) -> int:
    """Create the event partitions the present and the configured time ahead need; how many
    were created (0 when the lock wait timed out: logged, retried by the next run)."""
    try:
        async with conn.transaction():
            await conn.execute(q("partition_lock_timeout"))
            cur = await conn.execute(q("extend_event_partitions"), {"offset": offset})
            row = await cur.fetchone()
    except psycopg.errors.LockNotAvailable:
        log.warning("creating event partitions timed out waiting for a lock; the next run retries")
        return 0
    return int(row["made"]) if row else 0


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


async def store_stats(conn: Conn) -> StoreStats:
    def table(row: dict[str, Any]) -> TableStat:
        return TableStat(
            name=row["name"], rows=row["rows"], bytes=row["bytes"], bound=row.get("bound") or ""
        )

    tables = await (await conn.execute(q("table_sizes"))).fetchall()
    parts = await (await conn.execute(q("event_partitions"))).fetchall()
    parked = await (await conn.execute(q("oldest_parked"))).fetchone()
    return StoreStats(
        tables=tuple(table(r) for r in tables),
        event_partitions=tuple(table(r) for r in parts),
        deliveries=await webhooks.stats(conn),
        oldest_parked_at=parked["at"] if parked else None,
        last_prune=await last_prune(conn),
    )
