"""Tenancy: every read and write is scoped to the caller's organization.

A principal of another organization can read, list, explain, claim or watch
nothing of this one, and a reference into this organization behaves for it
exactly like a reference to nothing: the same ``NotFound``, the same message
shape, as a reference that names nothing at all (no existence oracle).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

import skift

# These tests name the organizations "default" and "other-org" and reach the server's
# database in process: on "remote" each gets a server to itself.
pytestmark = pytest.mark.own_server

if TYPE_CHECKING:
    from conftest import Snap


@dataclass(frozen=True)
class Default:
    """What the organization "default" holds, as ids an outsider might have learned."""

    project_id: str
    node_id: str  # p#1, ready
    leased_id: str  # p#2, leased by bot
    lease: str  # bot's lease on p#2
    token_id: str  # a token of bot's


@pytest.fixture
async def default(sk: skift.LocalSkift) -> Default:
    """Project p in org "default": p#1 ready, p#2 leased by the agent bot, p#3 held, p#4 a gate."""
    bot = sk.acting_as(skift.Agent("bot"))
    p = await sk.create_project("P")
    res = await sk.patch(
        p.slug,
        [
            skift.CreateNode(title="Ready work"),
            skift.CreateNode(title="Leased work"),
            skift.CreateNode(title="Held work"),
            skift.CreateNode(title="A gate", assignee_kind=skift.AssigneeKind.USER),
        ],
    )
    await sk.hold("p#3", reason="parked")
    claim = await bot.claim("p#2")
    token = await sk.create_token("bot")
    return Default(
        project_id=p.id,
        node_id=res.nodes[0].id,
        leased_id=res.nodes[1].id,
        lease=claim.lease.id,
        token_id=token.id,
    )


@pytest.fixture
def eve(sk: skift.LocalSkift) -> skift.LocalSkift:
    """A person of another organization, on the same store."""
    return sk.acting_as(skift.User("eve"), org="other-org")


def unknown_ulid() -> str:
    return skift.ulid_str(skift.new_id())


Call = Callable[[str], Awaitable[object]]


def mask(text: str, ref: str) -> str:
    """``text`` with ``ref`` (as a whole word, so slug p leaves "project" alone) masked out."""
    return re.sub(rf"(?<![\w-]){re.escape(ref)}(?![\w-])", "<ref>", text)


async def failure(call: Call, ref: str) -> tuple[type[BaseException], str, str]:
    """The error a call with ``ref`` raises, with ``ref`` masked out of its message."""
    with pytest.raises(skift.SkiftError) as ei:
        await call(ref)
    return type(ei.value), mask(ei.value.message, ref), mask(ei.value.next, ref)


async def assert_like_nothing(call: Call, foreign: str, nothing: str) -> None:
    """A reference into the other organization fails exactly as a reference to nothing does."""
    got = await failure(call, foreign)
    assert got[0] is skift.NotFound
    assert got == await failure(call, nothing)


def node_calls(h: skift.LocalSkift, d: Default) -> dict[str, Call]:
    """Every call that takes a node reference, as the outsider makes it."""
    return {
        "get": lambda r: h.get(r),
        "resolve": lambda r: h.resolve(r),
        "explain": lambda r: h.explain(r),
        "claim": lambda r: h.claim(r),
        "leases": lambda r: h.leases(r),
        "events": lambda r: h.events(ref=r),
        "heartbeat": lambda r: h.heartbeat(r, lease=d.lease),
        "complete": lambda r: h.complete(r, lease=d.lease, result="x"),
        "release": lambda r: h.release(r, lease=d.lease),
        "drop": lambda r: h.drop(r, reason="x"),
        "reopen": lambda r: h.reopen(r, reason="x"),
        "hold": lambda r: h.hold(r, reason="x"),
        "unhold": lambda r: h.unhold(r, reason="x"),
        "gate": lambda r: h.gate(r, lease=d.lease, title="x"),
        "ready under": lambda r: h.ready(parent=r),
        "list under": lambda r: h.list_nodes(parent=r),
    }


CALLS = [
    "get",
    "resolve",
    "explain",
    "claim",
    "leases",
    "events",
    "heartbeat",
    "complete",
    "release",
    "drop",
    "reopen",
    "hold",
    "unhold",
    "gate",
    "ready under",
    "list under",
]


@pytest.mark.parametrize("call", CALLS)
async def test_foreign_node_by_ulid_is_nothing(
    sk: skift.LocalSkift, eve: skift.LocalSkift, default: Default, snap: Snap, call: str
) -> None:
    """Every call that takes a node reference, given the ULID of another organization's node
    (ready or leased, with that node's live lease where it takes one), fails exactly like an
    unknown ULID: NotFound, same message, same next move; and nothing is written in either."""
    calls = node_calls(eve, default)
    before, before_eve = await snap(sk), await snap(eve)
    for foreign in (default.node_id, default.leased_id):
        await assert_like_nothing(calls[call], foreign, unknown_ulid())
    assert await snap(sk) == before
    assert await snap(eve) == before_eve


@pytest.mark.parametrize("call", ["get", "resolve", "explain", "claim", "leases", "hold", "drop"])
async def test_foreign_node_by_slug_is_nothing(
    sk: skift.LocalSkift, eve: skift.LocalSkift, default: Default, call: str
) -> None:
    """A slug#N reference into another organization (p#1 exists there) fails exactly like a slug
    nobody has; qualified as default/p#1 it fails exactly like default/p#99 or default/nope#1."""
    calls = node_calls(eve, default)

    async def by_slug(slug: str) -> object:
        return await calls[call](f"{slug}#1")

    await assert_like_nothing(by_slug, "p", "nope")
    for nothing in ("default/p#99", "default/nope#1"):
        await assert_like_nothing(calls[call], "default/p#1", nothing)
    # and from inside the organization, naming it is harmless
    assert (await sk.get("default/p#1")).ref == "p#1"


async def test_foreign_reads_are_empty(
    sk: skift.LocalSkift, eve: skift.LocalSkift, default: Default
) -> None:
    """Listing, Ready and the event log show the other organization nothing (not even how much of
    it is held), and ClaimNext finds nothing ready."""
    assert (await sk.ready()).nodes  # there is ready work in "default"
    page = await eve.list_nodes()
    assert (page.nodes, page.held_count, page.next_page) == ((), 0, None)
    ready = await eve.ready()
    assert (ready.nodes, ready.held_count) == ((), 0)
    assert await eve.list_projects(archived=True) == []
    assert await eve.events() == []
    with pytest.raises(skift.NothingReady) as ei:
        await eve.claim_next()
    assert ei.value.details["held_count"] == 0
    outsider = eve.acting_as(skift.Agent("eve-bot"), org="other-org")
    with pytest.raises(skift.NothingReady):
        await outsider.claim_next()
    assert (await outsider.ready()).nodes == ()


async def test_foreign_project_is_nothing(
    sk: skift.LocalSkift, eve: skift.LocalSkift, default: Default, snap: Snap
) -> None:
    """A project of another organization, by slug, by ULID or qualified, is like no project at all,
    for reading, for filters, for patches, for holds and for focus."""
    before = await snap(sk)
    calls: list[Call] = [
        lambda r: eve.get_project(r),
        lambda r: eve.list_nodes(projects=[r]),
        lambda r: eve.ready(projects=[r]),
        lambda r: eve.claim_next(projects=[r]),
        lambda r: eve.patch(r, [skift.CreateNode(title="Planted")]),
        lambda r: eve.get("#1", project=r),
        lambda r: eve.claim("#1", project=r),
        lambda r: eve.hold_project(r, reason="x"),
        lambda r: eve.unhold_project(r, reason="x"),
        lambda r: eve.rename_project(r, "Mine"),
        lambda r: eve.update_project(r, priority="p0"),
        lambda r: eve.archive_project(r, reason="x"),
        lambda r: eve.focus([r], reason="x"),
        lambda r: eve.clear_focus(project=r, reason="x"),
        lambda r: eve.events(project=r, ref="#1"),
    ]
    for call in calls:
        await assert_like_nothing(call, "p", "nope")
        await assert_like_nothing(call, default.project_id, unknown_ulid())
        await assert_like_nothing(call, "default/p", "default/nope")
    assert await snap(sk) == before
    assert await eve.list_projects(archived=True) == []


@pytest.mark.parametrize(
    "op",
    [
        "update",
        "complete",
        "drop",
        "hold",
        "parent",
        "blocked_by",
        "edge_from",
        "edge_to",
        "unlink_from",
    ],
)
async def test_patch_touching_a_foreign_node_is_nothing(
    sk: skift.LocalSkift, eve: skift.LocalSkift, default: Default, snap: Snap, op: str
) -> None:
    """A patch in the outsider's own project that touches another organization's node by ULID, as
    a node, a parent, a blocker or either end of an edge, fails like an unknown ULID and writes
    nothing, in either organization."""
    mine = await eve.create_project("Eve's")
    await eve.patch(mine.slug, [skift.CreateNode(title="Eve's work")])
    make = {
        "update": lambda r: [skift.UpdateNode(node=r, title="Hijacked")],
        "complete": lambda r: [skift.CompleteNode(node=r)],
        "drop": lambda r: [skift.DropNode(node=r, reason="x")],
        "hold": lambda r: [skift.HoldNode(node=r, reason="x")],
        "parent": lambda r: [skift.CreateNode(title="Under it", parent=r)],
        "blocked_by": lambda r: [skift.CreateNode(title="After it", blocked_by=(r,))],
        "edge_from": lambda r: [skift.AddEdge(from_=r, to="#1")],
        "edge_to": lambda r: [skift.AddEdge(from_="#1", to=r)],
        "unlink_from": lambda r: [skift.RemoveEdge(from_=r, to="#1")],
    }[op]
    before, before_eve = await snap(sk), await snap(eve)

    async def patch(ref: str) -> object:
        return await eve.patch(mine.slug, [skift.CreateNode(title="Alongside"), *make(ref)])

    await assert_like_nothing(patch, default.node_id, unknown_ulid())
    await assert_like_nothing(patch, "default/p#1", "default/p#99")
    assert await snap(sk) == before
    assert await snap(eve) == before_eve


async def test_foreign_lease_is_no_lease(
    sk: skift.LocalSkift, eve: skift.LocalSkift, default: Default, snap: Snap
) -> None:
    """Another organization's live lease id, sent with the outsider's own writes, is refused exactly
    like a lease id that names nothing."""
    mine = await eve.create_project("Eve's")
    await eve.patch(mine.slug, [skift.CreateNode(title="Eve's work")])
    own = await eve.get(f"{mine.slug}#1")
    before = await snap(sk)

    async def with_lease(lease: str) -> list[tuple[type[BaseException], str, str]]:
        out: list[tuple[type[BaseException], str, str]] = []
        for call in (
            lambda: eve.patch(mine.slug, [skift.UpdateNode(node="#1", title="x")], lease=lease),
            lambda: eve.heartbeat(own.id, lease=lease),
            lambda: eve.release(own.id, lease=lease),
            lambda: eve.complete(own.id, lease=lease),
        ):
            with pytest.raises(skift.SkiftError) as ei:
                await call()
            out.append((type(ei.value), mask(ei.value.message, lease), ei.value.next))
        return out

    foreign = await with_lease(default.lease)
    assert foreign == await with_lease(unknown_ulid())
    assert all(issubclass(kind, skift.FencingError) for kind, _, _ in foreign)
    assert await snap(sk) == before
    assert (await sk.get("p#2")).claimed


async def test_foreign_principals_and_tokens_are_nothing(
    sk: skift.LocalSkift, eve: skift.LocalSkift, default: Default
) -> None:
    """Principals and tokens are per organization too: the outsider lists none of this one's, and
    naming one (bot, or bot's token id) fails like naming nobody."""
    assert {p.name for p in await eve.list_principals()} == {"eve"}
    await assert_like_nothing(lambda n: eve.create_token(n), "bot", "nobody")
    await assert_like_nothing(
        lambda n: eve.invite_identity(n, "oidc", "https://id.example|7777"), "ada", "nobody"
    )
    await assert_like_nothing(lambda t: eve.revoke_token(t), default.token_id, unknown_ulid())
    bot = next(p for p in await sk.list_principals() if p.name == "bot")
    assert [i.revoked for i in bot.identities] == [False]


async def test_token_of_another_organization_acts_there(
    sk: skift.LocalSkift, eve: skift.LocalSkift, default: Default, store_url: str
) -> None:
    """A token authenticates into its principal's organization: eve's agent, reaching the same
    store with its token, sees only eve's organization."""
    await eve.add_principal("eve-bot", "agent")
    token = await eve.create_token("eve-bot")
    if isinstance(sk, skift.LocalSkift):
        evebot = await sk.authenticate("token", token.token)
        await check_evebot(sk, eve, default, evebot)
        return
    # authenticating is the transport's step: on "remote", in process over the server's database
    async with skift.open(store_url.removeprefix("remote+"), principal=skift.User("ada")) as local:
        await check_evebot(sk, eve, default, await local.authenticate("token", token.token))


async def check_evebot(
    sk: skift.LocalSkift, eve: skift.LocalSkift, default: Default, evebot: skift.LocalSkift
) -> None:
    assert (await evebot.ready()).nodes == ()
    with pytest.raises(skift.NotFound):
        await evebot.get(default.node_id)
    mine = await eve.create_project("Eve's")
    await evebot.patch(mine.slug, [skift.CreateNode(title="Eve bot's work")])
    assert [n.title for n in (await eve.ready()).nodes] == ["Eve bot's work"]
    assert mine.slug not in [p.slug for p in await sk.list_projects()]
    assert "Eve bot's work" not in [n.title for n in (await sk.ready()).nodes]


async def test_same_slug_in_both_organizations(
    sk: skift.LocalSkift, eve: skift.LocalSkift, default: Default
) -> None:
    """Slugs are unique within an organization only: both may have project p, each with its own
    p#1, without collision, and each sees its own."""
    theirs = await eve.create_project("P")
    assert theirs.slug == "p"
    assert theirs.id != default.project_id
    await eve.patch("p", [skift.CreateNode(title="Eve's first")])
    assert (await eve.get("p#1")).title == "Eve's first"
    assert (await sk.get("p#1")).title == "Ready work"
    assert (await eve.get("other-org/p#1")).title == "Eve's first"
    with pytest.raises(skift.NotFound):
        await eve.get(default.node_id)
    assert [n.ref for n in (await eve.ready()).nodes] == ["p#1"]
    assert [p.node_count for p in await eve.list_projects()] == [1]
    assert (await sk.get_project("p")).node_count == 4
    assert [e.op for e in await eve.events()] == ["create_project", "create_node"]
    assert "eve" not in {e.principal for e in await sk.events()}


async def test_request_ids_are_per_organization(
    sk: skift.LocalSkift, eve: skift.LocalSkift, default: Default
) -> None:
    """A request id used in one organization means nothing in another: the same id there applies
    a new patch (no mismatch, and never the first organization's stored response)."""
    await sk.patch("p", [skift.CreateNode(title="Ada's")], request_id="shared-id")
    mine = await eve.create_project("Eve's")
    res = await eve.patch(mine.slug, [skift.CreateNode(title="Eve's")], request_id="shared-id")
    assert [n.title for n in res.nodes] == ["Eve's"]
    assert [n.ref for n in res.nodes] == [f"{mine.slug}#1"]


async def test_focus_stays_in_its_organization(
    sk: skift.LocalSkift, eve: skift.LocalSkift, default: Default
) -> None:
    """Focus in one organization holds and releases only that organization's projects."""
    mine = await eve.create_project("Eve's")
    await eve.patch(mine.slug, [skift.CreateNode(title="Eve's work")])
    other = await eve.create_project("Eve's other")
    res = await eve.focus([mine.slug], reason="only this")
    assert res.held == (other.slug,)
    assert not (await sk.get_project("p")).held
    ada = await sk.focus([], reason="nothing this week")
    assert ada.held == ("p",)
    assert not (await eve.get_project(mine.slug)).held
    cleared = await sk.clear_focus(reason="back")
    assert cleared.released == ("p",)
    assert (await eve.get_project(other.slug)).held
    assert [n.ref for n in (await eve.ready()).nodes] == [f"{mine.slug}#1"]
