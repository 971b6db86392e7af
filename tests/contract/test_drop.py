"""Drop (with and without cascade), reopen, complete, and the gate exception."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

import skift

if TYPE_CHECKING:
    from conftest import Snap


async def ready_refs(sk: skift.LocalSkift, **filters: Any) -> list[str]:
    return sorted(n.ref for n in (await sk.ready(**filters)).nodes)


@pytest.fixture
async def chain(sk: skift.LocalSkift) -> str:
    """d#1 blocks d#2 blocks d#3; d#4 is a child of d#2; d#5 stands alone."""
    p = await sk.create_project("D")
    await sk.patch(
        p.slug,
        [
            skift.CreateNode(alias="a", title="A"),
            skift.CreateNode(alias="b", title="B", blocked_by=("a",)),
            skift.CreateNode(alias="c", title="C", blocked_by=("b",)),
            skift.CreateNode(alias="kid", title="B's child", parent="b"),
            skift.CreateNode(title="Alone"),
        ],
    )
    return p.slug


async def test_drop_without_cascade_satisfies_edges(sk: skift.LocalSkift, chain: str) -> None:
    """Without cascade, a drop asserts downstream does not need it: the node satisfies edges out
    of it and downstream becomes ready if nothing else blocks it."""
    assert await ready_refs(sk) == ["d#1", "d#4", "d#5"]
    res = await sk.drop("d#1", reason="not viable")
    assert res.dropped == ("d#1",)
    node = await sk.get("d#1")
    assert node.status is skift.Status.DROPPED
    assert not node.ready
    await sk.complete("d#4")
    assert await ready_refs(sk) == ["d#2", "d#5"]


async def test_drop_needs_a_reason(sk: skift.LocalSkift, snap: Snap, chain: str) -> None:
    """Drop carries a reason; a drop without one is invalid, and nothing is written."""
    before = await snap(sk)
    with pytest.raises(skift.Invalid) as ei:
        await sk.patch(chain, [skift.DropNode(node="#1", reason=" ")])
    assert "reason" in ei.value.message
    assert await snap(sk) == before


async def test_drop_with_cascade_takes_the_downstream_subtree(
    sk: skift.LocalSkift, chain: str
) -> None:
    """With cascade, the drop asserts the functionality is gone: the subtree of nodes it blocks
    (and their children) is dropped in the same patch, and the response lists every ref."""
    res = await sk.drop("d#1", reason="superseded", cascade=10)
    assert sorted(res.dropped) == ["d#1", "d#2", "d#3", "d#4"]
    for ref in ("d#1", "d#2", "d#3", "d#4"):
        assert (await sk.get(ref)).status is skift.Status.DROPPED
    assert await ready_refs(sk) == ["d#5"]
    cascaded = [e for e in await sk.events() if e.op == "drop_node"]
    assert len(cascaded) == 4
    assert {e.reason for e in cascaded} == {"superseded"}


async def test_cascade_over_the_bound_is_refused(
    sk: skift.LocalSkift, snap: Snap, chain: str
) -> None:
    """A cascade states its blast radius: when the subtree is larger than max_nodes the patch is
    refused, naming the count and the bound, and nothing is written."""
    before = await snap(sk)
    with pytest.raises(skift.Refused) as ei:
        await sk.patch(
            chain, [skift.DropNode(node="#1", reason="gone", cascade=skift.Cascade(max_nodes=3))]
        )
    assert "4" in ei.value.message
    assert "3" in ei.value.message
    assert ei.value.details["count"] == 4
    assert ei.value.details["bound"] == 3
    assert "max_nodes" in ei.value.next
    assert await snap(sk) == before


async def test_cascade_exactly_at_the_bound_runs(sk: skift.LocalSkift, chain: str) -> None:
    """The count includes the node named; a bound equal to the count is enough."""
    res = await sk.drop("d#2", reason="gone", cascade=3)
    assert sorted(res.dropped) == ["d#2", "d#3", "d#4"]


async def test_cascade_count_excludes_already_dropped(sk: skift.LocalSkift, chain: str) -> None:
    """The count is of what the drop would take: nodes already dropped are excluded (and not
    listed again)."""
    await sk.drop("d#3", reason="not needed")
    await sk.drop("d#4", reason="not needed")
    res = await sk.drop("d#1", reason="gone", cascade=2)
    assert sorted(res.dropped) == ["d#1", "d#2"]


async def test_every_patch_response_lists_every_drop(sk: skift.LocalSkift, chain: str) -> None:
    """Every patch response carries the refs of every node it dropped, cascade or not, alongside
    anything else the patch did."""
    res = await sk.patch(
        chain,
        [
            skift.CreateNode(alias="tmp", title="Temporary"),
            skift.DropNode(node="tmp", reason="changed my mind"),
            skift.DropNode(node="#5", reason="no longer relevant"),
            skift.DropNode(node="#2", reason="gone", cascade=skift.Cascade(max_nodes=3)),
        ],
    )
    assert res.created == {"tmp": "d#6"}
    assert sorted(res.dropped) == ["d#2", "d#3", "d#4", "d#5", "d#6"]
    assert (await sk.complete("d#1")).dropped == ()


async def test_dropping_a_dropped_node_is_refused(sk: skift.LocalSkift, chain: str) -> None:
    """A node is dropped once; dropping it again is refused and says there is nothing to do."""
    await sk.drop("d#5", reason="gone")
    with pytest.raises(skift.Refused):
        await sk.drop("d#5", reason="gone again")


async def test_reopen_dropped_restores_the_edges(sk: skift.LocalSkift, chain: str) -> None:
    """A drop is reversible: reopen takes a dropped node back to open, and edges survive a drop."""
    await sk.drop("d#1", reason="not needed")
    await sk.complete("d#4")
    assert "d#2" in await ready_refs(sk)
    res = await sk.reopen("d#1", reason="needed after all")
    assert res.nodes[0].status is skift.Status.OPEN
    assert "d#2" not in await ready_refs(sk)
    assert "d#1" in await ready_refs(sk)


async def test_reopen_undoes_a_cascade_from_its_list(sk: skift.LocalSkift, chain: str) -> None:
    """The dropped list is what a reopen works from: reopening every ref restores the graph."""
    res = await sk.drop("d#1", reason="gone", cascade=10)
    await sk.patch(chain, [skift.ReopenNode(node=ref, reason="undo") for ref in res.dropped])
    assert await ready_refs(sk) == ["d#1", "d#4", "d#5"]


async def test_reopen_done_is_not_retroactive(sk: skift.LocalSkift, chain: str) -> None:
    """Reopen moves done back to open and is not retroactive: it does not un-complete descendants
    that already consumed the earlier result, while open dependents wait again."""
    await sk.complete("d#1", result="v1")
    await sk.complete("d#4")
    await sk.complete("d#2", result="built on v1")
    assert await ready_refs(sk) == ["d#3", "d#5"]
    await sk.reopen("d#1", reason="review feedback")
    assert (await sk.get("d#1")).status is skift.Status.OPEN
    assert (await sk.get("d#2")).status is skift.Status.DONE
    assert await ready_refs(sk) == ["d#1", "d#3", "d#5"]


async def test_reopen_needs_a_closed_node_and_a_reason(
    sk: skift.LocalSkift, snap: Snap, chain: str
) -> None:
    """Reopen is a transition with a reason, from done or dropped; an open node has nothing to reopen."""
    before = await snap(sk)
    with pytest.raises(skift.Refused):
        await sk.reopen("d#1", reason="why not")
    await sk.complete("d#5")
    mid = await snap(sk)
    with pytest.raises(skift.Invalid):
        await sk.reopen("d#5", reason="")
    assert await snap(sk) == mid
    assert before != mid


async def test_complete_carries_the_result(sk: skift.LocalSkift, chain: str) -> None:
    """complete_node carries a markdown result; completing a closed node is refused."""
    res = await sk.complete("d#5", result="## Findings\nIt works.")
    assert res.nodes[0].status is skift.Status.DONE
    assert (await sk.get("d#5")).result == "## Findings\nIt works."
    with pytest.raises(skift.Refused) as ei:
        await sk.complete("d#5")
    assert "reopen" in ei.value.next.lower()


async def test_children_go_under_open_work(sk: skift.LocalSkift, chain: str) -> None:
    """A closed node takes no new children (it would wait again with nobody reopening it)."""
    await sk.complete("d#5")
    with pytest.raises(skift.Refused) as ei:
        await sk.patch(chain, [skift.CreateNode(title="Late child", parent="#5")])
    assert "Reopen" in ei.value.next


# ---------------------------------------------------------------- gates


@pytest.fixture
async def gated(sk: skift.LocalSkift) -> str:
    """g#1 (a gate: assignee_kind user) blocks g#2."""
    p = await sk.create_project("G")
    await sk.patch(
        p.slug,
        [
            skift.CreateNode(
                alias="gate", title="Mint a token", assignee_kind=skift.AssigneeKind.USER
            ),
            skift.CreateNode(title="Use the token", blocked_by=("gate",)),
        ],
    )
    return p.slug


async def test_dropped_gate_never_satisfies(sk: skift.LocalSkift, gated: str) -> None:
    """A gate is satisfied only by completion: dropping it never satisfies the edge out of it,
    and Explain says there is no path to readiness."""
    await sk.drop("g#1", reason="not needed")
    assert await ready_refs(sk) == []
    assert (await sk.get("g#2")).blocked
    ex = await sk.explain("g#2")
    assert not ex.ready
    assert [r.detail["ref"] for r in ex.reasons if r.kind == "blocked_by"] == ["g#1"]
    (no_path,) = [r for r in ex.reasons if r.kind == "no_path"]
    assert "g#1" in no_path.detail["why"]
    assert "gate" in no_path.detail["why"]


async def test_dropped_gate_cascade_is_not_a_way_around(sk: skift.LocalSkift, gated: str) -> None:
    """Only completion satisfies a gate; a cascade drop takes the downstream with it instead."""
    res = await sk.drop("g#1", reason="gone", cascade=2)
    assert sorted(res.dropped) == ["g#1", "g#2"]


async def test_completed_gate_satisfies(sk: skift.LocalSkift, gated: str) -> None:
    """Completing a gate satisfies the edge out of it, like any node."""
    assert await ready_refs(sk) == ["g#1"]
    await sk.complete("g#1", result="Token placed in the vault")
    assert await ready_refs(sk) == ["g#2"]


async def test_reopened_dropped_gate_can_still_be_completed(
    sk: skift.LocalSkift, gated: str
) -> None:
    """A dropped gate is reversible like any drop; completing it after reopening satisfies its edge."""
    await sk.drop("g#1", reason="oops")
    await sk.reopen("g#1", reason="still needed")
    await sk.complete("g#1")
    assert await ready_refs(sk) == ["g#2"]


async def test_unsetting_assignee_kind_of_a_dropped_gate_turns_it_into_a_drop(
    sk: skift.LocalSkift, gated: str
) -> None:
    """The gate rule is assignee_kind user: a node that is no longer user-assigned is an ordinary
    node, and its drop satisfies like any other (policy, not the core, guards who may do this)."""
    await sk.drop("g#1", reason="no longer relevant")
    await sk.patch(gated, [skift.UpdateNode(node="#1", assignee_kind="")])
    assert await ready_refs(sk) == ["g#2"]


async def test_cascade_crosses_projects(sk: skift.LocalSkift) -> None:
    """The cascade follows blocks edges wherever they lead, and the response names every node it
    took in every project."""
    a = await sk.create_project("Alpha")
    b = await sk.create_project("Beta")
    await sk.patch(a.slug, [skift.CreateNode(title="API")])
    await sk.patch(b.slug, [skift.CreateNode(title="Client", blocked_by=("alpha#1",))])
    res = await sk.drop("alpha#1", reason="API cancelled", cascade=2)
    assert sorted(res.dropped) == ["alpha#1", "beta#1"]
    assert (await sk.get("beta#1")).status is skift.Status.DROPPED
