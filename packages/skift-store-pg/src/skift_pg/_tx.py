"""One transaction's plumbing: running named queries on its connection, scoped to its
organization, and the transaction's clock.

A transaction runs in one psycopg pipeline: BEGIN goes out with the first statement, a
write whose result nobody reads goes out without waiting for its answer (an error in it is
raised by the next read, or at commit), and COMMIT goes with the wake-up of ClaimNext waiters
in one round trip. Only reads wait for PostgreSQL, so a transaction costs one round trip per
read plus one for COMMIT. COPY cannot run in a pipeline: a transaction that copies leaves it
(:meth:`TxBase._unpipe`) and runs the rest statement by statement.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime, timedelta
from functools import partial
from typing import Any, Final, cast
from uuid import UUID

import attrs
import psycopg
from psycopg import AsyncPipeline, pq, sql
from psycopg import _queries as _pgq  # pyright: ignore[reportPrivateUsage]
from psycopg._pipeline_base import BasePipeline  # pyright: ignore[reportPrivateUsage]
from psycopg._preparing import Prepare  # pyright: ignore[reportPrivateUsage]
from psycopg.abc import RV, Params, PQGen, Query, QueryNoTemplate
from psycopg.connection_async import (
    _INTERRUPTED,  # pyright: ignore[reportPrivateUsage]
    _WAIT_INTERVAL,  # pyright: ignore[reportPrivateUsage]
)

from skift import Principal, Project, Restriction, SkiftError

from ._queries import custom_planned, q, queries, seek_planned
from ._rows import Row, principal_from_row
from ._waiting import Interrupted, wait_untimed

COPY_FROM: Final = 64
"""From this many rows a batch insert goes as COPY (an import's thousands of nodes, edges,
comments and events): rows streamed, several times faster than a pipeline."""

COPY_ROWS: Final = 2000
"""Rows a COPY statement carries at most: each statement stays far inside the statement
timeout however large the batch (100,000 nodes are 50 statements)."""


REPLAN_AT: Final = 12
"""The transaction of a connection at which its prepared statements are planned again.

A connection plans each prepared statement generically from its first call
(``plan_cache_mode=force_generic_plan``, see PgStore): PostgreSQL's default plans a statement
for its values five times per connection before it weighs a generic plan, and a claimer
that made a dozen claims on a connection of its own spent most of its PostgreSQL CPU
planning. A generic plan keeps the table sizes of the moment it was made, though, and on a
new database the leases, events and requests tables are empty then (after a VACUUM, which
PostgreSQL believes): their scans were planned as sequential and stayed so while the tables
filled, until autovacuum's next ANALYZE (never, where it is off). Planned again here, about
six claims in, each statement sees the sizes PostgreSQL's default would have shown its
sixth call; and again at each doubling of the count (the 24th, 48th, 96th, ...): a table that
grows between two ANALYZEs (a new database's first minute, where a claim's leases, events and
requests went from nothing to thousands of rows and their scans stayed sequential, the claim
slowing by half within seconds) is planned by its size at most twice as stale, for one plan
per statement per doubling.

The claim's and the complete's statements (``SEEK_PLANNED``) are planned with sequential
scans off, so their plans are index lookups at any size; they are planned again here (the
12th: on tables empty at the first call, two indexes that both answer a lookup cost the same
and the plan may take the wrong one) but not at the doublings after it: a round of them
costs a connection about 10 ms of PostgreSQL's CPU, and 32 claimers on new connections paid
it at their 24th and 48th transactions within the bench's window, for plans that did not
change (docs/benchmarks.md, session 14)."""


def replans_at(transaction: int) -> bool:
    """Whether a connection plans its statements again at its ``transaction``-th transaction
    (counting from 1): the ``REPLAN_AT``-th, then the 24th, 48th, 96th, ..."""
    rounds, rest = divmod(transaction, REPLAN_AT)
    return rest == 0 and rounds > 0 and rounds & (rounds - 1) == 0


def _queue_discarded(pipeline: BasePipeline, pgconn: Any, statement: bytes) -> None:
    """Queue ``statement`` in ``pipeline`` with its result dropped (as psycopg queues its own
    DEALLOCATE): it goes out in order with the statements around it, no round trip more."""
    pipeline.command_queue.append(partial(pgconn.send_query_params, statement, None))
    pipeline.result_queue.append(None)


NO_CAPS: Final = ("no_caps",)
"""The read-ahead key of "no node carries a cap" (get_cursor brings it along)."""


@attrs.frozen(kw_only=True)
class Expected:
    """A complete this transaction was told to expect (GraphTx.expect_complete)."""

    slug: str
    number: int
    lease: UUID | None
    principal: UUID
    rid: str
    sized: bool


def _cache_every_named_query() -> None:
    """Let psycopg keep the parsed form of every named query, however long.

    psycopg parses a query's placeholders once per text and caches the result only for
    texts up to 4,096 bytes (an ORM's queries vary endlessly). skift's are a fixed set,
    and the claim's are longer (they splice the readiness fragments twice, with org_id on
    every key since migration 0025): past the limit each call parsed the text again.
    """
    longest = max(len(text.encode()) for text in queries().values())
    if longest > _pgq.MAX_CACHED_STATEMENT_LENGTH:
        _pgq.MAX_CACHED_STATEMENT_LENGTH = longest


_cache_every_named_query()


_COMBINED: Final[dict[tuple[str, ...], tuple[str, tuple[str, ...]]]] = {
    ("set_cursor", "insert_lease", "insert_event_announced"): (
        "claim_writes",
        ("c_", "l_", ""),
    ),
    ("update_node", "update_lease"): ("complete_lease_writes", ("n_", "l_")),
    ("insert_event_announced", "save_response_fingerprint"): (
        "complete_answer_writes",
        ("", "s_"),
    ),
}
"""Runs of deferred writes that go as one statement (graph.sql): the writes in the order
the engine makes them, and the parameters' prefixes of the statement that makes them all.
A run held back whole is sent at once (PostgreSQL runs it while the engine goes on)."""


def _queue_into_libpq(pipeline: BasePipeline) -> None:
    """Put the statements psycopg queued in ``pipeline`` into libpq's output buffer, in
    order, without a system call: they go out with the next flush (a read's, a sync's, or
    :meth:`PgConn.push`)."""
    queued = pipeline.command_queue
    while queued:
        queued.popleft()()


class PgCursor(psycopg.AsyncCursor[Row]):
    """psycopg's cursor; once it has its rows, the transaction's expected identity (sent
    before every other statement, so answered by then) is judged before they are handed
    back (:meth:`PgConn.confirm_identity`).

    In a pipeline a statement is put into libpq's output buffer and nothing more
    (:meth:`_execute_gen`): psycopg would also flush it to the socket and poll for answers,
    three system calls and a turn of its wait loop a statement. The statements a round
    trip carries go out together when its read flushes (:meth:`_fetch_pipeline`), at a
    sync or COMMIT, or at :meth:`PgConn.push`."""

    def _execute_gen(
        self,
        query: Query,
        params: Params | None = None,
        *,
        prepare: bool | None = None,
        binary: bool | None = None,
    ) -> PQGen[None]:
        # psycopg's BaseCursor._execute_gen (tests/pg/test_pipeline_buffer.py pins its
        # text) less the pipeline's _communicate_gen, which flushes and polls
        pipeline = self._conn._pipeline  # pyright: ignore[reportPrivateUsage]
        if pipeline is None:
            return (yield from super()._execute_gen(query, params, prepare=prepare, binary=binary))  # pyright: ignore[reportPrivateUsage]
        yield from self._start_query(query)  # pyright: ignore[reportPrivateUsage]
        pgq = self._convert_query(query, params)  # pyright: ignore[reportPrivateUsage]
        conn = _conn_of(self)
        key = (pgq.query, pgq.types)
        prepared = conn._prepared  # pyright: ignore[reportPrivateUsage]
        if conn.pooler_prepares:
            # Behind a pooler that keeps prepared statements any Bind may be a server
            # connection's first of the statement (PgBouncer prepares it again on each one it
            # lends, and the plan is made there and then): the claim's and the complete's
            # statements run with sequential scans off, switched once for each run of them
            # in a transaction (set_config(..., true): the transaction's end switches back).
            off = query in seek_planned()
            if off != conn.seqscan_off:
                _queue_discarded(pipeline, self._pgconn, q("seqscan_off" if off else "seqscan_on"))  # pyright: ignore[reportPrivateUsage]
                conn.seqscan_off = off
            seek = False
        else:
            # prepared (so planned) at this statement's Bind: not through a pooler in
            # transaction mode, where nothing is prepared (prepare_threshold None)
            seek = query in seek_planned() and prepared.get(pgq, prepare)[0] is Prepare.SHOULD
        if seek:  # prepared now, so planned at this Bind: without sequential scans
            _queue_discarded(pipeline, self._pgconn, q("seqscan_off"))  # pyright: ignore[reportPrivateUsage]
        yield from self._maybe_prepare_gen(pgq, prepare=prepare, binary=binary)  # pyright: ignore[reportPrivateUsage]
        if seek:
            _queue_discarded(pipeline, self._pgconn, q("seqscan_on"))  # pyright: ignore[reportPrivateUsage]
            conn.seek_keys.add(key)
        _queue_into_libpq(pipeline)
        self._last_query = query  # pyright: ignore[reportPrivateUsage]
        yield from self._conn._prepared.maintain_gen(self._conn)  # pyright: ignore[reportPrivateUsage]

    async def _fetch_pipeline(self) -> None:
        pipeline = self._conn._pipeline  # pyright: ignore[reportPrivateUsage]
        if pipeline is not None and pipeline.command_queue:  # a transaction command's
            _queue_into_libpq(pipeline)
        await super()._fetch_pipeline()  # pyright: ignore[reportPrivateUsage]

    async def fetchone(self) -> Row | None:
        row = await super().fetchone()
        await _conn_of(self).confirm_identity()
        return row

    async def fetchmany(self, size: int = 0) -> list[Row]:
        rows = await super().fetchmany(size)
        await _conn_of(self).confirm_identity()
        return rows

    async def fetchall(self) -> list[Row]:
        rows = await super().fetchall()
        await _conn_of(self).confirm_identity()
        return rows


class PgBoundCursor(psycopg.AsyncClientCursor[Row], PgCursor):
    """:class:`PgCursor` with the values written into the statement's text (psycopg's
    client-side binding): PostgreSQL plans it for them whatever ``plan_cache_mode`` says.
    The queries with optional filters go this way (``custom_planned``)."""


def _conn_of(cur: PgCursor) -> PgConn:
    return cast("PgConn", cur.connection)


class PgConn(psycopg.AsyncConnection[Row]):
    """A pooled connection: psycopg's, with transaction control sent as psycopg sends its own,
    the queries with optional filters never prepared (``custom_planned``), and writes whose
    result nobody reads held back until the next statement (:meth:`defer`)."""

    _deferred: list[tuple[str, Row]] | None = None
    _transactions: int = 0
    # behind a pooler that keeps prepared statements (PgStore's pooler_prepares), and
    # whether this transaction has switched sequential scans off for them (PgCursor)
    pooler_prepares: bool = False
    seqscan_off: bool = False

    async def count_transaction(self) -> None:
        """Count a transaction about to start; at the ``REPLAN_AT``-th, forget every
        prepared statement so that each is planned once more, and at each doubling of that
        count every one but those planned without sequential scans (:data:`REPLAN_AT`)."""
        self._transactions += 1
        if not replans_at(self._transactions):
            return
        if self._transactions == REPLAN_AT:
            await self.execute(b"DEALLOCATE ALL", prepare=False)
            self.seek_keys.clear()
            return
        prepared = self._prepared
        names = prepared._names  # pyright: ignore[reportPrivateUsage]
        for key, name in list(names.items()):
            if key not in self.seek_keys:
                del names[key]  # closed with the next statement (psycopg's maintenance)
                prepared._to_flush.append(name)  # pyright: ignore[reportPrivateUsage]

    def defer(self, name: str, params: Row) -> None:
        """Hold back a write whose result nobody reads: it goes out just before the next
        statement, transaction command or batch (:meth:`flush`), as one statement with the
        writes held with it when they are a run ``_COMBINED`` knows (a claim's three, a
        lone complete's four), else each as it is. An error in it is raised there."""
        if self._deferred is None:
            self._deferred = []
        self._deferred.append((name, params))

    @property
    def deferred_run(self) -> bool:
        """Whether the writes held back are exactly a run ``_COMBINED`` knows."""
        held = self._deferred or []
        return tuple(name for name, _ in held) in _COMBINED

    def discard(self) -> None:
        """Forget the writes held back (the transaction rolls back)."""
        self._deferred = None

    async def flush(self) -> None:
        """Send the writes held back (:meth:`defer`)."""
        held, self._deferred = self._deferred, None
        if not held:
            return
        names = tuple(name for name, _ in held)
        for start in range(len(held)):  # a known run at the end: what came before goes first
            combined = _COMBINED.get(names[start:])
            if combined is None:
                continue
            for name, params in held[:start]:
                await self.execute(q(name), params)
            query, prefixes = combined
            merged: Row = {}
            for (_, params), prefix in zip(held[start:], prefixes, strict=True):
                merged.update({k if k == "org" else prefix + k: v for k, v in params.items()})
            await self.execute(q(query), merged)
            return
        for name, params in held:
            await self.execute(q(name), params)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cursor_factory = PgCursor
        # psycopg's keys of the statements prepared with sequential scans off (PgCursor)
        self.seek_keys: set[tuple[bytes, tuple[int, ...]]] = set()
        # the identity read sent with this transaction's first statement, and who judges it
        self.expected_identity: (
            tuple[psycopg.AsyncCursor[Row], Callable[[Principal | None], None]] | None
        ) = None

    async def wait(
        self, gen: PQGen[RV], interval: float = _WAIT_INTERVAL, timeout: float | None = None
    ) -> RV:
        """psycopg's wait without a timer on the event loop per wait (``_waiting``); one
        with a timeout, or interrupted (the query then cancelled on the server), psycopg's."""
        if timeout is not None:
            return await super().wait(gen, interval, timeout)
        try:
            return await wait_untimed(gen, self.pgconn.socket)
        except _INTERRUPTED as exc:
            return await super().wait(cast("PQGen[RV]", Interrupted(gen, exc)), interval)

    async def confirm_identity(self) -> None:
        """Judge the expected identity (:meth:`TxBase.expect_identity`) if it is still to be
        judged: its answer is in once any later statement's is; else this waits for it."""
        pending, self.expected_identity = self.expected_identity, None
        if pending is not None:
            cur, check = pending
            row = await cur.fetchone()
            check(principal_from_row(row) if row is not None else None)

    async def execute(
        self,
        query: Query,
        params: Params | None = None,
        *,
        prepare: bool | None = None,
        binary: bool = False,
    ) -> psycopg.AsyncCursor[Row]:
        if self._deferred:
            await self.flush()
        plain = cast("QueryNoTemplate", query)  # skift sends no t-string templates
        if (
            prepare is None
            and params is not None
            and isinstance(query, bytes)
            and query in custom_planned()
        ):
            # planned for its values: they are in its text (the connection's
            # plan_cache_mode is force_generic_plan, see PgStore)
            cur = PgBoundCursor(self)
            return await cur.execute(plain, params, binary=binary)
        return await super().execute(plain, params, prepare=prepare, binary=binary)

    async def push(self) -> None:
        """Send what a pipeline holds now (statements wait in libpq's buffer for the next
        read otherwise: :class:`PgCursor`), so that PostgreSQL runs them meanwhile."""
        pipeline = self._pipeline
        if pipeline is None:
            return
        async with self.lock:
            _queue_into_libpq(pipeline)
            await self.wait(pipeline._communicate_gen())  # pyright: ignore[reportPrivateUsage]

    async def command(self, command: bytes) -> None:
        """Send BEGIN, COMMIT or ROLLBACK: queued in a pipeline (it goes out with the next
        statement), else sent and awaited.

        Not psycopg's ``rollback()`` or a transaction block's: those also forget every
        prepared statement of the connection (DEALLOCATE ALL, and each statement parsed
        and planned again), while PostgreSQL keeps prepared statements across a rollback
        and psycopg already forgets the one whose preparation failed. A NothingReady or a
        claim lost to a concurrent claimer rolls back; it costs one round trip, not the
        connection's statement cache.
        """
        self.seqscan_off = False  # set_config(..., true) ends with the transaction
        if command == b"ROLLBACK":
            self.discard()
        elif self._deferred:
            await self.flush()
        async with self.lock:
            await self.wait(self._exec_command(command))


class TxBase:
    """A connection inside one transaction in one organization, and named queries over it."""

    def __init__(
        self,
        conn: PgConn,
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
        # Reads a statement brought along for a later call of this transaction (the
        # reservation of a request brings whether its id was applied before, the claim
        # cursor whether any cap exists), by key; any write drops them all.
        self._ahead: dict[tuple[Any, ...], Any] = {}
        # the node lock_next_ready took (ClaimNext's reads of it are sent ahead)
        self._claimed: UUID | None = None
        # a complete's reads to send with the first (GraphTx.expect_complete), the request
        # reservation they made, and for whom (principal, request id, lease)
        self._expected: Expected | None = None
        self._reserved: Row | None = None
        self._reserving: tuple[UUID, str, UUID | None] | None = None
        # the fingerprint of the request reserved ahead, written with its response
        # (principal, request id, fingerprint)
        self._fingerprint: tuple[UUID, str, str] | None = None
        self._pipe_cm: AbstractAsyncContextManager[AsyncPipeline] | None = None
        self._pipe: AsyncPipeline | None = None

    def _written(self) -> None:
        """Note a write: the transaction wakes waiters at commit, and what was read ahead
        may be stale."""
        self.wrote = True
        self._ahead.clear()

    async def _read_ahead(self, key: tuple[Any, ...], name: str, /, **params: Any) -> None:
        """Send a read this transaction will ask next, to be answered in the round trip of
        the read about to be awaited (in a pipeline; outside one, nothing is sent). Taken
        back with :meth:`_ahead_rows` while no write came between."""
        if self._pipe is not None:
            self._ahead[key] = await self._conn.execute(q(name), {"org": self._org, **params})

    async def _ahead_rows(self, key: tuple[Any, ...]) -> list[Row] | None:
        """The rows of a read sent ahead under ``key``, or None when there is none."""
        cur: psycopg.AsyncCursor[Row] | None = self._ahead.pop(key, None)
        return None if cur is None else await cur.fetchall()

    async def _rows_ahead(self, key: tuple[Any, ...], name: str, /, **params: Any) -> list[Row]:
        """The rows of the read sent ahead under ``key``, else of ``name`` read now."""
        rows = await self._ahead_rows(key)
        return rows if rows is not None else await self.rows(name, **params)

    async def begin(self) -> None:
        """Enter the pipeline and queue BEGIN (it goes out with the first statement)."""
        self._conn.discard()
        cm = self._conn.pipeline()
        self._pipe = await cm.__aenter__()
        self._pipe_cm = cm
        await self._conn.command(b"BEGIN")

    async def expect_identity(
        self, scheme: str, value: str, check: Callable[[Principal | None], None]
    ) -> None:
        """Send the identity's read now, to be answered with the transaction's first
        statement; ``check`` judges it before any statement's rows are handed back, any
        write is counted and COMMIT is sent (:class:`PgCursor`, :meth:`commit`), and, when
        the transaction fails first, before its error is (:meth:`abort`)."""
        cur = await self._conn.execute(
            q("principal_by_identity"), {"scheme": scheme, "value": value}
        )
        self._conn.expected_identity = (cur, check)

    async def commit(self) -> None:
        """COMMIT, then wake ClaimNext waiters if anything was written: both in one round trip.

        The wake-up is a statement of its own after COMMIT, not part of the writing
        transaction: a transaction that NOTIFYs holds a database-wide lock from its
        pre-commit through its WAL flush, and every committing claimer queued on it. It
        commits without waiting for its WAL flush (queries/graph.sql, ``wake``). A crash
        between the two loses only the wake-up: a waiting ClaimNext polls at least every 1.5
        seconds (``LongPoll.wait``), so a waiter is late, never stuck.
        """
        await self._conn.confirm_identity()  # no read came back yet: it costs a round trip
        if self._fingerprint is not None:  # reserved ahead, and no response saved
            principal, rid, fingerprint = self._fingerprint
            self._fingerprint = None
            await self.send_keeping_ahead(
                "set_fingerprint", principal=principal, rid=rid, fingerprint=fingerprint
            )
        await self._conn.command(b"COMMIT")
        if self.wrote:
            await self._conn.execute(q("wake"), {"org": str(self._org)})
        await self._unpipe()

    async def abort(self) -> None:
        """End a failed transaction: leave the pipeline (its pending error, if any, is the
        caller's exception's consequence) and roll back whatever is still open. A broken
        connection is left to the pool, which discards it.

        An identity still to be judged is judged first: a refused caller is told that,
        not what its call ran into."""
        refused: SkiftError | None = None
        try:
            with contextlib.suppress(psycopg.Error):
                await self._conn.confirm_identity()
        except SkiftError as exc:
            refused = exc
        self._conn.expected_identity = None
        self._conn.discard()
        with contextlib.suppress(psycopg.Error):
            await self._unpipe()
        pgconn = self._conn.pgconn
        if pgconn.status == pq.ConnStatus.OK and pgconn.transaction_status in (
            pq.TransactionStatus.INTRANS,
            pq.TransactionStatus.INERROR,
        ):
            with contextlib.suppress(psycopg.Error):  # a broken connection: the pool discards it
                await self._conn.command(b"ROLLBACK")
        if refused is not None:
            raise refused

    async def _unpipe(self) -> None:
        """Leave the pipeline: send what is queued, wait for every answer (raising the
        first error) and go on statement by statement (COPY needs it)."""
        cm, self._pipe_cm, self._pipe = self._pipe_cm, None, None
        if cm is not None:
            await cm.__aexit__(None, None, None)

    async def send(self, name: str, /, **params: Any) -> None:
        """A write whose row count nobody reads."""
        await self.send_keeping_ahead(name, **params)
        self._ahead.clear()

    async def send_keeping_ahead(self, name: str, /, **params: Any) -> None:
        """:meth:`send` for a write of nothing any read sent ahead reads (the claim cursor).
        Held back until the next statement (PgConn.defer), so that a claim's or a
        complete's writes go as one."""
        self._conn.defer(name, {"org": self._org, **params})
        self.wrote = True
        if self._conn.deferred_run:  # a whole run: sent now, PostgreSQL runs it meanwhile
            await self._conn.flush()
            await self._conn.push()

    async def _send_many(self, name: str, params: Sequence[Row]) -> None:
        """One statement per row, sent as one batch (psycopg pipelines executemany);
        a single row goes as a plain statement (outside the transaction's pipeline, after
        a COPY, a pipeline of its own costs two more round trips)."""
        if len(params) == 1:
            await self._conn.execute(q(name), params[0])
        else:
            await self._conn.flush()
            async with self._conn.cursor() as cur:
                await cur.executemany(q(name), params)
        self._written()

    async def _copy(
        self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]
    ) -> None:
        """``COPY table (columns) FROM STDIN``: many rows in one statement (defaults, checks,
        foreign keys and triggers apply as for INSERT)."""
        query = sql.SQL("COPY {} ({}) FROM STDIN").format(
            sql.Identifier(table), sql.SQL(", ").join(sql.Identifier(c) for c in columns)
        )
        await self._conn.flush()
        await self._unpipe()
        await self._conn.confirm_identity()
        async with self._conn.cursor() as cur, cur.copy(query) as copy:
            for row in rows:
                await copy.write_row(row)
        self._written()

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
        """A write whose row count is read: it waits for PostgreSQL's answer."""
        cur = await self._conn.execute(q(name), {"org": self._org, **params})
        self._written()
        if self._pipe is not None:
            await self._pipe.sync()
        await self._conn.confirm_identity()
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
