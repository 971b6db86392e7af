"""skift's PostgreSQL store.

``skift.open("postgresql://…")`` finds this package through the
``skift.stores`` entry point. Migrations are applied (under an advisory lock)
when a store is opened with ``migrate=True``, the default for
``skift.open``; ``skift_pg.migrate(dsn)`` applies them on its own.
"""

from __future__ import annotations

import os
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from skift import FileBlobStore, Limits

from ._migrate import migrate, migrations
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
    dsn, from_url = _split_blobs(url)
    where = blobs or from_url
    cls = MigratingPgStore if migrate else PgStore
    return cls(dsn, limits=limits, blobs=FileBlobStore(where) if where else None)


def _split_blobs(url: str) -> tuple[str, str | None]:
    """The DSN without its ``blobs`` query parameter, and that parameter's value."""
    parts = urlsplit(url)
    if not parts.query:
        return url, None
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    found = [v for k, v in pairs if k == "blobs"]
    if not found:
        return url, None
    rest = urlencode([(k, v) for k, v in pairs if k != "blobs"])
    return urlunsplit(parts._replace(query=rest)), found[-1] or None
