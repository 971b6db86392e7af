"""The database behind a server, for the command line's set-up and maintenance: apply the
migrations, open a store, archive and attach event partitions, on a DSN or on the embedded
cluster (started for the call and stopped after it).

``skift migrate`` and ``skift admin`` reach PostgreSQL through these (skift_server's public
API), so the command line never imports the store package itself (the import contract
``cli-on-the-client``). Each imports ``skift_pg`` when called: importing this module loads
nothing of it.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import skift
    from skift_pg import ArchivedPartition as ArchivedPartition

T = TypeVar("T")

__all__ = [
    "archive_events",
    "attach_events",
    "migrate",
    "on_database",
    "on_store",
    "store_installed",
]


def store_installed() -> bool:
    """Whether the PostgreSQL store (the skift-store-pg package) is installed."""
    return importlib.util.find_spec("skift_pg") is not None


async def on_database(
    dsn: str | None, data_dir: str | None, run: Callable[[str], Awaitable[T]]
) -> T:
    """Run ``run`` with ``dsn``, or (None) with the DSN of the embedded cluster in
    ``data_dir`` (else its default directory), started for the call and stopped after."""
    if dsn is not None:
        return await run(dsn)
    from skift_pg.embedded import EmbeddedCluster, default_data_dir

    cluster: Any = EmbeddedCluster(Path(data_dir) if data_dir else default_data_dir())
    target: str = cluster.start()
    try:
        return await run(target)
    finally:
        cluster.stop()


async def on_store(
    dsn: str | None, data_dir: str | None, run: Callable[[skift.Store], Awaitable[T]]
) -> T:
    """Run ``run`` over a store of the database :func:`on_database` reaches (one
    connection, no change-stream listener)."""

    async def on(target: str) -> T:
        import skift_pg

        store = skift_pg.PgStore(target, min_size=1, max_size=1, listen=False)
        try:
            return await run(store)
        finally:
            await store.close()

    return await on_database(dsn, data_dir, on)


async def migrate(target: str) -> list[str]:
    """Apply skift's migrations to the database at ``target``; the names applied."""
    import skift_pg

    return await skift_pg.migrate(target)


async def archive_events(
    target: str, before: datetime, to: Path, *, dry_run: bool
) -> list[ArchivedPartition]:
    """``skift_pg.archive_events``: the event partitions before ``before`` to file ``to``."""
    import skift_pg

    return await skift_pg.archive_events(target, before, to, dry_run=dry_run)


async def attach_events(target: str, file: Path) -> list[ArchivedPartition]:
    """``skift_pg.attach_events``: an archive's event partitions attached back."""
    import skift_pg

    return await skift_pg.attach_events(target, file)
