"""Acyclicity over the combined wait relation: blocks edges plus parent-waits-on-child."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

import skift

if TYPE_CHECKING:
    from conftest import Snap


@pytest.fixture
async def proj(sk: skift.LocalSkift) -> str:
    p = await sk.create_project("Loops")
    return p.slug


async def test_two_edge_cycle_in_one_patch(sk: skift.LocalSkift, snap: Snap, proj: str) -> None:
    """Cycles are rejected at write time across the whole patch: A blocks B plus B blocks A
    in one patch is a CycleError naming both nodes, and nothing is written."""
    before = await snap(sk)
    with pytest.raises(skift.CycleError) as ei:
        await sk.patch(
            proj,
            [
                skift.CreateNode(alias="a", title="A"),
                skift.CreateNode(alias="b", title="B"),
                skift.AddEdge(from_="a", to="b"),
                skift.AddEdge(from_="b", to="a"),
            ],
        )
    assert "loops#1" in ei.value.message
    assert "loops#2" in ei.value.message
    assert ei.value.next
    assert await snap(sk) == before


async def test_two_edge_cycle_across_two_patches(
    sk: skift.LocalSkift, snap: Snap, proj: str
) -> None:
    """Cycle detection runs over the resulting graph: the edge closing a loop made by an
    earlier patch is refused, naming the nodes."""
    await sk.patch(
        proj,
        [
            skift.CreateNode(alias="a", title="A"),
            skift.CreateNode(alias="b", title="B", blocked_by=("a",)),
        ],
    )
    before = await snap(sk)
    with pytest.raises(skift.CycleError) as ei:
        await sk.patch(proj, [skift.AddEdge(from_="#2", to="#1")])
    assert "loops#1" in ei.value.message
    assert "loops#2" in ei.value.message
    assert await snap(sk) == before


async def test_long_cycle_across_projects(sk: skift.LocalSkift, snap: Snap, proj: str) -> None:
    """The wait relation spans projects: a loop closed through another project's node is refused."""
    other = await sk.create_project("Other")
    await sk.patch(
        proj,
        [skift.CreateNode(alias="a", title="A"), skift.CreateNode(title="B", blocked_by=("a",))],
    )
    await sk.patch(other.slug, [skift.CreateNode(title="C", blocked_by=("loops#2",))])
    before = await snap(sk)
    with pytest.raises(skift.CycleError) as ei:
        await sk.patch(proj, [skift.AddEdge(from_="other#1", to="#1")])
    assert "other#1" in ei.value.message
    assert await snap(sk) == before


async def test_self_edge(sk: skift.LocalSkift, snap: Snap, proj: str) -> None:
    """A node never waits on itself."""
    await sk.patch(proj, [skift.CreateNode(title="A")])
    before = await snap(sk)
    with pytest.raises(skift.CycleError) as ei:
        await sk.patch(proj, [skift.AddEdge(from_="#1", to="#1")])
    assert "loops#1" in ei.value.message
    assert await snap(sk) == before


async def test_parent_blocking_its_child(sk: skift.LocalSkift, snap: Snap, proj: str) -> None:
    """Checking only the edge table is insufficient: a child C under parent P plus an edge from
    P to C can never become ready, so it is refused (in one patch or in two)."""
    before = await snap(sk)
    with pytest.raises(skift.CycleError) as ei:
        await sk.patch(
            proj,
            [
                skift.CreateNode(alias="p", title="P"),
                skift.CreateNode(alias="c", title="C", parent="p"),
                skift.AddEdge(from_="p", to="c"),
            ],
        )
    assert "loops#1" in ei.value.message
    assert "loops#2" in ei.value.message
    assert await snap(sk) == before
    await sk.patch(
        proj, [skift.CreateNode(alias="p", title="P"), skift.CreateNode(title="C", parent="p")]
    )
    mid = await snap(sk)
    with pytest.raises(skift.CycleError):
        await sk.patch(proj, [skift.AddEdge(from_="#1", to="#2")])
    with pytest.raises(skift.CycleError):
        await sk.patch(proj, [skift.CreateNode(title="D", parent="#1", blocked_by=("#1",))])
    assert await snap(sk) == mid


async def test_grandparent_blocking_a_descendant(sk: skift.LocalSkift, proj: str) -> None:
    """The parent relation waits transitively: an edge from an ancestor to a deep descendant loops."""
    await sk.patch(
        proj,
        [
            skift.CreateNode(alias="g", title="G"),
            skift.CreateNode(alias="p", title="P", parent="g"),
            skift.CreateNode(alias="c", title="C", parent="p"),
        ],
    )
    with pytest.raises(skift.CycleError):
        await sk.patch(proj, [skift.AddEdge(from_="#1", to="#3")])


async def test_child_blocking_its_parent_is_fine(sk: skift.LocalSkift, proj: str) -> None:
    """The wait relation only forbids loops: a child that also blocks its parent agrees with containment."""
    await sk.patch(
        proj,
        [
            skift.CreateNode(alias="p", title="P"),
            skift.CreateNode(alias="c", title="C", parent="p"),
            skift.AddEdge(from_="c", to="p"),
        ],
    )
    assert [n.ref for n in (await sk.ready()).nodes] == ["loops#2"]


async def test_containment_loop_via_update_parent(
    sk: skift.LocalSkift, snap: Snap, proj: str
) -> None:
    """Containment must be acyclic: reparenting a node under its own descendant is a CycleError."""
    await sk.patch(
        proj,
        [
            skift.CreateNode(alias="a", title="A"),
            skift.CreateNode(alias="b", title="B", parent="a"),
            skift.CreateNode(alias="c", title="C", parent="b"),
        ],
    )
    before = await snap(sk)
    with pytest.raises(skift.CycleError) as ei:
        await sk.patch(proj, [skift.UpdateNode(node="#1", parent="#3")])
    assert "loops#1" in ei.value.message
    assert "loops#3" in ei.value.message
    with pytest.raises(skift.CycleError):
        await sk.patch(proj, [skift.UpdateNode(node="#1", parent="#1")])
    assert await snap(sk) == before


async def test_reparent_into_a_blocks_loop(sk: skift.LocalSkift, snap: Snap, proj: str) -> None:
    """The combined relation: making P the parent of C when P already blocks C closes a loop."""
    await sk.patch(
        proj,
        [skift.CreateNode(alias="p", title="P"), skift.CreateNode(title="C", blocked_by=("p",))],
    )
    before = await snap(sk)
    with pytest.raises(skift.CycleError):
        await sk.patch(proj, [skift.UpdateNode(node="#2", parent="#1")])
    assert await snap(sk) == before


async def test_a_loop_later_undone_in_the_same_patch_is_fine(
    sk: skift.LocalSkift, proj: str
) -> None:
    """Cycle detection runs over the resulting graph, not per edge: a patch that adds an edge and
    removes the one it would loop with is accepted."""
    await sk.patch(
        proj,
        [skift.CreateNode(alias="a", title="A"), skift.CreateNode(title="B", blocked_by=("a",))],
    )
    await sk.patch(
        proj, [skift.AddEdge(from_="#2", to="#1"), skift.RemoveEdge(from_="#1", to="#2")]
    )
    assert [n.ref for n in (await sk.ready()).nodes] == ["loops#2"]
