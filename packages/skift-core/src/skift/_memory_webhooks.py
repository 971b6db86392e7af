"""The in-memory store's webhook endpoints and deliveries (the reference for skift_pg's).

Transactions run one at a time, so an event's place in the log is its commit
order and every transaction below the end has finished: an open delivery may be
sealed as soon as a worker claims it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol
from uuid import UUID

import attrs

from ._models import Event, Project
from ._refs import new_id
from ._webhook_records import Delivery, DeliveryStats, DueDelivery, Endpoint, Position

ERROR_BYTES = 512


class WebhookState:
    """Endpoints and deliveries of every organization, and each endpoint's open delivery."""

    def __init__(self) -> None:
        self.endpoints: dict[UUID, Endpoint] = {}
        self.deliveries: dict[UUID, Delivery] = {}
        self.open: dict[UUID, UUID] = {}  # endpoint id -> its open delivery's id


class _State(Protocol):
    webhooks: WebhookState
    events: list[Event]
    projects: dict[UUID, Project]


def cut_error(error: str | None) -> str | None:
    """An error message cut to at most 512 bytes of UTF-8."""
    if error is None:
        return None
    data = error.encode()
    if len(data) <= ERROR_BYTES:
        return error
    return data[: ERROR_BYTES - 3].decode(errors="ignore") + "..."


class MemoryWebhooksTx:
    """The webhook part of :class:`~skift.MemoryStore`'s transactions (a mixin: the
    transaction sets ``_wstate`` to the store's state and ``_remember`` to its undoable
    write of one mapping entry)."""

    _org: UUID
    _now: datetime
    _wstate: _State
    _remember: Callable[[dict[Any, Any], Any, Any], None]

    def _announce(self, start: int) -> None:
        """Coalesce the events appended from log index ``start`` into open deliveries."""
        w = self._wstate.webhooks
        log = self._wstate.events
        for i in range(start, len(log)):
            e = log[i]
            if e.project_id is None:
                continue
            pos: Position = (i + 1, e.id)
            for ep in w.endpoints.values():
                if ep.project_id != e.project_id or not ep.wants(e.op):
                    continue
                if ep.watermark is None or pos <= ep.watermark:
                    continue
                open_id = w.open.get(ep.id)
                d = w.deliveries.get(open_id) if open_id is not None else None
                if d is None:
                    d = Delivery(
                        id=new_id(),
                        org_id=ep.org_id,
                        project_id=ep.project_id,
                        endpoint_id=ep.id,
                        through=pos,
                        counts={e.op: 1},
                        next_attempt_at=self._now,
                        created_at=self._now,
                    )
                    self._remember(w.open, ep.id, d.id)
                else:
                    counts = dict(d.counts)
                    counts[e.op] = counts.get(e.op, 0) + 1
                    d = attrs.evolve(d, through=max(d.through, pos), counts=counts)
                self._remember(w.deliveries, d.id, d)

    async def insert_endpoint(self, endpoint: Endpoint, *, start_event: UUID) -> None:
        at = next(i for i, e in enumerate(self._wstate.events) if e.id == start_event)
        ep = attrs.evolve(endpoint, watermark=(at + 1, start_event))
        self._remember(self._wstate.webhooks.endpoints, ep.id, ep)

    async def endpoint_by_id(self, endpoint_id: UUID, *, lock: bool = False) -> Endpoint | None:
        ep = self._wstate.webhooks.endpoints.get(endpoint_id)
        return ep if ep is not None and ep.org_id == self._org else None

    async def endpoint_by_url(self, project_id: UUID, url: str) -> Endpoint | None:
        for ep in self._wstate.webhooks.endpoints.values():
            if ep.org_id == self._org and ep.project_id == project_id and ep.url == url:
                return ep
        return None

    async def endpoints(self, project_id: UUID | None) -> list[Endpoint]:
        rows = [
            ep
            for ep in self._wstate.webhooks.endpoints.values()
            if ep.org_id == self._org and (project_id is None or ep.project_id == project_id)
        ]
        return sorted(rows, key=lambda ep: ep.id)

    async def update_endpoint(self, endpoint: Endpoint) -> None:
        old = self._wstate.webhooks.endpoints[endpoint.id]
        new = attrs.evolve(
            old, secret=endpoint.secret, events=endpoint.events, disabled_at=endpoint.disabled_at
        )
        self._remember(self._wstate.webhooks.endpoints, endpoint.id, new)

    async def deliveries(
        self,
        *,
        endpoint_id: UUID | None,
        project_id: UUID | None,
        parked_only: bool,
        limit: int,
        hidden: Collection[UUID] = (),
        after: tuple[datetime, UUID] | None = None,
    ) -> list[Delivery]:
        rows = [
            d
            for d in self._wstate.webhooks.deliveries.values()
            if d.org_id == self._org
            and (endpoint_id is None or d.endpoint_id == endpoint_id)
            and (project_id is None or d.project_id == project_id)
            and (not parked_only or d.parked_at is not None)
            and d.project_id not in hidden
            and (after is None or (d.created_at, d.id) < after)
        ]
        rows.sort(key=lambda d: (d.created_at, d.id), reverse=True)
        return rows[:limit]

    async def delivery_by_id(self, delivery_id: UUID, *, lock: bool = False) -> Delivery | None:
        d = self._wstate.webhooks.deliveries.get(delivery_id)
        return d if d is not None and d.org_id == self._org else None

    async def insert_delivery(self, delivery: Delivery) -> None:
        self._remember(self._wstate.webhooks.deliveries, delivery.id, delivery)

    async def update_delivery(self, delivery: Delivery) -> None:
        old = self._wstate.webhooks.deliveries[delivery.id]
        new = attrs.evolve(
            old,
            attempts=delivery.attempts,
            next_attempt_at=delivery.next_attempt_at,
            delivered_at=delivery.delivered_at,
            parked_at=delivery.parked_at,
        )
        self._remember(self._wstate.webhooks.deliveries, delivery.id, new)


# ------------------------------------------------------------------ the worker's side


def _pending(d: Delivery) -> bool:
    return d.delivered_at is None and d.parked_at is None


def claim(state: _State, now: datetime, *, limit: int, lease: timedelta) -> list[DueDelivery]:
    w = state.webhooks
    sealed_pending: dict[UUID, Delivery] = {}  # endpoint -> its oldest sealed pending delivery
    for d in sorted(w.deliveries.values(), key=lambda d: d.id):
        if d.sealed_at is not None and _pending(d):
            sealed_pending.setdefault(d.endpoint_id, d)
    candidates: list[Delivery] = []
    for ep in w.endpoints.values():
        if ep.disabled_at is not None:
            continue
        head = sealed_pending.get(ep.id)
        if head is None and ep.id in w.open:
            head = w.deliveries[w.open[ep.id]]
        if head is not None and head.next_attempt_at <= now:
            candidates.append(head)
    candidates.sort(key=lambda d: (d.next_attempt_at, d.id))
    out: list[DueDelivery] = []
    for d in candidates[:limit]:
        ep = w.endpoints[d.endpoint_id]
        if d.sealed_at is None:
            d = attrs.evolve(d, sealed_at=now, after=ep.watermark)
            w.endpoints[ep.id] = ep = attrs.evolve(ep, watermark=d.through)
            del w.open[ep.id]
        d = attrs.evolve(d, attempts=d.attempts + 1, next_attempt_at=now + lease)
        w.deliveries[d.id] = d
        slug = state.projects[d.project_id].slug
        out.append(DueDelivery(delivery=d, url=ep.url, secret=ep.secret, project_slug=slug))
    return out


def settle(
    state: _State,
    now: datetime,
    delivery: Delivery,
    *,
    delivered: bool,
    status: int | None,
    error: str | None,
    retry_in: timedelta | None,
) -> bool:
    w = state.webhooks
    d = w.deliveries.get(delivery.id)
    if d is None or not _pending(d) or d.attempts != delivery.attempts:
        return False
    if delivered:
        d = attrs.evolve(d, delivered_at=now, last_status=status, last_error=None)
    elif retry_in is None:
        d = attrs.evolve(d, parked_at=now, last_status=status, last_error=cut_error(error))
    else:
        d = attrs.evolve(
            d, next_attempt_at=now + retry_in, last_status=status, last_error=cut_error(error)
        )
    w.deliveries[d.id] = d
    return True


def stats(state: _State) -> DeliveryStats:
    rows: Sequence[Delivery] = list(state.webhooks.deliveries.values())
    pending = [d for d in rows if _pending(d)]
    return DeliveryStats(
        pending=len(pending),
        delivered=sum(1 for d in rows if d.delivered_at is not None),
        parked=sum(1 for d in rows if d.parked_at is not None),
        oldest_pending_at=min((d.created_at for d in pending), default=None),
    )
