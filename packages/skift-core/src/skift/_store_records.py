"""The store's own records: what a prune run did, and how big the store is (no rules).

Below the store protocol (``_store``), which returns them; ``_retention`` and ``_growth``
hold the operations over them.
"""

from __future__ import annotations

from datetime import datetime

import attrs

from ._webhook_records import DeliveryStats

__all__ = ["PruneReport", "StoreStats", "TableStat"]


@attrs.frozen
class PruneReport:
    """What one prune run removed (or, with ``dry_run``, would remove).

    ``ran`` is False when another run held the lock (nothing was read or removed).
    ``requests_before`` / ``claim_cursors_before``: the cut-offs used.
    """

    at: datetime
    dry_run: bool
    ran: bool
    requests: int
    claim_cursors: int
    requests_before: datetime
    claim_cursors_before: datetime
    #: event partitions created ahead by this run (PostgreSQL; never on a dry run)
    partitions_created: int = 0
    #: blob rows untouched since ``blobs_before`` that no artifact names, and files of
    #: bytes no organization records any more (``Limits.blob_grace``)
    blobs: int = 0
    blob_files: int = 0
    blobs_before: datetime | None = None


@attrs.frozen
class TableStat:
    """One table: its name, rows (PostgreSQL: the planner's estimate, as of the last
    ANALYZE; memory: exact) and bytes on disk with indexes and TOAST (None in memory).
    ``bound``: a partition's range (empty for a table)."""

    name: str
    rows: int
    bytes: int | None
    bound: str = ""


@attrs.frozen
class StoreStats:
    """How big the store is and what waits in it (every organization)."""

    tables: tuple[TableStat, ...]
    event_partitions: tuple[TableStat, ...]
    deliveries: DeliveryStats
    oldest_parked_at: datetime | None
    last_prune: PruneReport | None
