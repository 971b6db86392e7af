"""Pruning what is not audit in PostgreSQL (skift._retention): one run under an advisory
lock; and the store's growth (skift._growth): table sizes, partitions, waiting deliveries."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

import psycopg

from skift import BlobStore, PruneReport, StoreStats, TableStat

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


async def sweep_blobs(
    conn: Conn,
    offset: timedelta,
    blobs: BlobStore,
    *,
    grace: timedelta,
    dry_run: bool,
    run_at: datetime | None,
) -> tuple[int, int]:
    """Blob rows untouched for ``grace`` that no artifact names, then the bytes of those
    digests when no organization records them any more (each under the digest's upload
    lock, taken exclusively: bytes an upload is writing are left until its row commits).
    Only bytes whose rows this run removed are deleted: a blob directory some other
    database shares keeps whatever it holds for that one. Returns (rows, files)."""
    async with conn.transaction():
        # "now" also reads an organization's restricted projects: none here (org None)
        cur = await conn.execute(q("now"), {"offset": offset, "org": None})
        row = await cur.fetchone()
        assert row is not None
        params = {"before": row["now"] - grace}
        if dry_run:
            cur = await conn.execute(q("blob_rows_count"), params)
            n = await cur.fetchone()
            return (int(n["n"]), int(n["files"])) if n else (0, 0)
        cur = await conn.execute(q("blob_rows_lock"), params)
        locked = await cur.fetchall()
        cur = await conn.execute(
            q("blob_rows_delete"),
            {"orgs": [r["org_id"] for r in locked], "digests": [r["digest"] for r in locked]},
        )
        removed = await cur.fetchall()
    files = 0
    for digest in sorted({r["digest"] for r in removed}):
        async with conn.transaction():
            cur = await conn.execute(q("blob_sweep_lock"), {"digest": digest})
            got = await cur.fetchone()
            if not (got and got["got"]):
                continue  # an upload is writing these bytes: its row keeps them
            cur = await conn.execute(q("blob_unrecorded"), {"digest": digest})
            still = await cur.fetchone()
            if still and still["unrecorded"] and await blobs.delete(digest):
                files += 1
    if run_at is not None:
        await conn.execute(
            q("record_blob_sweep"), {"blobs": len(removed), "files": files, "at": run_at}
        )
    return len(removed), files


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
        blobs=row["blobs"],
        blob_files=row["blob_files"],
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
