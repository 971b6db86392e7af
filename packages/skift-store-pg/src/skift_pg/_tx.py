"""One transaction's plumbing: running named queries on its connection, scoped to its
organization, and the transaction's clock.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any, Final
from uuid import UUID

from psycopg import sql

from skift import Project, Restriction

from ._queries import q
from ._rows import Conn, Row

COPY_FROM: Final = 64
"""From this many rows a batch insert goes as COPY (an import's thousands of nodes, edges,
comments and events): rows streamed, several times faster than a pipeline."""

COPY_ROWS: Final = 2000
"""Rows a COPY statement carries at most: each statement stays far inside the statement
timeout however large the batch (100,000 nodes are 50 statements)."""


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
        # the organization's restricted projects, read with the clock (see _prime)
        self._restricted: list[Restriction] | None = None
        # the digest of the organization's stored policy, read with the clock too
        self._policy_digest: str | None = None
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

    async def _copy(
        self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]
    ) -> None:
        """``COPY table (columns) FROM STDIN``: many rows in one statement (defaults, checks,
        foreign keys and triggers apply as for INSERT)."""
        query = sql.SQL("COPY {} ({}) FROM STDIN").format(
            sql.Identifier(table), sql.SQL(", ").join(sql.Identifier(c) for c in columns)
        )
        async with self._conn.cursor() as cur, cur.copy(query) as copy:
            for row in rows:
                await copy.write_row(row)
        self.wrote = True

    async def _insert_rows(self, name: str, table: str, params: Sequence[Row]) -> None:
        """Insert rows: the named statement per row for a few, COPY for many. The columns
        are the parameters' names (``org`` is ``org_id``)."""
        if len(params) < COPY_FROM:
            await self._send_many(name, params)
            return
        keys = list(params[0])
        columns = ["org_id" if k == "org" else k for k in keys]
        for start in range(0, len(params), COPY_ROWS):
            part = params[start : start + COPY_ROWS]
            await self._copy(table, columns, ([p[k] for k in keys] for p in part))

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
            await self._prime()
        assert self._now is not None
        return self._now

    async def _prime(self) -> None:
        """The clock (kept once read), the restricted projects and the stored policy's digest,
        in one statement."""
        row = await self.row("now", offset=self._offset)
        assert row is not None
        self._keep(row)

    def _keep(self, row: Row) -> None:
        """Keep the clock, the restricted projects and the stored policy's digest a statement
        brought along."""
        if self._now is None:
            self._now = row["now"]
        self._restricted = [
            Restriction(
                project_id=UUID(r["id"]),
                slug=r["slug"],
                readers=tuple(UUID(x) for x in r["readers"]),
                names=tuple(r["names"]),
            )
            for r in row["restricted"]
        ]
        self._policy_digest = row["policy_digest"]

    async def org_policy_digest(self) -> str:
        if self._policy_digest is None:
            await self._prime()
        assert self._policy_digest is not None
        return self._policy_digest

    async def restricted_projects(self) -> list[Restriction]:
        if self._restricted is None:
            await self._prime()
        assert self._restricted is not None
        return self._restricted
