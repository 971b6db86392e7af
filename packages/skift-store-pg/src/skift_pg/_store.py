"""The PostgreSQL store: skift's graph in tables, its readiness in SQL.

A :class:`PgStore` owns a psycopg connection pool. Each transaction is scoped
to one organization; every query names ``org_id``. The engine in skift-core
holds the rules; the store only loads, locks, writes and computes the
derived facts (readiness and the turn order) where the rows are. A
transaction (:class:`PgTx`) composes ``_tx`` (running named queries),
``_tx_graph`` (the graph, leases, readiness, idempotency) and ``_tx_content``
(comments, imports, search, usage, artifacts, events); ``_rows`` maps
records to rows and back. Board sign-in, outside any organization, is ``_signin``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncGenerator, Generator
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import Final
from uuid import UUID

import psycopg
import psycopg.errors
from psycopg.rows import TupleRow, dict_row
from psycopg_pool import AsyncConnectionPool

from skift import (
    WAITING,
    BlobStore,
    Delivery,
    DeliveryStats,
    DueDelivery,
    FileBlobStore,
    IdentityInvite,
    LimitExceeded,
    Limits,
    Org,
    Principal,
    PrincipalKind,
    PruneReport,
    StoreStats,
    TransientError,
    Unavailable,
    default_blob_dir,
    new_id,
)

from . import _retention as retention
from . import _webhooks as webhooks
from ._queries import q
from ._rows import (
    Conn,
    invite_from_row,
    org_lock_key,
    principal_from_row,
    principals_lock_key,
)
from ._signin import PgSignins
from ._tx import PgConn
from ._tx_content import ContentTx
from ._tx_graph import GraphTx

log = logging.getLogger("skift_pg")

POOL_TIMEOUT: Final = 5.0
"""Seconds a call waits for a pooled connection before it is answered Unavailable:
long enough for a busy pool to free one, short enough that an outage is a clear,
retryable answer instead of a hang (psycopg_pool's own default is 30 s)."""

OUTAGE_WAIT: Final = 0.5
"""The wait instead while the last :meth:`PgStore.ping` failed: during a known outage a
call is answered Unavailable at once, and a connection the pool does get back in time
is still used."""

UNAVAILABLE_NEXT: Final = "Retry with the same request id; nothing was committed twice."


def unavailable(exc: BaseException) -> Unavailable:
    """The answer for a lost or unreachable PostgreSQL, naming the cause."""
    cause = str(exc).strip() or type(exc).__name__
    return Unavailable(
        f"PostgreSQL is unavailable: {cause}", next=UNAVAILABLE_NEXT, cause=type(exc).__name__
    )


class PgStore:
    """A :class:`~skift.Store` in PostgreSQL."""

    def __init__(
        self,
        dsn: str,
        *,
        limits: Limits | None = None,
        min_size: int = 1,
        max_size: int = 16,
        listen: bool = True,
        blobs: BlobStore | None = None,
        pool_timeout: float = POOL_TIMEOUT,
        listen_dsn: str | None = None,
        pooled: bool | None = None,
        pooler_prepares: bool = False,
        poll_connections: int | None = None,
    ) -> None:
        """``listen=False`` turns off the LISTEN wake-up (tests prove polling alone suffices).

        ``listen_dsn``: where the LISTEN connection goes (default ``dsn``). Behind a
        transaction-pooling PgBouncer a LISTEN must reach PostgreSQL directly: without
        ``listen_dsn`` a pooled store does not LISTEN, and ClaimNext's waits poll.

        ``pooled``: whether ``dsn`` is a pooler in transaction mode (PgBouncer), which
        keeps nothing of a session between transactions: no statement is prepared, and
        the settings the direct connection carries from its start (statement timeout,
        no JIT) are set in each transaction instead. None: found out on the first
        connection (PgBouncer refuses the startup parameter that carries the settings,
        unless configured to ignore it: then say ``pooled=True``).

        ``pooler_prepares``: the pooler keeps protocol-level prepared statements across
        transactions (PgBouncer 1.21 or later with ``max_prepared_statements`` above
        zero): statements are then prepared as on a direct connection and planned
        generically (set in each transaction), instead of parsed and planned on every
        call. A pooler that does not keep them fails the second call of a statement
        (``prepared statement "_pg3_0" does not exist``): say so only when it does.
        Implies ``pooled=True``.

        ``blobs`` keeps blob bytes (default: files under ``skift.default_blob_dir()``);
        the database keeps only which organization holds which digest.

        ``pool_timeout``: the longest a call waits for a connection before it is
        answered Unavailable (PostgreSQL down, or every connection busy that long).

        ``poll_connections``: how many connections long polls (``skift.WAITING``: ClaimNext
        and WatchEvents re-reading while they wait) may hold at once; default
        ``max_size`` less a quarter (at least 2 kept for ordinary calls). They hold none
        while they wait: one LISTEN connection per store wakes them.
        """
        self.blobs: BlobStore = blobs if blobs is not None else FileBlobStore(default_blob_dir())
        self._secrets: dict[str, bytes] = {}
        self.dsn = dsn
        self.listen = listen
        self.listen_dsn = listen_dsn
        self.pooled = True if pooler_prepares else pooled
        self.pooler_prepares = pooler_prepares
        self.limits = limits or Limits()
        self._timeout_ms = int(self.limits.statement_timeout.total_seconds() * 1000)
        self._pool_args = (min_size, max_size, pool_timeout)
        self._pool: AsyncConnectionPool[PgConn] = self._make_pool()
        self._probe: psycopg.AsyncConnection[TupleRow] | None = None
        self._probe_failed = False
        self._opened = False
        self._open_lock = asyncio.Lock()
        self._offset = timedelta()
        reserved = max(2, max_size // 4) if max_size > 2 else 0
        self.poll_connections = poll_connections or max(1, max_size - reserved)
        self._poll_slots = asyncio.Semaphore(self.poll_connections)
        self._waiters: dict[UUID, asyncio.Event] = {}
        self._any_change = asyncio.Event()
        self._listener: asyncio.Task[None] | None = None
        self._told_no_listen = False
        self.signins = PgSignins(self)

    def _make_pool(self) -> AsyncConnectionPool[PgConn]:
        min_size, max_size, pool_timeout = self._pool_args
        if self.pooled:
            # Behind a pooler in transaction mode: the server connection changes between
            # transactions, so no statement is prepared (PgBouncer before 1.21 keeps no
            # prepared statement; see docs/operations.md) unless the pooler keeps them
            # (pooler_prepares: then from the first call, as below), and no startup
            # option is sent (PgBouncer refuses it): PgStore.transaction sets them per
            # transaction. count_transaction's DEALLOCATE ALL at REPLAN_AT (PgBouncer 1.22+
            # passes it on and forgets what it had prepared there) replans only the server
            # connection it lands on: plans made on a new, empty database stay on the
            # others until PgBouncer replaces them (server_lifetime; docs/operations.md).
            kwargs: dict[str, object] = {
                "row_factory": dict_row,
                "autocommit": True,
                "prepare_threshold": 0 if self.pooler_prepares else None,
            }
        else:
            kwargs = {
                "row_factory": dict_row,
                "autocommit": True,
                # Statements are prepared on their first call (psycopg's default waits for
                # the sixth: each call before it was parsed and planned again, and then
                # PostgreSQL planned the prepared statement's first five for their values
                # too; a connection that made a dozen claims planned every statement of
                # them ten times, 13.6 ms of PostgreSQL's CPU a pair at 32 claimers against
                # 3.7 warm). The queries with optional filters are never prepared.
                "prepare_threshold": 0,
                # Statements are prepared and may settle on a generic plan (planning
                # was half of PostgreSQL's CPU per claim + complete under
                # force_custom_plan); the queries with optional filters, whose
                # generic plan was measured 100x slower, are never prepared and so
                # are planned for each call's values (_queries.custom_planned).
                # JIT compiles for plans it thinks are costly; the readiness queries'
                # correlated probes look costly and run in well under a millisecond,
                # and compiling them took 30 ms of a 60 ms Ready at 100k nodes.
                "options": f"-c statement_timeout={self._timeout_ms} "
                "-c plan_cache_mode=force_generic_plan -c jit=off",
            }
        return AsyncConnectionPool(
            self.dsn,
            min_size=min_size,
            max_size=max_size,
            open=False,
            kwargs=kwargs,
            connection_class=PgConn,
            configure=self._configure if self.pooler_prepares else None,
            timeout=pool_timeout,
        )

    async def _configure(self, conn: PgConn) -> None:
        """A new connection to a pooler that keeps prepared statements knows it (PgCursor
        switches sequential scans off around the claim's and the complete's statements)."""
        conn.pooler_prepares = True

    def set_clock_offset(self, offset: timedelta) -> None:
        self._offset = offset

    async def _ensure_open(self) -> None:
        if self._opened:
            return
        async with self._open_lock:
            if not self._opened:
                try:
                    if self.pooled is None:
                        self.pooled = await behind_pooler(self.dsn, self._timeout_ms)
                        if self.pooled:
                            log.info(
                                "the DSN is a pooler in transaction mode: no prepared statements"
                            )
                            self._pool = self._make_pool()
                    await self._pool.open(wait=True, timeout=10)
                except Exception as exc:
                    raise Unavailable(
                        f"cannot reach PostgreSQL: {exc}",
                        next="Check that the server is running and the DSN is right; then retry.",
                    ) from exc
                self._opened = True

    async def secret(self, name: str) -> bytes:
        cached = self._secrets.get(name)
        if cached is not None:
            return cached
        for _ in range(3):  # a concurrent first writer: its row is visible on the next try
            async with self._connection() as conn:
                cur = await conn.execute(
                    q("ensure_secret"), {"name": name, "value": secrets.token_bytes(32)}
                )
                row = await cur.fetchone()
            if row is not None:
                value = bytes(row["value"])
                self._secrets[name] = value
                return value
        raise TransientError(f"could not read the server secret {name!r}")

    @asynccontextmanager
    async def transaction(self, org_id: UUID, *, graph_lock: bool = False) -> AsyncGenerator[PgTx]:
        """One transaction in one pipeline (see skift_pg._tx): BEGIN rides with the first
        statement, COMMIT with the wake-up of ClaimNext waiters."""
        await self._ensure_open()
        async with self._slot():
            with _driver_errors():
                async with self._pool.connection(self._wait()) as conn:
                    if not self.pooled or self.pooler_prepares:  # statements are prepared
                        await conn.count_transaction()
                    tx = PgTx(conn, org_id, self._offset, secret=self.secret)
                    await tx.begin()
                    try:
                        if self.pooled:
                            await tx.exec("transaction_settings", timeout=f"{self._timeout_ms}ms")
                        if graph_lock:
                            await tx.exec("graph_lock", key=org_lock_key(org_id))
                        yield tx
                        await tx.commit()
                    except BaseException:
                        await tx.abort()
                        raise

    @asynccontextmanager
    async def _connection(self) -> AsyncGenerator[Conn]:
        """A pooled connection outside a transaction, with the same answers as
        :meth:`transaction` (an outage is Unavailable naming the cause, never a raw
        driver error, which the server would answer INTERNAL)."""
        await self._ensure_open()
        async with self._slot():
            with _driver_errors():
                async with self._pool.connection(self._wait()) as conn:
                    yield conn

    @asynccontextmanager
    async def _slot(self) -> AsyncGenerator[None]:
        """A long poll's turn at the pool (``poll_connections`` at once); others pass."""
        if not WAITING.get():
            yield
            return
        async with self._poll_slots:
            yield

    def _wait(self) -> float | None:
        """How long to wait for a pooled connection: the pool's timeout, shorter while
        PostgreSQL is known to be down."""
        return OUTAGE_WAIT if self._probe_failed else None

    async def ping(self, timeout: float) -> None:
        """Answer whether PostgreSQL serves, on a connection of its own (a busy pool does
        not make the store look down); Unavailable naming the cause when it does not.

        When PostgreSQL answers again after a failed ping, the pool is checked, so the
        connections the outage broke are replaced before calls meet them.
        """
        try:
            async with asyncio.timeout(timeout):
                if self._probe is None or self._probe.closed:
                    self._probe = await psycopg.AsyncConnection.connect(
                        self.dsn,
                        autocommit=True,
                        connect_timeout=max(1, int(timeout)),
                        prepare_threshold=None,  # a pooler may hand it another session
                    )
                await self._probe.execute(q("probe"))
        except (psycopg.Error, OSError, TimeoutError) as exc:
            probe, self._probe = self._probe, None
            if probe is not None:
                with contextlib.suppress(Exception):
                    await probe.close()
            self._probe_failed = True
            raise unavailable(exc) from exc
        if self._probe_failed:
            self._probe_failed = False
            if self._opened:
                with contextlib.suppress(Exception):
                    await self._pool.check()

    async def ensure_org(self, name: str) -> Org:
        for _ in range(3):
            async with self._connection() as conn:
                cur = await conn.execute(q("ensure_org"), {"id": new_id(), "name": name})
                row = await cur.fetchone()
            if row is not None:
                return Org(id=row["id"], name=row["name"], created_at=row["created_at"])
        raise TransientError("could not create the organization")

    async def list_orgs(self) -> list[Org]:
        async with self._connection() as conn:
            cur = await conn.execute(q("list_orgs"))
            rows = await cur.fetchall()
        return [Org(id=r["id"], name=r["name"], created_at=r["created_at"]) for r in rows]

    async def org_page(self, *, after: tuple[datetime, str] | None, limit: int | None) -> list[Org]:
        params = {
            "after_at": None if after is None else after[0],
            "after_name": None if after is None else after[1],
            "limit": limit,
        }
        async with self._connection() as conn:
            cur = await conn.execute(q("org_page"), params)
            rows = await cur.fetchall()
        return [Org(id=r["id"], name=r["name"], created_at=r["created_at"]) for r in rows]

    async def org_by_id(self, org_id: UUID) -> Org | None:
        async with self._connection() as conn:
            cur = await conn.execute(q("org_by_id"), {"id": org_id})
            row = await cur.fetchone()
        return Org(id=row["id"], name=row["name"], created_at=row["created_at"]) if row else None

    async def principal_by_identity(self, scheme: str, value: str) -> Principal | None:
        async with self._connection() as conn:
            cur = await conn.execute(q("principal_by_identity"), {"scheme": scheme, "value": value})
            row = await cur.fetchone()
        return principal_from_row(row) if row else None

    async def invites_for_identity(self, scheme: str, value: str) -> list[IdentityInvite]:
        async with self._connection() as conn:
            cur = await conn.execute(q("invites_for_identity"), {"scheme": scheme, "value": value})
            rows = await cur.fetchall()
        return [invite_from_row(r) for r in rows]

    async def ensure_principal(self, org_id: UUID, name: str, kind: PrincipalKind) -> Principal:
        for _ in range(3):
            async with self._connection() as conn:
                cur = await conn.execute(q("principal_by_name"), {"org": org_id, "name": name})
                row = await cur.fetchone()
                if row is not None:
                    return principal_from_row(row)
                # first use: whether it is the organization's first person is decided
                # under the organization's principals lock (issue 28, point 3)
                async with conn.transaction():
                    await conn.execute(q("principals_lock"), {"key": principals_lock_key(org_id)})
                    cur = await conn.execute(
                        q("ensure_principal"),
                        {"id": new_id(), "org": org_id, "name": name, "kind": kind.value},
                    )
                    row = await cur.fetchone()
            if row is not None:
                return principal_from_row(row)
        raise TransientError("could not create the principal")

    async def wait_for_change(self, org_id: UUID, timeout: timedelta) -> None:
        """Wait for a NOTIFY naming the org; polling by the caller is the correctness path."""
        if not self.listen:
            await asyncio.sleep(timeout.total_seconds())
            return
        await self._ensure_listener()
        event = self._waiters.setdefault(org_id, asyncio.Event())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), timeout.total_seconds())

    async def _ensure_listener(self) -> None:
        if self._listener is None or self._listener.done():
            self._listener = asyncio.create_task(self._listen())

    def _listen_target(self) -> str | None:
        """Where LISTEN goes: ``listen_dsn``, else ``dsn`` unless that is a pooler (a
        LISTEN through one is forgotten with the transaction: waits poll instead)."""
        if self.listen_dsn is not None:
            return self.listen_dsn
        return None if self.pooled else self.dsn

    async def _listen(self) -> None:
        dsn = self._listen_target()
        if dsn is None:
            if not self._told_no_listen:
                self._told_no_listen = True
                log.warning("behind a pooler without --listen-dsn: no LISTEN, ClaimNext waits poll")
            await asyncio.Event().wait()  # stays done-less: no task per wait
            return
        try:
            conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
        except psycopg.Error:
            log.warning("cannot LISTEN for changes; ClaimNext with wait falls back to polling")
            return
        try:
            await conn.execute(q("listen_changes"))
            async for note in conn.notifies():
                try:
                    org = UUID(note.payload)
                except ValueError:
                    continue
                event = self._waiters.pop(org, None)
                if event is not None:
                    event.set()
                self._any_change.set()
        except psycopg.Error:
            log.info("the change listener lost its connection; waiters fall back to polling")
        finally:
            await conn.close()

    # the webhook delivery worker (skift_pg._webhooks), across organizations
    async def claim_deliveries(self, *, limit: int, lease: timedelta) -> list[DueDelivery]:
        async with self._connection() as conn:
            return await webhooks.claim(conn, self._offset, limit=limit, lease=lease)

    async def settle_delivery(
        self,
        delivery: Delivery,
        *,
        delivered: bool,
        status: int | None,
        error: str | None,
        retry_in: timedelta | None,
    ) -> bool:
        async with self._connection() as conn:
            return await webhooks.settle(
                conn,
                self._offset,
                delivery,
                delivered=delivered,
                status=status,
                error=error,
                retry_in=retry_in,
            )

    async def delivery_stats(self) -> DeliveryStats:
        async with self._connection() as conn:
            return await webhooks.stats(conn)

    async def prune(
        self, *, request_retention: timedelta, claim_cursor_retention: timedelta, dry_run: bool
    ) -> PruneReport:
        async with self._connection() as conn:
            return await retention.prune(
                conn,
                self._offset,
                request_retention=request_retention,
                claim_cursor_retention=claim_cursor_retention,
                dry_run=dry_run,
            )

    async def sweep_blobs(
        self, *, grace: timedelta, dry_run: bool, run_at: datetime | None = None
    ) -> tuple[int, int]:
        async with self._connection() as conn:
            return await retention.sweep_blobs(
                conn, self._offset, self.blobs, grace=grace, dry_run=dry_run, run_at=run_at
            )

    async def last_prune(self) -> PruneReport | None:
        async with self._connection() as conn:
            return await retention.last_prune(conn)

    async def store_stats(self) -> StoreStats:
        async with self._connection() as conn:
            return await retention.store_stats(conn)

    async def wait_for_any_change(self, timeout: timedelta) -> None:
        """Wait for a NOTIFY naming any organization (polling by the caller is the
        correctness path)."""
        if not self.listen:
            await asyncio.sleep(timeout.total_seconds())
            return
        await self._ensure_listener()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._any_change.wait(), timeout.total_seconds())
        self._any_change.clear()

    async def close(self) -> None:
        if self._probe is not None:
            with contextlib.suppress(Exception):
                await self._probe.close()
            self._probe = None
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._listener
            self._listener = None
        if self._opened:
            await self._pool.close()
            self._opened = False


async def behind_pooler(dsn: str, timeout_ms: int) -> bool:
    """Whether ``dsn`` is PgBouncer (or a pooler like it) rather than PostgreSQL: it
    refuses the ``options`` startup parameter PostgreSQL takes. An unreachable server
    raises as connecting does."""
    try:
        conn = await psycopg.AsyncConnection.connect(
            dsn, autocommit=True, options=f"-c statement_timeout={timeout_ms}"
        )
    except psycopg.OperationalError as exc:
        if "unsupported startup parameter" in str(exc):
            return True
        raise
    await conn.close()
    return False


@contextlib.contextmanager
def _driver_errors() -> Generator[None]:
    """The driver's errors as skift's: a deadlock or serialization failure is transient
    (retried by the API), the statement timeout a limit, and a lost or unreachable
    PostgreSQL (the pool's wait included) Unavailable."""
    try:
        yield
    except psycopg.errors.DeadlockDetected as exc:
        raise TransientError(str(exc)) from exc
    except psycopg.errors.SerializationFailure as exc:
        raise TransientError(str(exc)) from exc
    except psycopg.errors.QueryCanceled as exc:
        raise LimitExceeded(
            "the statement ran past the statement timeout",
            next="Narrow the request (a smaller page, a smaller patch) and retry.",
            limit="statement_timeout",
        ) from exc
    except psycopg.errors.InvalidSqlStatementName as exc:
        # a statement prepared on one server connection, executed on another: a pooler
        # that does not keep prepared statements, told pooler=transaction-prepared
        raise Unavailable(
            f"PostgreSQL lost a prepared statement: {exc}",
            next="A pooler in front keeps no prepared statements (PgBouncer before 1.21, or "
            "max_prepared_statements = 0): say pooler=transaction in the DSN, or set "
            "max_prepared_statements in PgBouncer.",
        ) from exc
    except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
        raise unavailable(exc) from exc


class PgTx(GraphTx, ContentTx):
    """One transaction in one organization."""
