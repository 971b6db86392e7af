"""Holds: a person parks work; the hold is inherited through containment; it blocks claiming, not writing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

import skift

if TYPE_CHECKING:
    from conftest import Snap


async def ready_refs(sk: skift.LocalSkift, **filters: Any) -> list[str]:
    return sorted(n.ref for n in (await sk.ready(**filters)).nodes)


@pytest.fixture
async def tree(sk: skift.LocalSkift) -> str:
    """h#1 is an epic with children h#2 and h#3; h#4 is blocked by h#3; h#5 stands alone."""
    p = await sk.create_project("H")
    await sk.patch(
        p.slug,
        [
            skift.CreateNode(alias="epic", title="Epic"),
            skift.CreateNode(title="Child one", parent="epic"),
            skift.CreateNode(alias="two", title="Child two", parent="epic"),
            skift.CreateNode(title="Downstream", blocked_by=("two",)),
            skift.CreateNode(title="Alone"),
        ],
    )
    return p.slug


async def test_only_users_may_hold(sk: skift.LocalSkift, snap: Snap, tree: str) -> None:
    """Only user principals may hold or release; an agent is refused, told what to do instead,
    and nothing is written."""
    bot = sk.acting_as(skift.Agent("bot"))
    before = await snap(sk)
    with pytest.raises(skift.Refused) as ei:
        await bot.hold("h#5", reason="I think this should wait")
    assert "person" in ei.value.message
    assert "comment" in ei.value.next
    with pytest.raises(skift.Refused):
        await bot.hold_project(tree, reason="agents may not")
    with pytest.raises(skift.Refused):
        await bot.patch(tree, [skift.HoldNode(node="#5", reason="sneaky")])
    assert await snap(sk) == before
    await sk.hold("h#5", reason="parked")
    with pytest.raises(skift.Refused):
        await bot.unhold("h#5", reason="agents may not release either")
    assert (await sk.get("h#5")).held


async def test_hold_needs_a_reason(sk: skift.LocalSkift, snap: Snap, tree: str) -> None:
    """A reason is required for every hold and release, because a hold nobody can explain is one
    nobody dares release."""
    before = await snap(sk)
    with pytest.raises(skift.Invalid) as ei:
        await sk.hold("h#5", reason="")
    assert "reason" in ei.value.message
    with pytest.raises(skift.Invalid):
        await sk.hold_project(tree, reason=" ")
    assert await snap(sk) == before
    await sk.hold("h#5", reason="later")
    with pytest.raises(skift.Invalid):
        await sk.unhold("h#5", reason="")


async def test_hold_leaves_status_alone_and_returns_on_release(
    sk: skift.LocalSkift, tree: str
) -> None:
    """A held node leaves the ready set and nothing else about it changes; it returns the moment
    the hold is released."""
    await sk.hold("h#5", reason="later")
    node = await sk.get("h#5")
    assert (node.status, node.held, node.ready, node.blocked) == (
        skift.Status.OPEN,
        True,
        False,
        False,
    )
    assert "h#5" not in await ready_refs(sk)
    await sk.unhold("h#5", reason="now")
    assert "h#5" in await ready_refs(sk)


async def test_hold_is_inherited_through_containment(sk: skift.LocalSkift, tree: str) -> None:
    """Containment carries a hold: holding an epic holds its children, including a child filed
    under it later (the inheritance is a walk at read time)."""
    await sk.hold("h#1", reason="rethinking the epic")
    assert await ready_refs(sk) == ["h#5"]
    assert (await sk.get("h#2")).held
    await sk.patch(tree, [skift.CreateNode(title="Filed tomorrow", parent="#1")])
    assert (await sk.get("h#6")).held
    assert await ready_refs(sk) == ["h#5"]
    await sk.unhold("h#1", reason="settled")
    assert await ready_refs(sk) == ["h#2", "h#3", "h#5", "h#6"]


async def test_project_hold(sk: skift.LocalSkift, tree: str) -> None:
    """A project hold parks every node of the project, reports how many it parks, and a node
    created in the held project is held too."""
    other = await sk.create_project("Other")
    await sk.patch(other.slug, [skift.CreateNode(title="Elsewhere")])
    parked = await sk.hold_project(tree, reason="not this week")
    assert parked == 3
    assert (await sk.get_project(tree)).held
    assert (await sk.get_project(tree)).hold_reason == "not this week"
    assert await ready_refs(sk) == ["other#1"]
    await sk.patch(tree, [skift.CreateNode(title="New")])
    assert (await sk.get("h#6")).held
    freed = await sk.unhold_project(tree, reason="this week after all")
    assert freed == 4
    assert await ready_refs(sk) == ["h#2", "h#3", "h#5", "h#6", "other#1"]


async def test_hold_reports_how_many_it_parks(sk: skift.LocalSkift, tree: str) -> None:
    """A hold reports the number of nodes it parks."""
    assert (await sk.hold("h#5", reason="later")).parked == 1


async def test_hold_twice_and_unhold_without_hold(sk: skift.LocalSkift, tree: str) -> None:
    """A node carries one hold at a time; releasing a hold it does not carry is refused and points
    at Explain to find where an inherited hold comes from."""
    await sk.hold("h#1", reason="first")
    with pytest.raises(skift.Refused) as ei:
        await sk.hold("h#1", reason="second")
    assert "first" in ei.value.message
    with pytest.raises(skift.Refused) as ei:
        await sk.unhold("h#2", reason="try the child")
    assert "explain" in ei.value.next.lower()
    await sk.hold_project(tree, reason="p")
    with pytest.raises(skift.Refused):
        await sk.hold_project(tree, reason="again")


async def test_hold_blocks_claiming_naming_the_hold(
    sk: skift.LocalSkift, snap: Snap, tree: str
) -> None:
    """A hold blocks claiming: Claim refuses held work naming the hold and the next move, and
    ClaimNext skips it (reporting how much is held when nothing else is ready)."""
    await sk.hold("h#1", reason="waiting for the design review")
    await sk.hold("h#5", reason="later")
    bot = sk.acting_as(skift.Agent("bot"))
    before = await snap(sk)
    with pytest.raises(skift.Refused) as ei:
        await bot.claim("h#2")
    assert "held on h#1" in ei.value.message
    assert "waiting for the design review" in ei.value.message
    assert "release the hold" in ei.value.next
    with pytest.raises(skift.NothingReady) as ei2:
        await bot.claim_next()
    assert ei2.value.details["held_count"] == 3
    assert await snap(sk) == before


async def test_hold_blocks_claiming_not_writing(sk: skift.LocalSkift, tree: str) -> None:
    """Held work is read, decomposed, re-linked and edited as usual; only claiming refuses."""
    await sk.hold("h#1", reason="parked")
    res = await sk.patch(
        tree,
        [
            skift.UpdateNode(node="#2", title="Child one, clarified"),
            skift.CreateNode(alias="sub", title="Sub-task", parent="#2"),
            skift.AddEdge(from_="#5", to="#3"),
            skift.CompleteNode(node="sub"),
        ],
    )
    assert res.created == {"sub": "h#6"}
    assert (await sk.get("h#2")).title == "Child one, clarified"
    assert (await sk.get("h#2")).held


async def test_held_node_still_blocks_its_dependents(sk: skift.LocalSkift, tree: str) -> None:
    """A held node still blocks its dependents, and the downstream cone is not itself held."""
    await sk.hold("h#3", reason="parked")
    node = await sk.get("h#4")
    assert node.blocked
    assert not node.held
    assert "h#4" not in await ready_refs(sk)
    ex = await sk.explain("h#4")
    assert ex.reasons[0].detail["held"]["on"] == "h#3"


async def test_hold_and_release_are_events(sk: skift.LocalSkift, tree: str) -> None:
    """Every hold and release is an event carrying the principal and the reason."""
    await sk.hold("h#5", reason="vendor outage")
    await sk.unhold("h#5", reason="vendor back")
    events = [(e.op, e.principal, e.reason) for e in await sk.events(ref="h#5")][-2:]
    assert events == [("hold_node", "ada", "vendor outage"), ("unhold_node", "ada", "vendor back")]


async def test_held_project_still_takes_writes(sk: skift.LocalSkift, tree: str) -> None:
    """The whole difference between a hold and archiving: a held project still takes patches."""
    await sk.hold_project(tree, reason="quiet")
    res = await sk.patch(tree, [skift.CreateNode(title="Still writable")])
    assert res.nodes[0].held
