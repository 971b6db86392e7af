"""skift's PostgreSQL store.

``skift.open("postgresql://…")`` finds this package through the
``skift.stores`` entry point. Migrations are applied (under an advisory lock)
when a store is opened with ``migrate=True``, the default for
``skift.open``; ``skift_pg.migrate(dsn)`` applies them on its own.
"""

from __future__ import annotations

from skift import Limits

from ._migrate import migrate, migrations
from ._store import PgStore, PgTx

__all__ = ["MigratingPgStore", "PgStore", "PgTx", "migrate", "migrations", "open_store"]


class MigratingPgStore(PgStore):
    """A PgStore that brings the schema up to date when it first connects."""

    async def _ensure_open(self) -> None:
        if not self._opened:
            async with self._open_lock:
                if not self._opened:
                    await migrate(self.dsn)
        await super()._ensure_open()


def open_store(url: str, *, limits: Limits | None = None, migrate: bool = True) -> PgStore:
    """The entry point behind ``skift.open("postgresql://…")``."""
    cls = MigratingPgStore if migrate else PgStore
    return cls(url, limits=limits)
