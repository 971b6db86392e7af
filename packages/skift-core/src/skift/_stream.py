"""The change stream: events in commit order after a cursor (docs/events.md).

An event's id is a ULID minted before its transaction commits, so a
transaction can take a low id, stall, and commit after a higher id was
delivered; a consumer that resumed after the higher id would skip it for
good. The stream therefore reads by a commit-ordered position
(:class:`~skift._store.EventPosition`) and only below the store's horizon,
the point below which every transaction has finished.

A cursor is that position and a time, ``v1.<seq>.<event ULID or 0>.<unix ms>``,
sealed for the organization (``_seal``: encrypted and authenticated with a
server key the store keeps, so a client reads nothing from it and another
organization's cursor is refused): an event's own cursor is dated when
the event occurred, the cursor a read returns to go on from when it was
handed out. The time is informational: the replay window
(``Limits.event_replay_window``) is enforced against what the store holds. A
cursor whose next event occurred before the window opened is refused with
:class:`~skift.CursorExpired` naming the oldest cursor still good, never
answered with an empty page, whatever time the cursor carries.

Two versions travel in a cursor: the seal's (``v2.`` outside, ``_seal``) and the
position's (``v1.`` inside: one cluster's commit order, a transaction id and an event
id). A store that orders events otherwise (per organization on a Citus shard, or by
logical decoding; docs/operations.md) mints a new position version; a cursor of a
version this server does not read is refused naming it (:class:`Invalid`, the same
next move as a malformed cursor: start over from the replay window), never misread.
Clients hold cursors opaque, so nothing changes for them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import attrs

from ._errors import CursorExpired, Invalid
from ._refs import parse_ulid, ulid_str
from ._seal import SECRET_NAME, CursorSeal, seal_for
from ._store import EventBatch, EventPosition, Tx
from ._views import EventInfo, EventPage

if TYPE_CHECKING:
    from ._context import Actor, Context
    from ._models import Event

VERSION = "v1"
"""The position format this server mints and reads: one cluster's commit order."""
_CURSOR = re.compile(r"^v1\.(?P<seq>\d{1,20})\.(?P<id>0|[0-9A-Za-z]{26})\.(?P<ms>\d{1,15})$")
_VERSIONED = re.compile(r"^v(?P<n>\d{1,6})\.")
_NIL = EventPosition(seq=0).id

_BAD_CURSOR_NEXT = (
    "Pass a cursor exactly as watch_events (or an event's cursor) returned it, "
    "or leave it out to start at the oldest event still in the replay window."
)


async def seal_of(tx: Tx) -> CursorSeal:
    """What seals the cursors of the transaction's organization."""
    return seal_for(await tx.secret(SECRET_NAME), tx.org_id)


def encode(pos: EventPosition, at: datetime, seal: CursorSeal) -> str:
    """The opaque cursor for a position, handed out at ``at``, sealed for the organization."""
    ident = "0" if pos.id == _NIL else ulid_str(pos.id)
    return seal.seal(f"{VERSION}.{pos.seq}.{ident}.{int(at.timestamp() * 1000)}")


def decode(text: str, seal: CursorSeal) -> tuple[EventPosition, datetime]:
    """The position a cursor names and when it was handed out; :class:`Invalid` if malformed,
    tampered with, or minted for another organization (the three look the same)."""
    shown = text if len(text) <= 80 else text[:77] + "..."
    bad = Invalid(f"{shown!r} is not a skift event cursor", next=_BAD_CURSOR_NEXT, field="cursor")
    plain = seal.open(text.strip(), bad) if text else ""
    other = _VERSIONED.match(plain)
    if other is not None and f"v{other.group('n')}" != VERSION:
        raise Invalid(
            f"this event cursor has position format v{other.group('n')}, which this server "
            f"does not read (it reads {VERSION}): a server of another version, or of a "
            "store the events have moved from, made it",
            next="Leave the cursor out to start at the oldest event still in the replay "
            "window (events already handled come again: skip them by id).",
            field="cursor",
        )
    m = _CURSOR.match(plain) if plain else None
    ident = parse_ulid(m.group("id")) if m and m.group("id") != "0" else _NIL
    if m is None or ident is None:
        raise bad
    try:
        at = datetime.fromtimestamp(int(m.group("ms")) / 1000, UTC)
    except (OverflowError, ValueError, OSError):
        raise Invalid(
            f"{text!r} is not a skift event cursor", next=_BAD_CURSOR_NEXT, field="cursor"
        ) from None
    return EventPosition(seq=int(m.group("seq")), id=ident), at


async def watch(
    engine: Context,
    tx: Tx,
    actor: Actor,
    *,
    after: str | None,
    projects: Sequence[str],
    ops: Sequence[str],
    limit: int,
) -> EventPage:
    """One read of the stream: the events after ``after`` (or from the start of the
    replay window), filtered, and the cursor to read from next.

    The events of a project the principal may not read are left out (the policy's
    read decision, ``Context.hidden``, pushed into the store's read).
    """
    size = engine.page_size(limit)
    seal = await seal_of(tx)
    now = await tx.now()
    since = now - engine.limits.event_replay_window
    project_ids = [(await engine.resolve_project(tx, p)).id for p in projects]
    if not after:
        start = await tx.replay_start(since)
    else:
        start, _handed_out = decode(after, seal)
    hidden = () if project_ids else await engine.hidden(tx)
    batch = await tx.events_after(
        start, projects=project_ids, ops=tuple(ops), limit=size, hidden=hidden
    )
    if after:
        # An unfiltered page starts with the event the window check asks about: one read
        # of the events (every partition of them) instead of two.
        unfiltered = not project_ids and not ops and not hidden
        await _check_window(engine, tx, start, since, now, seal, batch if unfiltered else None)
    # A cursor may stand above this read's horizon: PostgreSQL's horizon errs low (a
    # transaction that ended between the snapshot and the pg_stat_activity read still
    # counts), so it can fall below one handed out earlier. Nothing is below the cursor
    # that was not delivered, so the page is empty and the cursor stays where it is. (A
    # cursor from another store or organization does not get here: it does not unseal.)
    infos = await engine.event_infos(tx, [e for _, e in batch.events])
    events = tuple(
        attrs.evolve(info, cursor=_event_cursor(pos, event, seal))
        for info, (pos, event) in zip(infos, batch.events, strict=True)
    )
    # A full page resumes after its last event; otherwise every row up to the horizon was
    # read (the filters left the rest out), so the next read starts there.
    nxt = batch.events[-1][0] if len(batch.events) >= size else max(start, batch.horizon)
    return EventPage(events=events, cursor=encode(nxt, now, seal))


async def with_cursors(engine: Context, tx: Tx, events: Sequence[Event]) -> list[EventInfo]:
    """Event views carrying their cursors. An event not yet below the horizon (a
    transaction older than it may still commit) gets the horizon's cursor instead, so
    resuming from it can only deliver it again, never skip what commits late."""
    infos = await engine.event_infos(tx, events)
    if not events:
        return infos
    now = await tx.now()
    seal = await seal_of(tx)
    positions, horizon = await tx.event_positions([e.id for e in events])
    out: list[EventInfo] = []
    for info, e in zip(infos, events, strict=True):
        pos = positions.get(e.id, horizon)
        cursor = _event_cursor(pos, e, seal) if pos < horizon else encode(horizon, now, seal)
        out.append(attrs.evolve(info, cursor=cursor))
    return out


async def _check_window(
    engine: Context,
    tx: Tx,
    start: EventPosition,
    since: datetime,
    now: datetime,
    seal: CursorSeal,
    first: EventBatch | None = None,
) -> None:
    """Refuse a cursor whose next event has left the replay window (``first``: an
    unfiltered read from the cursor already made in this transaction, else one is made).

    The check reads what the store holds, not the time a cursor carries (a client
    can edit that): the first event of the organization after the cursor, whatever
    the filters. If it occurred before the window opened, resuming would deliver
    history the window no longer promises (or skip it), so the cursor has expired.
    A cursor with nothing after it, or only events inside the window, is good
    however old it is: nothing it would deliver has gone.
    """
    if first is None:
        first = await tx.events_after(start, limit=1)
    if not first.events:
        return
    _, event = first.events[0]
    if event.occurred_at >= since:
        return
    oldest = encode(await tx.replay_start(since), now, seal)
    raise CursorExpired(
        f"the cursor is older than the replay window "
        f"({_days(engine.limits.event_replay_window)}): the next event after it occurred "
        f"at {event.occurred_at:%Y-%m-%d %H:%M:%S} UTC, and the events from there to the "
        "window's start are no longer replayed",
        next="Resynchronize from the current state (what changed since was not "
        f"delivered), then watch from the oldest cursor still good: {oldest}",
        oldest_cursor=oldest,
    )


def _event_cursor(pos: EventPosition, event: Event, seal: CursorSeal) -> str:
    """An event's own cursor: its position, dated when it occurred (so the same event
    always carries the same cursor, and it expires when the event leaves the window)."""
    return encode(pos, event.occurred_at, seal)


def _days(window: timedelta) -> str:
    if window.total_seconds() % 86400 == 0:
        days = int(window.total_seconds() // 86400)
        return f"{days} day" + ("" if days == 1 else "s")
    return f"{window}"
