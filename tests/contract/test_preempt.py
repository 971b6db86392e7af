"""People's authority over leases: a person preempts a stuck attempt, the live leases are listed,
and ``get`` carries the live lease (a lease's id, the fencing token, only to its holder)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

import skift

if TYPE_CHECKING:
    from conftest import Snap


@pytest.fixture
async def bot(sk: skift.LocalSkift) -> skift.LocalSkift:
    """Project w with two nodes; the agent bot on the same store."""
    await sk.create_project("W")
    await sk.patch("w", [skift.CreateNode(title="First"), skift.CreateNode(title="Second")])
    return sk.acting_as(skift.Agent("bot"))


async def test_a_person_preempts_an_agents_lease(
    sk: skift.LocalSkift, bot: skift.LocalSkift
) -> None:
    """ada takes bot's lease back without its id: the node is ready again, the release reason is
    preempted, the event carries her reason, and every later write under the old lease is
    refused as fenced."""
    claim = await bot.claim("w#1")
    node = await sk.release("w#1", preempt=True, reason="stuck for an hour; taking it over")
    assert (node.ref, node.claimed, node.ready) == ("w#1", False, True)
    assert "w#1" in [n.ref for n in (await sk.ready()).nodes]

    (lease,) = await sk.leases("w#1")
    assert lease.release_reason is skift.ReleaseReason.PREEMPTED
    assert lease.released_at is not None

    (event,) = [e for e in await sk.events() if e.op == "preempt"]
    assert (event.principal, event.node, event.reason) == (
        "ada",
        "w#1",
        "stuck for an hour; taking it over",
    )

    for late in (
        lambda: bot.complete("w#1", lease=claim.lease.id, result="late"),
        lambda: bot.heartbeat("w#1", lease=claim.lease.id),
        lambda: bot.release("w#1", lease=claim.lease.id, reason="crash"),
        lambda: bot.patch(
            "w", [skift.UpdateNode(node="#1", title="late edit")], lease=claim.lease.id
        ),
    ):
        with pytest.raises(skift.FencingError, match="preempted"):
            await late()
    assert (await sk.get("w#1")).title == "First"

    again = await bot.claim("w#1")  # the node is free to claim again, with a fresh lease
    assert again.lease.id != claim.lease.id


async def test_preempting_what_nobody_holds_is_a_conflict(
    sk: skift.LocalSkift, bot: skift.LocalSkift, snap: Snap
) -> None:
    """No live lease: Conflict naming the node and the next move; no reason: Invalid; an unknown
    reference: NotFound. Nothing is written."""
    before = await snap(sk)
    with pytest.raises(skift.Conflict, match="w#2 has no live lease") as ei:
        await sk.release("w#2", preempt=True, reason="stuck")
    assert "claim" in ei.value.next
    await bot.claim("w#1")
    mid = await snap(sk)
    with pytest.raises(skift.Invalid, match="needs a reason"):
        await sk.release("w#1", preempt=True, reason="  ")
    with pytest.raises(skift.NotFound):
        await sk.release("w#99", preempt=True, reason="stuck")
    assert await snap(sk) == mid
    assert before != mid


async def test_an_agent_may_not_preempt(
    sk: skift.LocalSkift, bot: skift.LocalSkift, snap: Snap
) -> None:
    """An agent is refused with the next move, and the holder keeps its lease."""
    claim = await sk.acting_as(skift.Agent("worker")).claim("w#1")
    before = await snap(sk)
    with pytest.raises(skift.Refused, match="only a person takes back a lease on w#1") as ei:
        await bot.release("w#1", preempt=True, reason="it looks stuck")
    assert "file a gate asking a person to preempt it" in ei.value.next
    assert await snap(sk) == before
    assert (await sk.leases("w#1"))[0].id == claim.lease.id


async def test_a_person_may_preempt_their_own_lease_and_an_agent_may_not(
    sk: skift.LocalSkift, bot: skift.LocalSkift
) -> None:
    """The rule is who, not whose: a person preempts even their own lease; an agent is refused
    even on its own (it releases that one with the lease id)."""
    await sk.claim("w#2")
    assert not (await sk.release("w#2", preempt=True, reason="not today")).claimed
    await bot.claim("w#1")
    with pytest.raises(skift.Refused, match="only a person takes back") as ei:
        await bot.release("w#1", preempt=True, reason="changed my mind")
    assert "Release your own lease with its id" in ei.value.next


async def test_release_without_a_lease_names_both_moves(
    sk: skift.LocalSkift, bot: skift.LocalSkift
) -> None:
    await bot.claim("w#1")
    with pytest.raises(skift.Invalid, match="names the lease") as ei:
        await bot.release("w#1")
    assert "preempts it" in ei.value.next
    assert ei.value.move == {"do": "pass_lease"}  # the CLI names --lease and --preempt


async def test_live_leases_show_ids_to_their_holders_only(
    sk: skift.LocalSkift, bot: skift.LocalSkift
) -> None:
    """leases() lists the organization's live leases oldest first with node, title, holder,
    harness and agent; a lease's id only to its holder. ``mine`` and ``projects`` filter."""
    await sk.create_project("Z")
    await sk.patch("z", [skift.CreateNode(title="Elsewhere")])
    first = await bot.claim("w#1", harness="claude-code", agent_ref="https://agents.example/a")
    mine = await sk.claim("z#1")
    done = await bot.claim("w#2")
    await bot.complete("w#2", lease=done.lease.id)

    seen_by_ada = await sk.leases()
    assert [(x.node, x.title, x.holder) for x in seen_by_ada] == [
        ("w#1", "First", "bot"),
        ("z#1", "Elsewhere", "ada"),
    ]
    assert [x.id for x in seen_by_ada] == ["", mine.lease.id]
    assert (seen_by_ada[0].harness, seen_by_ada[0].agent_ref) == (
        "claude-code",
        "https://agents.example/a",
    )
    assert seen_by_ada[0].expires_at == first.lease.expires_at

    seen_by_bot = await bot.leases()
    assert [x.id for x in seen_by_bot] == [first.lease.id, ""]
    assert [x.node for x in await bot.leases(mine=True)] == ["w#1"]
    assert [x.node for x in await sk.leases(projects=["z"])] == ["z#1"]
    with pytest.raises(skift.NotFound):
        await sk.leases(projects=["nope"])


async def test_get_carries_the_live_lease(sk: skift.LocalSkift, bot: skift.LocalSkift) -> None:
    """While a node is claimed ``get`` carries its lease: holder and expiry to everyone, the id
    to the holder only; an unclaimed node carries none."""
    assert (await sk.get("w#1")).lease is None
    claim = await bot.claim("w#1")
    theirs = (await sk.get("w#1")).lease
    assert theirs is not None
    assert (theirs.holder, theirs.expires_at, theirs.id) == ("bot", claim.lease.expires_at, "")
    own = (await bot.get("w#1")).lease
    assert own is not None
    assert own.id == claim.lease.id
    await sk.release("w#1", preempt=True, reason="taking it over")
    assert (await sk.get("w#1")).lease is None
