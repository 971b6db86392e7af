"""The PostgreSQL store: skift's graph in tables, its readiness in SQL.

A :class:`PgStore` owns a psycopg connection pool. Each transaction is scoped
to one organization; every query names ``org_id``. The engine in skift-core
holds the rules; this module only loads, locks, writes and computes the
derived facts (readiness and the turn order) where the rows are.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import secrets
from collections.abc import AsyncGenerator, Awaitable, Callable, Collection, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import psycopg
import psycopg.errors
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from skift import (
    ArtifactRecord,
    AssigneeKind,
    Authors,
    BlobRecord,
    BlobStore,
    Budget,
    Comment,
    Conflict,
    Delivery,
    DeliveryStats,
    Derived,
    DueDelivery,
    Edge,
    EdgeKind,
    Event,
    EventBatch,
    EventPosition,
    FileBlobStore,
    Hold,
    Identity,
    IdentityScheme,
    Lease,
    LimitExceeded,
    Limits,
    Node,
    NodeOrigin,
    Org,
    Principal,
    PrincipalKind,
    Priority,
    Project,
    PruneReport,
    Rate,
    ReadyQuery,
    ReleaseReason,
    Revision,
    SearchQuery,
    Status,
    StoredRequest,
    StoreStats,
    TransientError,
    Unavailable,
    UsageKind,
    UsageRecord,
    UsageScope,
    UsageTotal,
    Writer,
    default_blob_dir,
    new_id,
    part_from_dict,
    part_to_dict,
    ulid_str,
)

from . import _retention as retention
from . import _webhooks as webhooks
from ._queries import q
from ._signin import PgSignins

log = logging.getLogger("skift_pg")

Row = dict[str, Any]
Conn = psycopg.AsyncConnection[Row]

_PRIORITIES: list[Priority] = list(Priority)


def _priority(rank: int) -> Priority:
    """The stored rank 0..4 as p0..p4."""
    return _PRIORITIES[rank]


def _hold(row: Row) -> Hold | None:
    if row["held_at"] is None:
        return None
    return Hold(
        at=row["held_at"], by=row["held_by"], reason=row["held_reason"], group=row["hold_group"]
    )


def _hold_params(hold: Hold | None) -> Row:
    if hold is None:
        return {"held_at": None, "held_by": None, "held_reason": None, "hold_group": None}
    return {
        "held_at": hold.at,
        "held_by": hold.by,
        "held_reason": hold.reason,
        "hold_group": hold.group,
    }


def project_from_row(row: Row) -> Project:
    return Project(
        id=row["id"],
        org_id=row["org_id"],
        slug=row["slug"],
        title=row["title"],
        node_counter=row["node_counter"],
        priority=_priority(row["priority"]),
        vcs_url=row["vcs_url"],
        archived_at=row["archived_at"],
        hold=_hold(row),
        created_at=row["created_at"],
    )


def node_from_row(row: Row) -> Node:
    return Node(
        id=row["id"],
        org_id=row["org_id"],
        project_id=row["project_id"],
        number=row["number"],
        parent_id=row["parent_id"],
        kind=row["kind"],
        title=row["title"],
        body=row["body"],
        status=Status(row["status"]),
        priority=_priority(row["priority"]),
        assignee_kind=AssigneeKind(row["assignee_kind"]) if row["assignee_kind"] else None,
        assignee=row["assignee"],
        labels=tuple(row["labels"]),
        hold=_hold(row),
        result=row["result"],
        context_id=row["context_id"],
        created_by=row["created_by"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def edge_from_row(row: Row) -> Edge:
    return Edge(
        org_id=row["org_id"],
        from_id=row["from_id"],
        to_id=row["to_id"],
        kind=EdgeKind(row["kind"]),
        created_at=row["created_at"],
    )


def lease_from_row(row: Row) -> Lease:
    return Lease(
        id=row["id"],
        org_id=row["org_id"],
        node_id=row["node_id"],
        holder=row["holder"],
        harness=row["harness"],
        agent_ref=row["agent_ref"],
        session_ref=row["session_ref"],
        created_at=row["created_at"],
        expires_at=row["expires_at"],
        ttl=row["ttl"],
        on_behalf_of=row["on_behalf_of"],
        released_at=row["released_at"],
        release_reason=ReleaseReason(row["release_reason"]) if row["release_reason"] else None,
    )


def principal_from_row(row: Row) -> Principal:
    return Principal(
        id=row["id"],
        org_id=row["org_id"],
        name=row["name"],
        kind=PrincipalKind(row["kind"]),
        created_at=row["created_at"],
    )


def identity_from_row(row: Row) -> Identity:
    return Identity(
        id=row["id"],
        org_id=row["org_id"],
        principal_id=row["principal_id"],
        scheme=IdentityScheme(row["scheme"]),
        value=row["value"],
        created_at=row["created_at"],
        revoked_at=row["revoked_at"],
    )


def event_from_row(row: Row) -> Event:
    return Event(
        id=row["id"],
        org_id=row["org_id"],
        project_id=row["project_id"],
        node_id=row["node_id"],
        principal_id=row["principal_id"],
        principal_kind=PrincipalKind(row["principal_kind"]),
        on_behalf_of=row["on_behalf_of"],
        identity_scheme=row["identity_scheme"],
        request_id=row["request_id"],
        op=row["op"],
        reason=row["reason"],
        before=row["before"],
        after=row["after"],
        occurred_at=row["occurred_at"],
    )


def comment_from_row(row: Row, revisions: tuple[Revision, ...] = ()) -> Comment:
    return Comment(
        id=row["id"],
        org_id=row["org_id"],
        project_id=row["project_id"],
        node_id=row["node_id"],
        author_id=row["author_id"],
        body=row["body"],
        in_reply_to=row["in_reply_to"],
        created_at=row["created_at"],
        edited_at=row["edited_at"],
        resolved_at=row["resolved_at"],
        resolved_by=row["resolved_by"],
        revisions=revisions,
    )


def usage_from_row(row: Row) -> UsageRecord:
    return UsageRecord(
        id=row["id"],
        org_id=row["org_id"],
        project_id=row["project_id"],
        node_id=row["node_id"],
        lease_id=row["lease_id"],
        principal_id=row["principal_id"],
        model=row["model"],
        input_tokens=row["input_tokens"],
        output_tokens=row["output_tokens"],
        cache_read_tokens=row["cache_read_tokens"],
        cache_write_tokens=row["cache_write_tokens"],
        kind=UsageKind(row["kind"]),
        basis=row["basis"],
        created_at=row["created_at"],
    )


def budget_from_row(row: Row) -> Budget:
    return Budget(
        org_id=row["org_id"],
        scope_id=row["scope_id"],
        scope=row["scope"],
        budget=row["budget"],
        cap=row["cap"],
        updated_at=row["updated_at"],
    )


def _origin_from_row(row: Row) -> NodeOrigin:
    return NodeOrigin(
        node_id=row["node_id"],
        org_id=row["org_id"],
        project_id=row["project_id"],
        source=row["source"],
        external_id=row["external_id"],
        extra=row["extra"],
    )


def _node_params(n: Node) -> Row:
    return {
        "id": n.id,
        "org": n.org_id,
        "project_id": n.project_id,
        "number": n.number,
        "parent_id": n.parent_id,
        "kind": n.kind,
        "title": n.title,
        "body": n.body,
        "status": n.status.value,
        "priority": n.priority.rank,
        "assignee_kind": n.assignee_kind.value if n.assignee_kind else None,
        "assignee": n.assignee,
        "labels": list(n.labels),
        "result": n.result,
        "context_id": n.context_id,
        "created_by": n.created_by,
        "created_at": n.created_at,
        "updated_at": n.updated_at,
        **_hold_params(n.hold),
    }


def _project_params(p: Project) -> Row:
    return {
        "id": p.id,
        "org": p.org_id,
        "slug": p.slug,
        "title": p.title,
        "node_counter": p.node_counter,
        "priority": p.priority.rank,
        "vcs_url": p.vcs_url,
        "archived_at": p.archived_at,
        "created_at": p.created_at,
        **_hold_params(p.hold),
    }


def _lease_params(lease: Lease) -> Row:
    return {
        "id": lease.id,
        "org": lease.org_id,
        "node_id": lease.node_id,
        "holder": lease.holder,
        "harness": lease.harness,
        "agent_ref": lease.agent_ref,
        "session_ref": lease.session_ref,
        "created_at": lease.created_at,
        "expires_at": lease.expires_at,
        "ttl": lease.ttl,
        "on_behalf_of": lease.on_behalf_of,
        "released_at": lease.released_at,
        "release_reason": lease.release_reason.value if lease.release_reason else None,
    }


def _org_lock_key(org_id: UUID) -> int:
    digest = hashlib.sha256(b"skift-graph:" + org_id.bytes).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


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
    ) -> None:
        """``listen=False`` turns off the LISTEN wake-up (tests prove polling alone suffices).

        ``blobs`` keeps blob bytes (default: files under ``skift.default_blob_dir()``);
        the database keeps only which organization holds which digest.
        """
        self.blobs: BlobStore = blobs if blobs is not None else FileBlobStore(default_blob_dir())
        self._secrets: dict[str, bytes] = {}
        self.dsn = dsn
        self.listen = listen
        self.limits = limits or Limits()
        timeout_ms = int(self.limits.statement_timeout.total_seconds() * 1000)
        self._pool: AsyncConnectionPool[Conn] = AsyncConnectionPool(
            dsn,
            min_size=min_size,
            max_size=max_size,
            open=False,
            kwargs={
                "row_factory": dict_row,
                "autocommit": True,
                # The readiness queries carry optional filters ("no projects
                # given, or project_id = ANY(...)"); a generic plan cannot
                # see which half applies and was measured 100x slower than a
                # plan made for the actual parameters.
                # JIT compiles for plans it thinks are costly; the readiness queries'
                # correlated probes look costly and run in well under a millisecond,
                # and compiling them took 30 ms of a 60 ms Ready at 100k nodes.
                "options": f"-c statement_timeout={timeout_ms} -c plan_cache_mode=force_custom_plan"
                " -c jit=off",
            },
            connection_class=psycopg.AsyncConnection[Row],
        )
        self._opened = False
        self._open_lock = asyncio.Lock()
        self._offset = timedelta()
        self._waiters: dict[UUID, asyncio.Event] = {}
        self._any_change = asyncio.Event()
        self._listener: asyncio.Task[None] | None = None
        self.signins = PgSignins(self)

    def set_clock_offset(self, offset: timedelta) -> None:
        self._offset = offset

    async def _ensure_open(self) -> None:
        if self._opened:
            return
        async with self._open_lock:
            if not self._opened:
                try:
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
        await self._ensure_open()
        for _ in range(3):  # a concurrent first writer: its row is visible on the next try
            async with self._pool.connection() as conn:
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
        await self._ensure_open()
        try:
            async with self._pool.connection() as conn, conn.transaction():
                tx = PgTx(conn, org_id, self._offset, secret=self.secret)
                if graph_lock:
                    await tx.exec("graph_lock", key=_org_lock_key(org_id))
                yield tx
                if tx.wrote and not tx.notified:
                    await tx.exec("notify", org=str(org_id))
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
        except psycopg.OperationalError as exc:
            raise Unavailable(
                f"PostgreSQL is unavailable: {exc}",
                next="Retry with the same request id; nothing was committed twice.",
            ) from exc

    async def ensure_org(self, name: str) -> Org:
        await self._ensure_open()
        for _ in range(3):
            async with self._pool.connection() as conn:
                cur = await conn.execute(q("ensure_org"), {"id": new_id(), "name": name})
                row = await cur.fetchone()
            if row is not None:
                return Org(id=row["id"], name=row["name"], created_at=row["created_at"])
        raise TransientError("could not create the organization")

    async def list_orgs(self) -> list[Org]:
        await self._ensure_open()
        async with self._pool.connection() as conn:
            cur = await conn.execute(q("list_orgs"))
            rows = await cur.fetchall()
        return [Org(id=r["id"], name=r["name"], created_at=r["created_at"]) for r in rows]

    async def org_by_id(self, org_id: UUID) -> Org | None:
        await self._ensure_open()
        async with self._pool.connection() as conn:
            cur = await conn.execute(q("org_by_id"), {"id": org_id})
            row = await cur.fetchone()
        return Org(id=row["id"], name=row["name"], created_at=row["created_at"]) if row else None

    async def principal_by_identity(self, scheme: str, value: str) -> Principal | None:
        await self._ensure_open()
        async with self._pool.connection() as conn:
            cur = await conn.execute(q("principal_by_identity"), {"scheme": scheme, "value": value})
            row = await cur.fetchone()
        return principal_from_row(row) if row else None

    async def ensure_principal(self, org_id: UUID, name: str, kind: PrincipalKind) -> Principal:
        await self._ensure_open()
        for _ in range(3):
            async with self._pool.connection() as conn:
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

    async def _listen(self) -> None:
        try:
            conn = await psycopg.AsyncConnection.connect(self.dsn, autocommit=True)
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
        await self._ensure_open()
        async with self._pool.connection() as conn:
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
        await self._ensure_open()
        async with self._pool.connection() as conn:
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
        await self._ensure_open()
        async with self._pool.connection() as conn:
            return await webhooks.stats(conn)

    async def prune(
        self, *, request_retention: timedelta, claim_cursor_retention: timedelta, dry_run: bool
    ) -> PruneReport:
        await self._ensure_open()
        async with self._pool.connection() as conn:
            return await retention.prune(
                conn,
                self._offset,
                request_retention=request_retention,
                claim_cursor_retention=claim_cursor_retention,
                dry_run=dry_run,
            )

    async def last_prune(self) -> PruneReport | None:
        await self._ensure_open()
        async with self._pool.connection() as conn:
            return await retention.last_prune(conn)

    async def store_stats(self) -> StoreStats:
        await self._ensure_open()
        async with self._pool.connection() as conn:
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
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._listener
            self._listener = None
        if self._opened:
            await self._pool.close()
            self._opened = False


class PgTx(webhooks.PgWebhooksTx):
    """One transaction in one organization."""

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

    # principals
    async def principal_by_name(self, name: str) -> Principal | None:
        row = await self.row("principal_by_name", name=name)
        return principal_from_row(row) if row else None

    async def principals_by_id(self, ids: Collection[UUID]) -> dict[UUID, Principal]:
        if not ids:
            return {}
        return {
            r["id"]: principal_from_row(r)
            for r in await self.rows("principals_by_id", ids=list(ids))
        }

    async def insert_principal(self, principal: Principal) -> None:
        await self.write(
            "insert_principal",
            id=principal.id,
            name=principal.name,
            kind=principal.kind.value,
            created_at=principal.created_at,
        )

    async def list_principals(self) -> list[Principal]:
        return [principal_from_row(r) for r in await self.rows("list_principals")]

    async def insert_identity(self, identity: Identity) -> None:
        if await self.row("identity_by_value", scheme=identity.scheme.value, value=identity.value):
            raise Conflict(
                f"that {identity.scheme.value} identity already belongs to a principal",
                next="Revoke it there first, or attach another identity.",
            )
        await self.write(
            "insert_identity",
            id=identity.id,
            principal_id=identity.principal_id,
            scheme=identity.scheme.value,
            value=identity.value,
            created_at=identity.created_at,
            revoked_at=identity.revoked_at,
        )

    async def identities_of(self, principal_id: UUID) -> list[Identity]:
        return [
            identity_from_row(r) for r in await self.rows("identities_of", principal=principal_id)
        ]

    async def identity_by_id(self, identity_id: UUID) -> Identity | None:
        row = await self.row("identity_by_id", id=identity_id)
        return identity_from_row(row) if row else None

    async def revoke_identity(self, identity_id: UUID) -> bool:
        return await self.write("revoke_identity", id=identity_id, now=await self.now()) > 0

    async def human_written(self, ids: Collection[UUID]) -> set[UUID]:
        if not ids:
            return set()
        return {r["node_id"] for r in await self.rows("human_written", ids=list(ids))}

    async def authors(self, ids: Collection[UUID]) -> dict[UUID, Authors]:
        if not ids:
            return {}

        def writer(r: dict[str, Any], side: str) -> Writer | None:
            pid: UUID | None = r[f"{side}_id"]
            if pid is None:
                return None
            name: str | None = r[f"{side}_name"]
            return Writer(
                principal_id=pid,
                name=name if name is not None else ulid_str(pid),
                kind=PrincipalKind(r[f"{side}_kind"]),
            )

        rows = await self.rows("authors", ids=list(set(ids)))
        return {
            r["node_id"]: Authors(body=writer(r, "body"), result=writer(r, "result")) for r in rows
        }

    # projects
    def _remember(self, project: Project) -> Project:
        self._projects[project.id] = project
        return project

    def _forget(self, project_id: UUID) -> None:
        self._projects.pop(project_id, None)

    async def project_by_id(self, project_id: UUID, *, lock: bool = False) -> Project | None:
        if not lock and project_id in self._projects:
            return self._projects[project_id]
        row = await self.row("project_by_id_locked" if lock else "project_by_id", id=project_id)
        return self._remember(project_from_row(row)) if row else None

    async def project_by_slug(self, slug: str) -> Project | None:
        known = self._slugs.get(slug)
        if known is not None and known in self._projects:
            return self._projects[known]
        row = await self.row("project_by_slug", slug=slug)
        if row is None:
            return None
        self._slugs[slug] = row["id"]
        return self._remember(project_from_row(row))

    async def projects_by_id(self, ids: Collection[UUID]) -> dict[UUID, Project]:
        if not ids:
            return {}
        missing = [i for i in ids if i not in self._projects]
        if missing:
            for r in await self.rows("projects_by_id", ids=missing):
                self._remember(project_from_row(r))
        return {i: self._projects[i] for i in ids if i in self._projects}

    async def slugs_like(self, base: str) -> set[str]:
        return {r["slug"] for r in await self.rows("slugs_like", base=base)}

    async def insert_project(self, project: Project) -> None:
        self._forget(project.id)
        await self.send("insert_project", **_project_params(project))

    async def update_project(self, project: Project) -> None:
        self._forget(project.id)
        await self.send("update_project", **_project_params(project))
        await self.send("add_slug", id=project.id, slug=project.slug)

    async def list_projects(self, *, archived: bool, limit: int, offset: int) -> list[Project]:
        rows = await self.rows("list_projects", archived=archived, limit=limit, offset=offset)
        return [project_from_row(r) for r in rows]

    async def project_activity(self, ids: Collection[UUID]) -> dict[UUID, datetime]:
        if not ids:
            return {}
        return {
            r["project_id"]: r["at"] for r in await self.rows("project_activity", ids=list(ids))
        }

    async def allocate_numbers(self, project_id: UUID, count: int) -> int:
        self._forget(project_id)
        cur = await self._conn.execute(
            q("allocate_numbers"), {"org": self._org, "id": project_id, "count": count}
        )
        self.wrote = True
        row = await cur.fetchone()
        assert row is not None
        return int(row["first"])

    # nodes
    async def nodes_by_id(self, ids: Collection[UUID], *, lock: bool = False) -> dict[UUID, Node]:
        if not ids:
            return {}
        rows = await self.rows("nodes_by_id_locked" if lock else "nodes_by_id", ids=list(ids))
        return {r["id"]: node_from_row(r) for r in rows}

    async def node_by_number(
        self, project_id: UUID, number: int, *, lock: bool = False
    ) -> Node | None:
        row = await self.row(
            "node_by_number_locked" if lock else "node_by_number", project=project_id, number=number
        )
        return node_from_row(row) if row else None

    async def insert_nodes(self, nodes: Sequence[Node]) -> None:
        if not nodes:
            return
        await self._send_many("insert_node", [_node_params(n) for n in nodes])

    async def update_node(self, node: Node) -> None:
        await self.send("update_node", **_node_params(node))

    async def children_of(self, ids: Collection[UUID]) -> list[Node]:
        if not ids:
            return []
        return [node_from_row(r) for r in await self.rows("children_of", ids=list(ids))]

    async def ancestors(self, node_id: UUID) -> list[Node]:
        return [node_from_row(r) for r in await self.rows("ancestors", id=node_id)]

    # edges
    async def edges_into(self, ids: Collection[UUID]) -> list[Edge]:
        if not ids:
            return []
        return [edge_from_row(r) for r in await self.rows("edges_into", ids=list(ids))]

    async def edges_out_of(self, ids: Collection[UUID]) -> list[Edge]:
        if not ids:
            return []
        return [edge_from_row(r) for r in await self.rows("edges_out_of", ids=list(ids))]

    async def insert_edges(self, edges: Sequence[Edge]) -> None:
        if not edges:
            return
        params = [
            {
                "org": e.org_id,
                "from_id": e.from_id,
                "to_id": e.to_id,
                "kind": e.kind.value,
                "created_at": e.created_at,
            }
            for e in edges
        ]
        await self._send_many("insert_edge", params)

    async def delete_edge(self, from_id: UUID, to_id: UUID, kind: str) -> bool:
        return await self.write("delete_edge", from_id=from_id, to_id=to_id, kind=kind) > 0

    async def wait_arcs_from(self, ids: Collection[UUID]) -> list[tuple[UUID, UUID]]:
        if not ids:
            return []
        return [
            (r["waiter"], r["waited"]) for r in await self.rows("wait_arcs_from", ids=list(ids))
        ]

    # leases
    async def live_leases(self, node_ids: Collection[UUID]) -> dict[UUID, Lease]:
        if not node_ids:
            return {}
        rows = await self.rows("live_leases", ids=list(node_ids), now=await self.now())
        return {r["node_id"]: lease_from_row(r) for r in rows}

    async def lease_by_id(self, lease_id: UUID, *, lock: bool = False) -> Lease | None:
        row = await self.row("lease_by_id_locked" if lock else "lease_by_id", id=lease_id)
        return lease_from_row(row) if row else None

    async def unreleased_lease(self, node_id: UUID) -> Lease | None:
        row = await self.row("unreleased_lease", id=node_id)
        return lease_from_row(row) if row else None

    async def insert_lease(self, lease: Lease) -> None:
        await self.send("insert_lease", **_lease_params(lease))

    async def update_lease(self, lease: Lease) -> None:
        await self.send("update_lease", **_lease_params(lease))

    async def lease_history(self, node_id: UUID) -> list[Lease]:
        return [lease_from_row(r) for r in await self.rows("lease_history", id=node_id)]

    async def org_live_leases(
        self, project_ids: Collection[UUID] | None, limit: int
    ) -> list[Lease]:
        rows = await self.rows(
            "org_live_leases",
            projects=list(project_ids) if project_ids is not None else None,
            now=await self.now(),
            limit=limit,
        )
        return [lease_from_row(r) for r in rows]

    async def expired_leases(self, limit: int) -> list[Lease]:
        return [
            lease_from_row(r)
            for r in await self.rows("expired_leases", now=await self.now(), limit=limit)
        ]

    # derived state
    async def _query_params(self, query: ReadyQuery) -> Row:
        return {
            "projects": list(query.projects),
            "kinds": list(query.kinds),
            "labels": list(query.labels),
            "any_labels": list(query.any_labels),
            "assignee_kind": query.assignee_kind.value if query.assignee_kind else None,
            "agent_only": query.agent_only,
            "max_rank": query.max_priority_rank,
            "parent": query.parent,
            "exclude": list(query.exclude),
            "now": await self.now(),
        }

    async def derive(self, ids: Collection[UUID]) -> dict[UUID, Derived]:
        if not ids:
            return {}
        rows = await self.rows("derive", ids=list(ids), now=await self.now())
        return {
            r["id"]: Derived(
                blocked=r["blocked"],
                held=r["held"],
                claimed=r["claimed"],
                open_children=r["open_children"],
                archived=r["archived"],
                human_written=r["human_written"],
            )
            for r in rows
        }

    async def ready(self, query: ReadyQuery) -> list[Node]:
        """A page in turn order, read a project at a time (see ready_heads in graph.sql).

        First the head of each project in turn order, stopping once there are as
        many as the page reaches (offset + limit): when there are, every row of
        the page is in the first pass. Otherwise those are all the projects with
        ready work, and each gives its top K nodes, K doubling until the passes
        cover the page or no project has more.
        """
        params = await self._query_params(query)
        after = query.after_project
        need = query.offset + query.limit
        heads = await self.rows("ready_heads", **params, after=after, per=1, limit=need)
        if len(heads) < need and heads:
            params["projects"] = [r["project_id"] for r in heads]
            per = -(-need // len(heads))
            while True:
                rows = await self.rows(
                    "ready_heads", **params, after=after, per=per, limit=per * len(heads)
                )
                counts: dict[UUID, int] = {}
                for r in rows:
                    counts[r["project_id"]] = counts.get(r["project_id"], 0) + 1
                if len(rows) >= need or all(c < per for c in counts.values()):
                    break
                per *= 2
            heads = rows
        turn: dict[UUID, int] = {}
        keyed: list[tuple[int, bool, UUID, Row]] = []
        for r in heads:  # rows come by project in turn order, then by rank within one
            rank = turn.get(r["project_id"], 0)
            turn[r["project_id"]] = rank + 1
            keyed.append((rank, r["wrapped"], r["project_id"], r))
        keyed.sort(key=lambda k: (k[0], k[1], k[2]))
        return [node_from_row(k[3]) for k in keyed[query.offset : need]]

    async def list_nodes(
        self, query: ReadyQuery, *, status: Status | None, held: bool | None
    ) -> list[Node]:
        params = await self._query_params(query)
        rows = await self.rows(
            "list_nodes",
            **params,
            status=status.value if status else None,
            held=held,
            limit=query.limit,
            offset=query.offset,
        )
        return [node_from_row(r) for r in rows]

    async def held_count(self, query: ReadyQuery, *, at_most: int | None = None) -> int:
        params = await self._query_params(query)
        row = await self.row("held_count", **params, at_most=at_most)
        assert row is not None
        return int(row["n"])

    async def lock_next_ready(self, query: ReadyQuery) -> Node | None:
        params = await self._query_params(query)
        row = await self.row("lock_next_ready", **params, after=query.after_project)
        if row is None:
            return None
        self._remember(
            project_from_row(
                {"id": row["project_id"], "org_id": row["org_id"]}
                | {k[2:]: v for k, v in row.items() if k.startswith("p_")}
            )
        )
        return node_from_row(row)

    # claim cursors
    async def get_cursor(self, principal_id: UUID, filter_hash: str) -> UUID | None:
        row = await self.row(
            "get_cursor", principal=principal_id, hash=filter_hash, offset=self._offset
        )
        assert row is not None
        if self._now is None:
            self._now = row["now"]
        return row["project_id"]

    async def set_cursor(self, principal_id: UUID, filter_hash: str, project_id: UUID) -> None:
        await self.send(
            "set_cursor",
            principal=principal_id,
            hash=filter_hash,
            project=project_id,
            now=await self.now(),
        )

    # idempotency
    async def reserve_request(
        self, principal_id: UUID, request_id: str, fingerprint: str
    ) -> StoredRequest | None:
        row = await self.row(
            "reserve_request",
            principal=principal_id,
            rid=request_id,
            fingerprint=fingerprint,
            offset=self._offset,
        )
        assert row is not None
        if self._now is None:
            self._now = row["now"]
        if row["request_id"] is not None:
            self.wrote = True
            return None
        found = await self.row("get_request", principal=principal_id, rid=request_id)
        assert found is not None
        return StoredRequest(fingerprint=found["fingerprint"], response=found["response"])

    async def save_response(
        self, principal_id: UUID, request_id: str, response: dict[str, Any]
    ) -> None:
        await self.send(
            "save_response", principal=principal_id, rid=request_id, response=Jsonb(response)
        )

    async def request_applied_at(self, principal_id: UUID, request_id: str) -> datetime | None:
        row = await self.row("request_applied_at", principal=principal_id, rid=request_id)
        return row["at"] if row else None

    # comments
    async def insert_comment(self, comment: Comment) -> None:
        await self.write(
            "insert_comment",
            id=comment.id,
            project_id=comment.project_id,
            node_id=comment.node_id,
            author_id=comment.author_id,
            body=comment.body,
            in_reply_to=comment.in_reply_to,
            created_at=comment.created_at,
            edited_at=comment.edited_at,
            resolved_at=comment.resolved_at,
            resolved_by=comment.resolved_by,
        )

    async def insert_comments(self, comments: Sequence[Comment]) -> None:
        if not comments:
            return
        params = [
            {
                "org": self._org,
                "id": c.id,
                "project_id": c.project_id,
                "node_id": c.node_id,
                "author_id": c.author_id,
                "body": c.body,
                "in_reply_to": c.in_reply_to,
                "created_at": c.created_at,
                "edited_at": c.edited_at,
                "resolved_at": c.resolved_at,
                "resolved_by": c.resolved_by,
            }
            for c in comments
        ]
        await self._send_many("insert_comment", params)

    # imports
    async def origins_of_project(self, project_id: UUID, source: str) -> list[NodeOrigin]:
        rows = await self.rows("origins_of_project", project_id=project_id, source=source)
        return [_origin_from_row(r) for r in rows]

    async def origins_by_external_id(self, external_id: str) -> list[NodeOrigin]:
        rows = await self.rows("origins_by_external_id", external_id=external_id)
        return [_origin_from_row(r) for r in rows]

    async def upsert_origins(self, origins: Sequence[NodeOrigin]) -> None:
        if not origins:
            return
        params = [
            {
                "org": self._org,
                "node_id": o.node_id,
                "project_id": o.project_id,
                "source": o.source,
                "external_id": o.external_id,
                "extra": Jsonb(dict(o.extra)),
            }
            for o in origins
        ]
        await self._send_many("upsert_origin", params)

    async def update_comment(self, comment: Comment, *, revision: Revision | None = None) -> None:
        if revision is not None:
            await self.write(
                "insert_comment_revision",
                comment=comment.id,
                body=revision.body,
                author=revision.author_id,
                at=revision.at,
            )
        await self.write(
            "update_comment",
            id=comment.id,
            body=comment.body,
            edited_at=comment.edited_at,
            resolved_at=comment.resolved_at,
            resolved_by=comment.resolved_by,
        )

    async def _with_revisions(self, rows: list[Row]) -> list[Comment]:
        if not rows:
            return []
        revisions: dict[UUID, list[Revision]] = {}
        for r in await self.rows("comment_revisions", ids=[row["id"] for row in rows]):
            revisions.setdefault(r["comment_id"], []).append(
                Revision(body=r["body"], author_id=r["author_id"], at=r["at"])
            )
        return [comment_from_row(row, tuple(revisions.get(row["id"], ()))) for row in rows]

    async def comment_by_id(self, comment_id: UUID, *, lock: bool = False) -> Comment | None:
        row = await self.row("comment_by_id_locked" if lock else "comment_by_id", id=comment_id)
        return (await self._with_revisions([row]))[0] if row else None

    async def comments_of(self, node_ids: Collection[UUID]) -> list[Comment]:
        if not node_ids:
            return []
        return await self._with_revisions(await self.rows("comments_of", ids=list(node_ids)))

    async def comment_hint(self, node_id: UUID) -> tuple[int, datetime | None]:
        row = await self.row("comment_hint", id=node_id)
        assert row is not None
        return int(row["unresolved"]), row["newest_at"]

    # search
    async def search(self, query: SearchQuery) -> list[tuple[Node, float]]:
        rows = await self.rows(
            "search",
            terms=list(query.terms),
            projects=list(query.projects),
            archived=query.include_archived,
            limit=query.limit,
        )
        return [(node_from_row(r), float(r["rank"])) for r in rows]

    # usage and cost
    async def insert_usage(self, record: UsageRecord) -> None:
        await self.write(
            "insert_usage",
            id=record.id,
            project_id=record.project_id,
            node_id=record.node_id,
            lease_id=record.lease_id,
            principal_id=record.principal_id,
            model=record.model,
            input_tokens=record.input_tokens,
            output_tokens=record.output_tokens,
            cache_read_tokens=record.cache_read_tokens,
            cache_write_tokens=record.cache_write_tokens,
            kind=record.kind.value,
            basis=record.basis,
            created_at=record.created_at,
        )

    @staticmethod
    def _scope(scope: UsageScope) -> Row:
        return {"node": scope.node, "project": scope.project, "subtree": scope.subtree}

    async def usage_records(self, scope: UsageScope, limit: int) -> list[UsageRecord]:
        rows = await self.rows("usage_records", **self._scope(scope), limit=limit)
        return [usage_from_row(r) for r in rows]

    async def usage_totals(self, scope: UsageScope) -> list[UsageTotal]:
        return [
            UsageTotal(
                kind=UsageKind(r["kind"]),
                model=r["model"],
                input_tokens=r["input_tokens"],
                output_tokens=r["output_tokens"],
                cache_read_tokens=r["cache_read_tokens"],
                cache_write_tokens=r["cache_write_tokens"],
            )
            for r in await self.rows("usage_totals", **self._scope(scope))
        ]

    async def rates(self) -> list[Rate]:
        return [
            Rate(
                org_id=r["org_id"],
                model=r["model"],
                input=r["input"],
                output=r["output"],
                cache_read=r["cache_read"],
                cache_write=r["cache_write"],
                currency=r["currency"],
                updated_by=r["updated_by"],
                updated_at=r["updated_at"],
            )
            for r in await self.rows("rates")
        ]

    async def upsert_rate(self, rate: Rate) -> None:
        await self.write(
            "upsert_rate",
            model=rate.model,
            input=rate.input,
            output=rate.output,
            cache_read=rate.cache_read,
            cache_write=rate.cache_write,
            currency=rate.currency,
            updated_by=rate.updated_by,
            updated_at=rate.updated_at,
        )

    async def org_limits(self) -> dict[str, int]:
        r = await self.row("org_limits")
        own: dict[str, int] = r["limits"] if r else {}
        return dict(own)

    async def set_org_limits(self, limits: Mapping[str, int]) -> None:
        await self.write("set_org_limits", limits=Jsonb(dict(limits)))

    async def budgets(self, scope_ids: Collection[UUID]) -> dict[UUID, Budget]:
        if not scope_ids:
            return {}
        return {
            r["scope_id"]: budget_from_row(r)
            for r in await self.rows("budgets", ids=list(scope_ids))
        }

    async def set_budget(self, budget: Budget) -> None:
        await self.write(
            "set_budget",
            scope_id=budget.scope_id,
            scope=budget.scope,
            budget=budget.budget,
            cap=budget.cap,
            updated_at=budget.updated_at,
        )

    async def capped_nodes(self) -> list[Budget]:
        return [budget_from_row(r) for r in await self.rows("capped_nodes")]

    async def subtree_ids(self, root: UUID) -> list[UUID]:
        return [r["id"] for r in await self.rows("subtree_ids", id=root)]

    # artifacts and blob metadata
    async def insert_artifacts(self, artifacts: Sequence[ArtifactRecord]) -> None:
        if not artifacts:
            return
        params = [
            {
                "id": a.id,
                "org": self._org,
                "node_id": a.node_id,
                "name": a.name,
                "description": a.description,
                "parts": Jsonb([part_to_dict(p) for p in a.parts]),
                "metadata": Jsonb(a.metadata),
                "author_id": a.author_id,
                "created_at": a.created_at,
            }
            for a in artifacts
        ]
        async with self._conn.cursor() as cur:
            await cur.executemany(q("insert_artifact"), params)
        self.wrote = True

    async def artifacts_of(self, node_ids: Collection[UUID]) -> list[ArtifactRecord]:
        if not node_ids:
            return []
        return [
            ArtifactRecord(
                id=r["id"],
                org_id=r["org_id"],
                node_id=r["node_id"],
                name=r["name"],
                description=r["description"],
                parts=tuple(part_from_dict(p) for p in r["parts"]),
                metadata=r["metadata"],
                author_id=r["author_id"],
                created_at=r["created_at"],
            )
            for r in await self.rows("artifacts_of", ids=list(node_ids))
        ]

    async def count_artifacts(self, node_id: UUID) -> int:
        row = await self.row("count_artifacts", id=node_id)
        assert row is not None
        return int(row["n"])

    async def blob(self, digest: str) -> BlobRecord | None:
        row = await self.row("blob", digest=digest)
        if row is None:
            return None
        return BlobRecord(
            digest=row["digest"],
            size=row["size"],
            media_type=row["media_type"],
            created_by=row["created_by"],
            created_at=row["created_at"],
        )

    async def insert_blob(self, blob: BlobRecord) -> None:
        await self.write(
            "insert_blob",
            digest=blob.digest,
            size=blob.size,
            media_type=blob.media_type,
            created_by=blob.created_by,
            created_at=blob.created_at,
        )

    # events
    async def append_events(self, events: Sequence[Event]) -> None:
        if not events:
            return
        params = [
            {
                "id": e.id,
                "org": e.org_id,
                "project_id": e.project_id,
                "node_id": e.node_id,
                "principal_id": e.principal_id,
                "principal_kind": e.principal_kind.value,
                "on_behalf_of": e.on_behalf_of,
                "identity_scheme": e.identity_scheme,
                "request_id": e.request_id,
                "op": e.op,
                "reason": e.reason,
                "before": Jsonb(e.before) if e.before is not None else None,
                "after": Jsonb(e.after) if e.after is not None else None,
                "occurred_at": e.occurred_at,
            }
            for e in events
        ]
        if len(params) == 1:  # the event and its deliveries in one statement
            await self.send("insert_event_announced", now=await self.now(), **params[0])
        else:
            await self._send_many("insert_event", params)
            await self.announce(events)
        self.notified = True

    async def events(self, *, node_id: UUID | None = None, limit: int = 1000) -> list[Event]:
        return [event_from_row(r) for r in await self.rows("events", node=node_id, limit=limit)]

    # the change stream (queries/events.sql): positions are (xid, id)
    async def events_after(
        self,
        after: EventPosition,
        *,
        projects: Collection[UUID] = (),
        ops: Collection[str] = (),
        limit: int,
    ) -> EventBatch:
        rows = await self.rows(
            "events_after",
            seq=str(after.seq),
            id=after.id,
            projects=list(projects),
            ops=list(ops),
            limit=limit,
        )
        found = [
            (EventPosition(seq=int(r["seq"]), id=r["id"]), event_from_row(r))
            for r in rows
            if r["seq"] is not None
        ]
        return EventBatch(events=found, horizon=EventPosition(seq=int(rows[0]["horizon"])))

    async def replay_start(self, since: datetime) -> EventPosition:
        row = await self.row("replay_start", since=since)
        assert row is not None
        return EventPosition(seq=int(row["seq"]))

    async def event_positions(
        self, ids: Collection[UUID]
    ) -> tuple[dict[UUID, EventPosition], EventPosition]:
        rows = await self.rows("event_positions", ids=list(ids))
        found = {
            r["id"]: EventPosition(seq=int(r["seq"]), id=r["id"])
            for r in rows
            if r["seq"] is not None
        }
        return found, EventPosition(seq=int(rows[0]["horizon"]))
