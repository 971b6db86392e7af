"""The change stream: events after a cursor, in commit order, filtered, resumable (docs/events.md)."""

from __future__ import annotations

import asyncio
import itertools
import secrets
import time
from datetime import timedelta
from typing import Any

import pytest

import skift

# A read that expects events waits for them: PostgreSQL delivers nothing past a transaction
# still open anywhere on the server (another test's, say) until it ends, so "not yet" is not
# "never". A read that finds what it expects returns at once.
SOON = timedelta(seconds=10)


async def _collect(
    sk: skift.LocalSkift, want: int, after: str | None = None, **kw: Any
) -> tuple[list[skift.EventInfo], str]:
    """The next ``want`` events after ``after``, page by page, and the cursor to go on from;
    then nothing more."""
    out: list[skift.EventInfo] = []
    cursor = after
    while len(out) < want:
        page = await sk.watch_events(after=cursor, wait=SOON, **kw)
        assert page.events, f"only {len(out)} of {want} events arrived"
        out.extend(page.events)
        cursor = page.cursor
    last = await sk.watch_events(after=cursor, **kw)
    assert last.events == (), "nothing past what was expected"
    return out, last.cursor


async def test_pages_deliver_every_event_once_in_commit_order(sk: skift.LocalSkift) -> None:
    """Paging from the start of the window delivers each event once, in the order they committed."""
    p = await sk.create_project("Stream")
    for i in range(4):
        await sk.patch(p.slug, [skift.CreateNode(title=f"n{i}.{j}") for j in range(3)])
    await sk.patch(p.slug, [skift.UpdateNode(node="#1", title="renamed")])
    listed = await sk.events()
    assert len(listed) == 14
    streamed, _ = await _collect(sk, 14, limit=5)
    assert [e.id for e in streamed] == [e.id for e in listed]
    assert [e.op for e in streamed][:2] == ["create_project", "create_node"]
    assert streamed[-1].op == "update_node"
    # each event's cursor resumes right after it
    for before, nxt in itertools.pairwise(streamed):
        assert before.cursor
        page = await sk.watch_events(after=before.cursor, limit=1, wait=SOON)
        assert [e.id for e in page.events] == [nxt.id]


async def test_a_cursor_resumes_where_the_consumer_stopped(sk: skift.LocalSkift) -> None:
    """A consumer that stops and comes back with its cursor gets exactly what happened since."""
    p = await sk.create_project("Resume")
    await sk.patch(p.slug, [skift.CreateNode(title="before")])
    _, cursor = await _collect(sk, 2)
    await sk.patch(p.slug, [skift.CreateNode(title="after 1"), skift.CreateNode(title="after 2")])
    await sk.hold("resume#1", reason="parked for the demo")
    got, _ = await _collect(sk, 3, after=cursor)
    assert [(e.op, e.node) for e in got] == [
        ("create_node", "resume#2"),
        ("create_node", "resume#3"),
        ("hold_node", "resume#1"),
    ]
    assert got[-1].reason == "parked for the demo"


async def test_events_listing_carries_cursors_to_resume_from(sk: skift.LocalSkift) -> None:
    """The plain events() read hands out cursors too: watching after one continues from there."""
    p = await sk.create_project("Listing")
    await sk.patch(p.slug, [skift.CreateNode(title="a"), skift.CreateNode(title="b")])
    listed = await sk.events()
    assert all(e.cursor for e in listed)
    got: list[str] = []
    cursor = listed[-2].cursor
    while listed[-1].id not in got:
        page = await sk.watch_events(after=cursor, wait=SOON)
        assert page.events
        got += [e.id for e in page.events]
        cursor = page.cursor
    # At least once: an event whose transaction was not yet below the horizon when it was
    # listed (another transaction on the server was still open) gets the horizon's cursor,
    # so events from there on may come again. Usually that is just the next one.
    assert set(got) <= {e.id for e in listed}


async def test_filters_by_project_and_op_and_the_cursor_moves_past_the_rest(
    sk: skift.LocalSkift,
) -> None:
    """Filtered reads return only matching events; the cursor moves past what they left out."""
    a = await sk.create_project("Alpha")
    b = await sk.create_project("Beta")
    await sk.patch(a.slug, [skift.CreateNode(title="a1")])
    await sk.patch(b.slug, [skift.CreateNode(title="b1"), skift.CreateNode(title="b2")])
    claim = await sk.claim("alpha#1")
    await sk.complete("alpha#1", lease=claim.lease.id, result="done")

    only_a, cursor_a = await _collect(sk, 4, projects=[a.slug])
    assert [e.op for e in only_a] == ["create_project", "create_node", "claim", "complete_node"]
    assert {e.project for e in only_a} == {"alpha"}
    only_b, _ = await _collect(sk, 3, projects=[b.id])  # a project by id works too
    assert [e.node for e in only_b] == [None, "beta#1", "beta#2"]
    completes, _ = await _collect(sk, 1, ops=["complete_node"])
    assert [(e.op, e.node) for e in completes] == [("complete_node", "alpha#1")]
    both, _ = await _collect(sk, 2, projects=[a.slug], ops=["create_node", "claim"])
    assert [e.op for e in both] == ["create_node", "claim"]

    # A burst elsewhere, then one matching event: a one-event read finds it, and only it.
    await sk.patch(b.slug, [skift.CreateNode(title=f"noise {i}") for i in range(30)])
    empty = await sk.watch_events(after=cursor_a, projects=[a.slug], limit=1)
    assert empty.events == ()
    await sk.patch(a.slug, [skift.CreateNode(title="a2")])
    got, _ = await _collect(sk, 1, after=empty.cursor, projects=[a.slug], limit=1)
    assert [(e.op, e.node) for e in got] == [("create_node", "alpha#2")]


async def test_a_malformed_cursor_is_invalid_and_says_what_to_pass(sk: skift.LocalSkift) -> None:
    await sk.create_project("Bad cursors")
    bad_ones = (
        "nope",
        "v1.12",
        "v2.1.0.1",
        "v1.x.0.1",
        "v1.1.NOT-A-ULID-AT-ALL-NOPE.1",
        "01JD" * 6,
    )
    for bad in bad_ones:
        with pytest.raises(skift.Invalid) as err:
            await sk.watch_events(after=bad)
        assert "not a skift event cursor" in err.value.message
        assert "watch_events" in err.value.next


async def test_cursors_are_opaque_and_bound_to_their_organization(sk: skift.LocalSkift) -> None:
    """A cursor says nothing readable (no transaction id, no event id), and a cursor minted for
    one organization is refused by another exactly like a malformed one; a tampered cursor too.
    The same cursor keeps working in its own organization."""
    await sk.create_project("Sealed")
    await sk.patch("sealed", [skift.CreateNode(title="one"), skift.CreateNode(title="two")])
    events = (await sk.watch_events()).events
    cursor = events[0].cursor
    assert cursor.startswith("v2.")
    assert events[0].id not in cursor
    assert not any(part.isdigit() for part in cursor.split("."))
    again = await sk.watch_events(after=cursor)
    assert [e.id for e in again.events] == [e.id for e in events[1:]]

    other = sk.acting_as(skift.User("eve"), org=f"other-{secrets.token_hex(4)}")
    await other.create_project("Theirs")
    for foreign in (cursor, again.cursor):
        with pytest.raises(skift.Invalid, match="not a skift event cursor"):
            await other.watch_events(after=foreign)
    flipped = cursor[:-2] + ("A" if cursor[-2] != "A" else "B") + cursor[-1]
    with pytest.raises(skift.Invalid, match="not a skift event cursor"):
        await sk.watch_events(after=flipped)


async def test_limits_and_unknown_projects(sk: skift.LocalSkift) -> None:
    await sk.create_project("Limits")
    with pytest.raises(skift.LimitExceeded):
        await sk.watch_events(limit=100_000)
    with pytest.raises(skift.Invalid):
        await sk.watch_events(limit=0)
    with pytest.raises(skift.NotFound):
        await sk.watch_events(projects=["no-such-project"])


async def test_a_cursor_older_than_the_window_is_refused_naming_the_oldest_good_one(
    sk: skift.LocalSkift,
) -> None:
    """An expired cursor is an explicit error naming the oldest cursor still good, never an empty page."""
    p = await sk.create_project("Old")
    await sk.patch(p.slug, [skift.CreateNode(title="long ago")])
    _, caught_up = await _collect(sk, 2)
    # a consumer that read only the first event, six days later (its cursor handed out then)
    sk.store.set_clock_offset(timedelta(days=6))  # inside the 7-day window: still good
    first = await sk.watch_events(limit=1)
    assert [e.op for e in first.events] == ["create_project"]
    assert (await sk.watch_events(after=caught_up)).events == ()

    sk.store.set_clock_offset(timedelta(days=8))
    with pytest.raises(skift.CursorExpired) as err:
        # handed out two days ago, but its next event left the window: the store decides
        await sk.watch_events(after=first.cursor)
    assert isinstance(err.value, skift.Conflict)
    oldest = err.value.details["oldest_cursor"]
    assert oldest in err.value.next
    assert "replay window" in err.value.message
    # Events from eight days ago are outside the window; new ones come after the oldest cursor.
    await sk.patch(p.slug, [skift.CreateNode(title="today")])
    got, _ = await _collect(sk, 1, after=oldest)
    assert [(e.op, e.node) for e in got] == [("create_node", "old#2")]
    fresh, _ = await _collect(sk, 1)  # no cursor: from the oldest event still in the window
    assert [e.node for e in fresh] == ["old#2"]


async def test_a_caught_up_cursor_outlives_the_window_when_nothing_it_would_deliver_left_it(
    sk: skift.LocalSkift,
) -> None:
    """The window is judged on the events after a cursor, not on its age: a consumer that was
    caught up and came back after a quiet spell missed nothing, so it goes on."""
    p = await sk.create_project("Quiet")
    _, cursor = await _collect(sk, 1)
    sk.store.set_clock_offset(timedelta(days=30))
    assert (await sk.watch_events(after=cursor)).events == ()
    await sk.patch(p.slug, [skift.CreateNode(title="after a month")])
    got, _ = await _collect(sk, 1, after=cursor)
    assert [(e.op, e.node) for e in got] == [("create_node", "quiet#1")]


async def test_wait_returns_when_another_principal_writes(sk: skift.LocalSkift) -> None:
    """A waiting read returns soon after someone else commits, with what they wrote."""
    p = await sk.create_project("Waiting")
    _, cursor = await _collect(sk, 1)

    started = time.monotonic()
    nothing = await sk.watch_events(after=cursor, wait=timedelta(seconds=0.3))
    assert nothing.events == ()
    assert time.monotonic() - started >= 0.25

    bot = sk.acting_as(skift.Agent("bot"))
    watcher = asyncio.create_task(sk.watch_events(after=cursor, wait=timedelta(seconds=20)))
    await asyncio.sleep(0.3)
    assert not watcher.done()
    wrote = time.monotonic()
    await bot.patch(p.slug, [skift.CreateNode(title="filed by the bot")])
    page = await asyncio.wait_for(watcher, 15)
    assert time.monotonic() - wrote < 5
    assert [(e.op, e.node, e.principal) for e in page.events] == [
        ("create_node", "waiting#1", "bot")
    ]


async def test_another_organizations_events_never_appear(sk: skift.LocalSkift) -> None:
    """The stream is scoped to the caller's organization, cursors included."""
    p = await sk.create_project("Mine")
    _, cursor = await _collect(sk, 1)
    other = sk.acting_as(skift.User("eve"), org="elsewhere-" + p.id[-8:].lower())
    q = await other.create_project("Theirs")
    await other.patch(q.slug, [skift.CreateNode(title="secret")])
    await sk.patch(p.slug, [skift.CreateNode(title="mine")])

    mine, _ = await _collect(sk, 1, after=cursor)
    assert [(e.op, e.node) for e in mine] == [("create_node", "mine#1")]
    theirs, _ = await _collect(other, 2)
    assert {e.project for e in theirs} == {"theirs"}
    # their cursor, used here, is refused exactly like a malformed one (it is sealed for them)
    with pytest.raises(skift.Invalid, match="not a skift event cursor"):
        await sk.watch_events(after=theirs[0].cursor)
    with pytest.raises(skift.NotFound):
        await sk.watch_events(projects=[q.id])
