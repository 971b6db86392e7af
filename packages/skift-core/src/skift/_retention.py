"""Retention of what is not audit: idempotency records and claim cursors past their windows.

Events are the audit record and are kept for ever. What only serves a short
purpose is pruned: a request id's stored result once no client retry can come
(``Limits.request_retention``), and a claim cursor (where a principal's
round-robin across projects stands, per filter) unused for
``Limits.claim_cursor_retention``. A pruned request id is never applied twice:
its events still carry it, so a repeat is refused naming when it was applied.
A pruned claim cursor only means the next claim with that filter starts the
rotation from the first project.

:func:`prune` is an operator's call over the whole store (every organization):
``skift serve`` runs it on a schedule and ``skift admin prune`` on demand. Two
runs over one database never overlap (PostgreSQL: an advisory lock; a run that
finds it taken does nothing and says so).
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import TYPE_CHECKING

import attrs

from ._errors import IdempotencyMismatch
from ._limits import DEFAULT_LIMITS, Limits
from ._store_records import PruneReport

if TYPE_CHECKING:
    from uuid import UUID

    from ._store import Store, Tx

__all__ = ["prune"]

log = logging.getLogger("skift.retention")


async def prune(
    store: Store, *, limits: Limits = DEFAULT_LIMITS, dry_run: bool = False
) -> PruneReport:
    """Remove idempotency records older than ``limits.request_retention``, claim
    cursors unused for ``limits.claim_cursor_retention`` and blobs unreferenced for
    ``limits.blob_grace`` (rows, then the bytes no organization records), in every
    organization.

    With ``dry_run`` nothing is removed and the counts are what would be. Each run
    that removes something is recorded (``store.last_prune()``) and logged with its
    counts.
    """
    report = await store.prune(
        request_retention=limits.request_retention,
        claim_cursor_retention=limits.claim_cursor_retention,
        dry_run=dry_run,
    )
    if report.ran:
        rows, files = await store.sweep_blobs(
            grace=limits.blob_grace, dry_run=dry_run, run_at=None if dry_run else report.at
        )
        report = attrs.evolve(
            report, blobs=rows, blob_files=files, blobs_before=report.at - limits.blob_grace
        )
    if not report.ran:
        log.info("prune skipped: another run holds the lock")
    else:
        log.info(
            "prune%s: %d request records, %d claim cursors, %d blobs (%d files), "
            "%d event partitions created",
            " (dry run)" if dry_run else "",
            report.requests,
            report.claim_cursors,
            report.blobs,
            report.blob_files,
            report.partitions_created,
        )
    return report


async def refuse_pruned_request(
    tx: Tx, principal_id: UUID, request_id: str, window: timedelta
) -> None:
    """Refuse a request id whose record was pruned: its events still carry it.

    Called for a request id the idempotency records do not know (so it is new, or
    its record was pruned); a record that was pruned is never applied again.
    """
    applied = await tx.request_applied_at(principal_id, request_id)
    if applied is None:
        return
    raise IdempotencyMismatch(
        f"request id {request_id!r} was already applied at {applied:%Y-%m-%d %H:%M:%S} UTC, "
        f"longer ago than idempotency results are kept ({_days(window)}); it is not applied "
        "again",
        next="Use a fresh request id for new content; this one's changes are in the events.",
    )


def _days(window: timedelta) -> str:
    days = window.total_seconds() / 86400
    return f"{days:g} day" + ("" if days == 1 else "s")
