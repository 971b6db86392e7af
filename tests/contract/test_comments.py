"""Comments: their own entity on a node, threaded, edited with revisions kept, resolved once."""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

import pytest

import skift

if TYPE_CHECKING:
    from conftest import Snap


@pytest.fixture
async def proj(sk: skift.LocalSkift) -> str:
    """c#1 and c#2, both open and ready."""
    p = await sk.create_project("C")
    await sk.patch(
        p.slug,
        [skift.CreateNode(title="Research providers"), skift.CreateNode(title="Write it up")],
    )
    return p.slug


async def ops_of(sk: skift.LocalSkift, ref: str) -> list[str]:
    return [e.op for e in await sk.events(ref=ref)]


async def test_thread(sk: skift.LocalSkift, proj: str) -> None:
    """A reply names the comment it answers; a node's comments come oldest first, attributed."""
    bot = sk.acting_as(skift.Agent("bot"))
    first = await sk.add_comment("c#1", "Consider **token refresh**.")
    reply = await bot.add_comment("c#1", "Looked into it.", reply_to=first.id)
    deeper = await sk.add_comment("c#1", "Thanks", reply_to=reply.id)
    got = await sk.comments("#1", project=proj)
    assert [c.id for c in got] == [first.id, reply.id, deeper.id]
    assert [c.in_reply_to for c in got] == [None, first.id, reply.id]
    assert [(c.author, c.author_kind) for c in got] == [
        ("ada", "user"),
        ("bot", "agent"),
        ("ada", "user"),
    ]
    assert got[0].node == "c#1"
    assert got[0].node_title == "Research providers"
    assert got[0].body == "Consider **token refresh**."
    assert got[0].edited_at is None
    assert got[0].resolved_at is None
    assert got[0].revisions == ()
    assert await sk.comments("c#2") == []
    assert skift.to_json(got[1])["in_reply_to"] == first.id


async def test_reply_goes_on_the_same_node(sk: skift.LocalSkift, proj: str, snap: Snap) -> None:
    """A reply to a comment on another node, to no comment, or to a malformed id writes nothing."""
    first = await sk.add_comment("c#1", "On one")
    before = await snap(sk)
    with pytest.raises(skift.Invalid) as ei:
        await sk.add_comment("c#2", "On two", reply_to=first.id)
    assert "c#1" in ei.value.message
    assert "c#2" in ei.value.message
    with pytest.raises(skift.NotFound):
        await sk.add_comment("c#2", "x", reply_to=skift.ulid_str(skift.new_id()))
    with pytest.raises(skift.Invalid):
        await sk.add_comment("c#2", "x", reply_to="not-an-id")
    assert await snap(sk) == before
    assert await sk.comments("c#2") == []


async def test_edits_keep_revisions(sk: skift.LocalSkift, proj: str) -> None:
    """Every edit keeps the prior body with who wrote it and when; an edit to the same body is nothing."""
    c = await sk.add_comment("c#1", "v1")
    e1 = await sk.edit_comment(c.id, "v2")
    e2 = await sk.edit_comment(c.id, "v3")
    assert e2.body == "v3"
    assert [r.body for r in e2.revisions] == ["v1", "v2"]
    assert [(r.author, r.author_kind) for r in e2.revisions] == [("ada", "user")] * 2
    assert e2.revisions[0].at == c.created_at
    assert e2.revisions[1].at == e1.edited_at
    assert e2.edited_at is not None
    assert e2.edited_at >= e1.edited_at  # pyright: ignore[reportOperatorIssue]
    events = len(await sk.events(ref="c#1"))
    same = await sk.edit_comment(c.id, "v3")
    assert same == e2
    assert len(await sk.events(ref="c#1")) == events
    assert (await sk.comments("c#1"))[0] == e2


async def test_only_the_author_edits(sk: skift.LocalSkift, proj: str, snap: Snap) -> None:
    """Nobody edits another's comment, not even a person; the refusal says to reply instead."""
    c = await sk.add_comment("c#1", "mine")
    before = await snap(sk)
    for other in (skift.Agent("bot"), skift.User("bob")):
        with pytest.raises(skift.Refused) as ei:
            await sk.acting_as(other).edit_comment(c.id, "theirs")
        assert "author" in ei.value.message
        assert "Reply" in ei.value.next
    assert await snap(sk) == before
    assert (await sk.comments("c#1"))[0].body == "mine"
    bots = await sk.acting_as(skift.Agent("bot")).add_comment("c#1", "bot's")
    assert (await sk.acting_as(skift.Agent("bot")).edit_comment(bots.id, "bot's, edited")).body


async def test_resolve_once_and_replies_on_their_own(sk: skift.LocalSkift, proj: str) -> None:
    """Resolving sets resolved_at/by once (again changes nothing); a reply stays unresolved."""
    first = await sk.add_comment("c#1", "Question")
    reply = await sk.add_comment("c#1", "Answer", reply_to=first.id)
    done = await sk.acting_as(skift.User("bob")).resolve_comment(first.id)
    assert done.resolved_by == "bob"
    assert done.resolved_at is not None
    events = len(await sk.events(ref="c#1"))
    again = await sk.resolve_comment(first.id)
    assert (again.resolved_at, again.resolved_by) == (done.resolved_at, "bob")
    assert len(await sk.events(ref="c#1")) == events
    got = {c.id: c for c in await sk.comments("c#1")}
    assert got[reply.id].resolved_at is None
    assert got[reply.id].resolved_by is None


async def test_who_may_resolve(sk: skift.LocalSkift, proj: str, snap: Snap) -> None:
    """An agent resolves its own comments and those on work it filed or holds a lease on; a person any."""
    bot = sk.acting_as(skift.Agent("bot"))
    other = sk.acting_as(skift.Agent("other"))
    on_1 = [await sk.add_comment("c#1", f"note {i}") for i in range(3)]
    before = await snap(sk)
    with pytest.raises(skift.Refused) as ei:
        await bot.resolve_comment(on_1[0].id)
    assert "c#1" in ei.value.message
    assert ei.value.next
    assert await snap(sk) == before
    mine = await bot.add_comment("c#1", "bot's note")
    assert (await bot.resolve_comment(mine.id)).resolved_by == "bot"
    claim = await bot.claim("c#1")
    assert (await bot.resolve_comment(on_1[0].id)).resolved_by == "bot"
    with pytest.raises(skift.Refused):
        await other.resolve_comment(on_1[1].id)  # not its lease
    await bot.release("c#1", lease=claim.lease.id)
    filed = await other.create(proj, "Filed by other")
    note = await sk.add_comment(filed.ref, "on other's work")
    assert (await other.resolve_comment(note.id)).resolved_by == "other"
    assert (await sk.resolve_comment(on_1[2].id)).resolved_by == "ada"


async def test_each_change_writes_an_event(sk: skift.LocalSkift, proj: str) -> None:
    """Creating, editing and resolving a comment each write an event on its node, with its actor."""
    bot = sk.acting_as(skift.Agent("bot"))
    c = await bot.add_comment("c#1", "draft")
    await bot.edit_comment(c.id, "final")
    await sk.resolve_comment(c.id)
    events = [e for e in await sk.events(ref="c#1") if "comment" in e.op]
    assert [(e.op, e.principal, e.node) for e in events] == [
        ("add_comment", "bot", "c#1"),
        ("edit_comment", "bot", "c#1"),
        ("resolve_comment", "ada", "c#1"),
    ]
    assert events[0].after is not None
    assert events[0].after["comment"] == c.id
    assert events[1].before is not None
    assert events[1].before["body"] == "draft"


async def test_claim_carries_the_comments_hint(sk: skift.LocalSkift, proj: str) -> None:
    """A claim reports how many comments are unresolved and when the newest unresolved one was written."""
    bot = sk.acting_as(skift.Agent("bot"))
    claim = await bot.claim("c#2")
    assert claim.comments == skift.CommentsHint(unresolved=0, newest_at=None)
    older = await sk.add_comment("c#1", "first")
    newer = await sk.add_comment("c#1", "second", reply_to=older.id)
    await sk.add_comment("c#1", "third")
    third = (await sk.comments("c#1"))[-1]
    await sk.resolve_comment(third.id)
    claim = await bot.claim("c#1")
    assert claim.comments.unresolved == 2
    assert claim.comments.newest_at == newer.created_at


async def test_add_comment_in_a_patch(sk: skift.LocalSkift, proj: str, snap: Snap) -> None:
    """add_comment is a patch operation: it takes an alias made earlier in the patch, and a
    malformed one is refused naming the operation's field."""
    res = await sk.patch(
        proj,
        [
            skift.CreateNode(alias="spike", title="Spike"),
            skift.AddComment(node="spike", body="Time-box this to a day."),
            {"op": "add_comment", "node": "c#1", "body": "See the spike."},
        ],
    )
    ref = res.created["spike"]
    assert [c.body for c in await sk.comments(ref)] == ["Time-box this to a day."]
    assert [c.body for c in await sk.comments("c#1")] == ["See the spike."]
    assert "add_comment" in await ops_of(sk, ref)
    before = await snap(sk)
    with pytest.raises(skift.Invalid) as ei:
        await sk.patch(
            proj,
            [skift.CreateNode(title="X"), {"op": "add_comment", "node": "c#1", "body": 7}],
        )
    assert ei.value.details.get("field") == "ops[1].body"
    with pytest.raises(skift.Invalid):
        await sk.patch(proj, [{"op": "add_comment", "node": "c#1"}])
    assert await snap(sk) == before


async def test_bodies_are_checked(sk: skift.LocalSkift, proj: str, snap: Snap) -> None:
    """An oversized or empty body is refused, through the call and in a patch, and nothing is written."""
    big = "x" * (skift.DEFAULT_LIMITS.comment_bytes + 1)
    before = await snap(sk)
    with pytest.raises(skift.LimitExceeded) as ei:
        await sk.add_comment("c#1", big)
    assert ei.value.details.get("bound") == skift.DEFAULT_LIMITS.comment_bytes
    with pytest.raises(skift.LimitExceeded):
        await sk.patch(proj, [skift.CreateNode(title="X"), skift.AddComment(node="c#1", body=big)])
    with pytest.raises(skift.Invalid):
        await sk.add_comment("c#1", "   ")
    c = await sk.add_comment("c#1", "ok")
    with pytest.raises(skift.LimitExceeded):
        await sk.edit_comment(c.id, big)
    assert [x.body for x in await sk.comments("c#1")] == ["ok"]
    assert (await snap(sk))["nodes"] == before["nodes"]


async def test_unknown_and_foreign_nodes(sk: skift.LocalSkift, proj: str) -> None:
    """A node or comment of another organization is exactly like one that does not exist."""
    with pytest.raises(skift.NotFound):
        await sk.add_comment("c#99", "nobody home")
    node = await sk.get("c#1")
    c = await sk.add_comment("c#1", "ours")
    eve = sk.acting_as(skift.User("eve"), org=f"other-{secrets.token_hex(4)}")
    with pytest.raises(skift.NotFound):
        await eve.add_comment(node.id, "hello from outside")
    with pytest.raises(skift.NotFound):
        await eve.comments(node.id)
    for call in (eve.resolve_comment(c.id), eve.edit_comment(c.id, "x")):
        with pytest.raises(skift.NotFound):
            await call
    assert [x.body for x in await sk.comments("c#1")] == ["ours"]


async def test_held_and_leased_yes_archived_no(sk: skift.LocalSkift, proj: str) -> None:
    """A hold blocks claiming, not commenting; a lease is not needed to comment; an archived project
    is read-only: no comment, edit or resolution there."""
    bot = sk.acting_as(skift.Agent("bot"))
    await sk.hold("c#2", reason="not this week")
    assert (await bot.add_comment("c#2", "noted")).body == "noted"
    await bot.claim("c#1")
    assert (await sk.acting_as(skift.Agent("other")).add_comment("c#1", "fyi")).body == "fyi"
    c = await sk.add_comment("c#1", "before archiving")
    await sk.archive_project(proj, reason="done")
    with pytest.raises(skift.Refused) as ei:
        await sk.add_comment("c#1", "after")
    assert "archived" in ei.value.message
    for call in (sk.edit_comment(c.id, "changed"), sk.resolve_comment(c.id)):
        with pytest.raises(skift.Refused):
            await call
    assert len(await sk.comments("c#1")) == 2


async def test_add_comment_is_idempotent(sk: skift.LocalSkift, proj: str) -> None:
    """The same request id returns the first comment and writes one; other content under it is refused."""
    a = await sk.add_comment("c#1", "once", request_id="r-1")
    b = await sk.add_comment("c#1", "once", request_id="r-1")
    assert a == b
    assert len(await sk.comments("c#1")) == 1
    with pytest.raises(skift.IdempotencyMismatch):
        await sk.add_comment("c#1", "twice", request_id="r-1")
