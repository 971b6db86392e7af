"""Growth made visible: table sizes, event partitions, the oldest waiting deliveries, the last prune.

``skift admin stats`` and ``skift serve``'s ``/metrics`` read this (docs/operations.md).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

import attrs

from ._retention import PruneReport
from ._webhook_records import DeliveryStats

if TYPE_CHECKING:
    from ._store import Store

__all__ = ["StoreStats", "TableStat", "store_stats"]


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


async def store_stats(store: Store) -> StoreStats:
    """The store's tables (largest first), the events table's partitions, webhook
    deliveries by state with the oldest pending and parked, and the last prune run."""
    return await store.store_stats()
