"""One transaction's plumbing: running named queries on its connection, scoped to its
organization, and the transaction's clock.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from skift import Project

from ._queries import q
from ._rows import Conn, Row


class TxBase:
    """A connection inside one transaction in one organization, and named queries over it."""

    def __init__(
        self,
        conn: Conn,
        org_id: UUID,
        offset: timedelta,
        *,
        secret: Callable[[str], Awaitable[bytes]],
    ) -> None:
        self._conn = conn
        self._secret = secret
        self._org = org_id
        self._offset = offset
        self._now: datetime | None = None
        # Project rows read in this transaction, by id and by slug. A project
        # is read again and again while one request runs (its slug for every
        # reference, its hold and archive for every write); writes through this
        # transaction drop the entry, and a locked read always goes to the row.
        self._projects: dict[UUID, Project] = {}
        self._slugs: dict[str, UUID] = {}
        self.wrote = False
        # Whether a statement of this transaction already asked PostgreSQL to wake
        # ClaimNext waiters at commit (insert_event does), so `notify` need not.
        self.notified = False

    async def send(self, name: str, /, **params: Any) -> None:
        """A write whose row count nobody reads."""
        await self._conn.execute(q(name), {"org": self._org, **params})
        self.wrote = True

    async def _send_many(self, name: str, params: Sequence[Row]) -> None:
        """One statement per row, sent as one batch (psycopg pipelines executemany);
        a single row goes as a plain statement (a pipeline costs two more round trips)."""
        if len(params) == 1:
            await self._conn.execute(q(name), params[0])
        else:
            async with self._conn.cursor() as cur:
                await cur.executemany(q(name), params)
        self.wrote = True

    @property
    def org_id(self) -> UUID:
        return self._org

    async def secret(self, name: str) -> bytes:
        return await self._secret(name)  # the store's, cached after the first read

    async def exec(self, name: str, /, **params: Any) -> None:
        await self._conn.execute(q(name), {"org": self._org, **params})

    async def write(self, name: str, /, **params: Any) -> int:
        cur = await self._conn.execute(q(name), {"org": self._org, **params})
        self.wrote = True
        return cur.rowcount

    async def rows(self, name: str, /, **params: Any) -> list[Row]:
        cur = await self._conn.execute(q(name), {"org": self._org, **params})
        return await cur.fetchall()

    async def row(self, name: str, /, **params: Any) -> Row | None:
        cur = await self._conn.execute(q(name), {"org": self._org, **params})
        return await cur.fetchone()

    async def now(self) -> datetime:
        if self._now is None:
            row = await self.row("now", offset=self._offset)
            assert row is not None
            self._now = row["now"]
            return row["now"]
        return self._now
