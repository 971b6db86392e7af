"""The PostgreSQL store's webhook endpoints and delivery outbox (queries/webhooks.sql).

A mixin for the store's transactions (endpoints, deliveries, the upsert that
coalesces appended events into open deliveries) and the worker's statements,
which run across organizations outside a transaction.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol
from uuid import UUID

import psycopg
from psycopg.types.json import Jsonb

from skift import Delivery, DeliveryStats, DueDelivery, Endpoint, Event

from ._queries import q

Row = dict[str, Any]
ERROR_BYTES = 512


def _pos(seq: object, ident: object) -> tuple[int, UUID] | None:
    if seq is None or ident is None:
        return None
    assert isinstance(ident, UUID)
    return int(str(seq)), ident


def endpoint_from_row(row: Row) -> Endpoint:
    return Endpoint(
        id=row["id"],
        org_id=row["org_id"],
        project_id=row["project_id"],
        url=row["url"],
        events=tuple(row["events"]),
        secret=bytes(row["secret"]),
        created_at=row["created_at"],
        disabled_at=row["disabled_at"],
        watermark=_pos(row["watermark_seq"], row["watermark_id"]),
    )


def delivery_from_row(row: Row) -> Delivery:
    through = _pos(row["through_seq_text"], row["through_id"])
    assert through is not None
    return Delivery(
        id=row["id"],
        org_id=row["org_id"],
        project_id=row["project_id"],
        endpoint_id=row["endpoint_id"],
        through=through,
        counts={str(k): int(v) for k, v in row["counts"].items()},
        after=_pos(row["after_seq_text"], row["after_id"]),
        sealed_at=row["sealed_at"],
        attempts=row["attempts"],
        next_attempt_at=row["next_attempt_at"],
        delivered_at=row["delivered_at"],
        parked_at=row["parked_at"],
        last_status=row["last_status"],
        last_error=row["last_error"],
        created_at=row["created_at"],
    )


def cut_error(error: str | None) -> str | None:
    """An error message cut to at most 512 bytes of UTF-8 (the column's CHECK)."""
    if error is None:
        return None
    data = error.encode()
    if len(data) <= ERROR_BYTES:
        return error
    return data[: ERROR_BYTES - 3].decode(errors="ignore") + "..."


class _Tx(Protocol):
    async def now(self) -> datetime: ...
    async def send(self, name: str, /, **params: Any) -> None: ...
    async def rows(self, name: str, /, **params: Any) -> list[Row]: ...
    async def row(self, name: str, /, **params: Any) -> Row | None: ...


class PgWebhooksTx:
    """The webhook part of the store's transactions (a mixin over ``PgTx``)."""

    async def announce(self: _Tx, events: Sequence[Event]) -> None:
        """Coalesce appended events into the open deliveries of their projects' endpoints."""
        mine = [e for e in events if e.project_id is not None]
        if not mine:
            return
        await self.send(
            "announce_events",
            projects=[e.project_id for e in mine],
            ops=[e.op for e in mine],
            ids=[e.id for e in mine],
            now=await self.now(),
        )

    async def insert_endpoint(self: _Tx, endpoint: Endpoint, *, start_event: UUID) -> None:
        await self.send(
            "insert_endpoint",
            id=endpoint.id,
            project_id=endpoint.project_id,
            url=endpoint.url,
            events=list(endpoint.events),
            secret=endpoint.secret,
            created_at=endpoint.created_at,
            disabled_at=endpoint.disabled_at,
            start_event=start_event,
        )

    async def endpoint_by_id(
        self: _Tx, endpoint_id: UUID, *, lock: bool = False
    ) -> Endpoint | None:
        row = await self.row("endpoint_by_id_locked" if lock else "endpoint_by_id", id=endpoint_id)
        return endpoint_from_row(row) if row else None

    async def endpoint_by_url(self: _Tx, project_id: UUID, url: str) -> Endpoint | None:
        row = await self.row("endpoint_by_url", project_id=project_id, url=url)
        return endpoint_from_row(row) if row else None

    async def endpoints(self: _Tx, project_id: UUID | None) -> list[Endpoint]:
        return [endpoint_from_row(r) for r in await self.rows("endpoints", project_id=project_id)]

    async def endpoint_page(
        self: _Tx,
        project_id: UUID | None,
        *,
        hidden: Collection[UUID],
        after: UUID | None,
        limit: int | None,
    ) -> list[Endpoint]:
        rows = await self.rows(
            "endpoint_page", project_id=project_id, hidden=list(hidden), after=after, limit=limit
        )
        return [endpoint_from_row(r) for r in rows]

    async def update_endpoint(self: _Tx, endpoint: Endpoint) -> None:
        await self.send(
            "update_endpoint",
            id=endpoint.id,
            secret=endpoint.secret,
            events=list(endpoint.events),
            disabled_at=endpoint.disabled_at,
        )

    async def deliveries(
        self: _Tx,
        *,
        endpoint_id: UUID | None,
        project_id: UUID | None,
        parked_only: bool,
        limit: int,
        hidden: Collection[UUID] = (),
        after: tuple[datetime, UUID] | None = None,
    ) -> list[Delivery]:
        rows = await self.rows(
            "deliveries",
            endpoint_id=endpoint_id,
            project_id=project_id,
            parked_only=parked_only,
            limit=limit,
            hidden=list(hidden),
            after_at=None if after is None else after[0],
            after_id=None if after is None else after[1],
        )
        return [delivery_from_row(r) for r in rows]

    async def delivery_by_id(
        self: _Tx, delivery_id: UUID, *, lock: bool = False
    ) -> Delivery | None:
        row = await self.row("delivery_by_id", id=delivery_id)
        return delivery_from_row(row) if row else None

    async def insert_delivery(self: _Tx, delivery: Delivery) -> None:
        after = delivery.after
        await self.send(
            "insert_delivery",
            id=delivery.id,
            project_id=delivery.project_id,
            endpoint_id=delivery.endpoint_id,
            after_seq=str(after[0]) if after else None,
            after_id=after[1] if after else None,
            through_seq=str(delivery.through[0]),
            through_id=delivery.through[1],
            counts=Jsonb(dict(delivery.counts)),
            sealed_at=delivery.sealed_at,
            attempts=delivery.attempts,
            next_attempt_at=delivery.next_attempt_at,
            created_at=delivery.created_at,
        )

    async def update_delivery(self: _Tx, delivery: Delivery) -> None:
        await self.send(
            "update_delivery",
            id=delivery.id,
            attempts=delivery.attempts,
            next_attempt_at=delivery.next_attempt_at,
            delivered_at=delivery.delivered_at,
            parked_at=delivery.parked_at,
        )


# ------------------------------------------------------------------ the worker's side

Conn = psycopg.AsyncConnection[Row]


async def _now(conn: Conn, offset: timedelta) -> datetime:
    cur = await conn.execute(q("store_now"), {"offset": offset})
    row = await cur.fetchone()
    assert row is not None
    return row["now"]


async def claim(
    conn: Conn, offset: timedelta, *, limit: int, lease: timedelta
) -> list[DueDelivery]:
    now = await _now(conn, offset)
    cur = await conn.execute(
        q("claim_deliveries"), {"now": now, "until": now + lease, "limit": limit}
    )
    return [
        DueDelivery(
            delivery=delivery_from_row(r),
            url=r["url"],
            secret=bytes(r["secret"]),
            project_slug=r["project_slug"],
        )
        for r in await cur.fetchall()
    ]


async def settle(
    conn: Conn,
    offset: timedelta,
    delivery: Delivery,
    *,
    delivered: bool,
    status: int | None,
    error: str | None,
    retry_in: timedelta | None,
) -> bool:
    now = await _now(conn, offset)
    cur = await conn.execute(
        q("settle_delivery"),
        {
            "org": delivery.org_id,
            "id": delivery.id,
            "attempts": delivery.attempts,
            "delivered": delivered,
            "retry_at": now + retry_in if retry_in is not None and not delivered else None,
            "now": now,
            "status": status,
            "error": None if delivered else cut_error(error),
        },
    )
    return cur.rowcount == 1


async def stats(conn: Conn) -> DeliveryStats:
    cur = await conn.execute(q("delivery_stats"))
    row = await cur.fetchone()
    assert row is not None
    return DeliveryStats(
        pending=row["pending"],
        delivered=row["delivered"],
        parked=row["parked"],
        oldest_pending_at=row["oldest_pending_at"],
    )
