"""Growth made visible: table sizes, event partitions, the oldest waiting deliveries, the last prune.

``skift admin stats`` and ``skift serve``'s ``/metrics`` read this (docs/operations.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._store_records import StoreStats

if TYPE_CHECKING:
    from ._store import Store

__all__ = ["store_stats"]


async def store_stats(store: Store) -> StoreStats:
    """The store's tables (largest first), the events table's partitions, webhook
    deliveries by state with the oldest pending and parked, and the last prune run."""
    return await store.store_stats()
