"""skift's PostgreSQL store.

``skift.open("postgresql://…")`` finds this package through the
``skift.stores`` entry point. Migrations are applied (under an advisory lock)
when a store is opened with ``migrate=True``, the default for
``skift.open``; ``skift_pg.migrate(dsn)`` applies them on its own.

Behind PgBouncer in transaction mode (docs/operations.md): the URL's ``pooler``
query parameter says so (``pooler=transaction``; found out when absent, see
:class:`PgStore`), and ``listen_dsn`` names a direct connection for LISTEN.
"""

from __future__ import annotations

import os

from skift import FileBlobStore, Invalid, Limits

from ._migrate import migrate, migrations, split_params
from ._partitions import ArchivedPartition, archive_events, attach_events
from ._store import PgStore, PgTx

__all__ = [
    "ArchivedPartition",
    "MigratingPgStore",
    "PgStore",
    "PgTx",
    "archive_events",
    "attach_events",
    "migrate",
    "migrations",
    "open_store",
    "split_params",
]


class MigratingPgStore(PgStore):
    """A PgStore that brings the schema up to date when it first connects."""

    async def _ensure_open(self) -> None:
        if not self._opened:
            async with self._open_lock:
                if not self._opened:
                    await migrate(self.dsn)
        await super()._ensure_open()


def open_store(
    url: str,
    *,
    limits: Limits | None = None,
    migrate: bool = True,
    blobs: str | os.PathLike[str] | None = None,
) -> PgStore:
    """The entry point behind ``skift.open("postgresql://…")``.

    Blob bytes go to ``blobs``, else the URL's ``blobs=DIR`` query parameter
    (removed before connecting), else ``skift.default_blob_dir()``.
    """
    dsn, params = split_params(url)
    where = blobs or params.get("blobs")
    pooler = params.get("pooler")
    if pooler not in (None, "transaction", "transaction-prepared", "none"):
        raise Invalid(
            f"pooler={pooler!r} in the DSN",
            next="Use pooler=transaction (PgBouncer), pooler=transaction-prepared (PgBouncer"
            " 1.21+ with max_prepared_statements set) or pooler=none.",
        )
    cls = MigratingPgStore if migrate else PgStore
    return cls(
        dsn,
        limits=limits,
        blobs=FileBlobStore(where) if where else None,
        listen_dsn=params.get("listen_dsn"),
        pooled=None if pooler is None else pooler != "none",
        pooler_prepares=pooler == "transaction-prepared",
    )
