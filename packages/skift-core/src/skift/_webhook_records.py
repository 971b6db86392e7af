"""The rows of webhook delivery (seed 004), as the stores keep them.

Two things with different lifetimes: an :class:`Endpoint` is configuration a
person sets and forgets; a :class:`Delivery` is an attempt that can fail, wait
and be abandoned. A delivery is written in the same transaction as the events it
announces (the store's ``append_events`` coalesces them into the endpoint's one
open delivery) and attempted afterwards by a worker, so a broken receiver never
rolls back or slows a write.

Positions are change-stream positions (``skift._store.EventPosition``) held as
``(seq, id)`` pairs, so this module depends on nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from uuid import UUID

import attrs

Position = tuple[int, UUID]


@attrs.frozen(kw_only=True)
class Endpoint:
    """Where a project's changes are announced.

    ``events``: the operations it is told about (empty: all). ``secret``: the
    32 bytes deliveries are signed with; stored because an HMAC needs the key,
    shown to a person once (at creation and rotation) and never again.
    ``watermark``: the end of the window of the newest delivery sealed for it
    (at creation: the position of its own creation event), where the next
    delivery's window starts.
    """

    id: UUID
    org_id: UUID
    project_id: UUID
    url: str
    events: tuple[str, ...] = ()
    secret: bytes = attrs.field(repr=False)
    created_at: datetime
    disabled_at: datetime | None = None
    watermark: Position | None = None

    def wants(self, op: str) -> bool:
        return not self.events or op in self.events


@attrs.frozen(kw_only=True)
class Delivery:
    """One notification to one endpoint: a window ``(after, through]`` of the change
    stream of one project, and how many events of each operation it holds.

    Open (``sealed_at`` None): events that commit coalesce into it, moving
    ``through``; an endpoint has at most one open delivery. Sealed: the worker fixed
    its window (``after`` is the endpoint's watermark) when it first attempted it;
    every attempt then sends the same window under the same id. Delivered after a
    2xx; parked once the retry schedule is spent.
    """

    id: UUID
    org_id: UUID
    project_id: UUID
    endpoint_id: UUID
    through: Position
    counts: Mapping[str, int] = attrs.field(factory=dict[str, int])
    after: Position | None = None
    sealed_at: datetime | None = None
    attempts: int = 0
    next_attempt_at: datetime
    delivered_at: datetime | None = None
    parked_at: datetime | None = None
    last_status: int | None = None
    last_error: str | None = None
    created_at: datetime

    @property
    def state(self) -> str:
        if self.delivered_at is not None:
            return "delivered"
        if self.parked_at is not None:
            return "parked"
        return "pending"


@attrs.frozen(kw_only=True)
class DueDelivery:
    """A delivery a worker claimed for one attempt, with what it needs to send it."""

    delivery: Delivery
    url: str
    secret: bytes = attrs.field(repr=False)
    project_slug: str


@attrs.frozen(kw_only=True)
class DeliveryStats:
    """How many deliveries are in each state, and how long the oldest pending one waited."""

    pending: int = 0
    delivered: int = 0
    parked: int = 0
    oldest_pending_at: datetime | None = None
