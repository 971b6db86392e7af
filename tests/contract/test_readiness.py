"""Readiness, derived: open, no open blocker, no open children, no live lease, not held, not archived;
the Ready order and its filters."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

import skift


async def ready_refs(sk: skift.LocalSkift, **filters: Any) -> list[str]:
    return [n.ref for n in (await sk.ready(**filters)).nodes]


async def test_open_node_with_nothing_in_the_way_is_ready(sk: skift.LocalSkift) -> None:
    """A node is ready when it is open and nothing blocks, contains, leases or holds it."""
    p = await sk.create_project("R")
    res = await sk.patch(p.slug, [skift.CreateNode(title="Free")])
    assert res.nodes[0].ready
    node = await sk.get("r#1")
    assert (node.ready, node.blocked, node.held, node.claimed) == (True, False, False, False)
    assert await ready_refs(sk) == ["r#1"]


async def test_closed_nodes_are_not_ready(sk: skift.LocalSkift) -> None:
    """status = open is the first condition: done and dropped nodes never appear in Ready."""
    p = await sk.create_project("R")
    await sk.patch(
        p.slug,
        [skift.CreateNode(title="a"), skift.CreateNode(title="b"), skift.CreateNode(title="c")],
    )
    await sk.complete("r#1")
    await sk.drop("r#2", reason="not needed")
    assert await ready_refs(sk) == ["r#3"]
    assert not (await sk.get("r#1")).ready
    assert not (await sk.get("r#2")).ready


async def test_open_blocker_blocks_done_blocker_does_not(sk: skift.LocalSkift) -> None:
    """No blocks edge into it whose source is open: every blocker must be done (or dropped)."""
    p = await sk.create_project("R")
    await sk.patch(
        p.slug,
        [
            skift.CreateNode(alias="a", title="a"),
            skift.CreateNode(alias="b", title="b"),
            skift.CreateNode(title="c", blocked_by=("a", "b")),
        ],
    )
    assert sorted(await ready_refs(sk)) == ["r#1", "r#2"]
    await sk.complete("r#1")
    assert await ready_refs(sk) == ["r#2"]
    assert (await sk.get("r#3")).blocked
    await sk.drop("r#2", reason="unnecessary")
    assert await ready_refs(sk) == ["r#3"]


async def test_epic_waits_for_children_then_becomes_ready(sk: skift.LocalSkift) -> None:
    """No open children: a node that groups work is not itself work until all children have closed;
    then it becomes ready and claimable (for synthesis or review)."""
    p = await sk.create_project("R")
    await sk.patch(
        p.slug,
        [
            skift.CreateNode(alias="epic", title="Epic"),
            skift.CreateNode(title="Part one", parent="epic"),
            skift.CreateNode(title="Part two", parent="epic"),
        ],
    )
    assert sorted(await ready_refs(sk)) == ["r#2", "r#3"]
    assert not (await sk.get("r#1")).ready
    await sk.complete("r#2")
    assert await ready_refs(sk) == ["r#3"]
    await sk.drop("r#3", reason="not needed")
    assert await ready_refs(sk) == ["r#1"]
    claim = await sk.claim("r#1")
    assert claim.node.ref == "r#1"


async def test_new_child_makes_the_parent_wait_again(sk: skift.LocalSkift) -> None:
    """The children rule is derived at read time: filing a child under a ready node takes it out of Ready."""
    p = await sk.create_project("R")
    await sk.patch(p.slug, [skift.CreateNode(title="Big task")])
    await sk.patch(p.slug, [skift.CreateNode(title="Sub-task", parent="#1")])
    assert await ready_refs(sk) == ["r#2"]


async def test_live_lease_leaves_ready_and_expiry_returns_it(sk: skift.LocalSkift) -> None:
    """No live lease: a claimed node leaves Ready; an expired lease stops counting at once
    (readiness never waits for a sweeper)."""
    p = await sk.create_project("R")
    await sk.patch(p.slug, [skift.CreateNode(title="Work")])
    await sk.claim("r#1", ttl=timedelta(minutes=1))
    assert await ready_refs(sk) == []
    assert (await sk.get("r#1")).claimed
    sk.store.set_clock_offset(timedelta(minutes=2))
    assert await ready_refs(sk) == ["r#1"]
    assert not (await sk.get("r#1")).claimed


async def test_hold_on_node_ancestor_or_project(sk: skift.LocalSkift) -> None:
    """Not held: a hold on the node, on any ancestor, or on its project takes it out of Ready."""
    p = await sk.create_project("R")
    await sk.patch(
        p.slug,
        [
            skift.CreateNode(alias="epic", title="Epic"),
            skift.CreateNode(alias="mid", title="Mid", parent="epic"),
            skift.CreateNode(title="Leaf", parent="mid"),
            skift.CreateNode(title="Other"),
        ],
    )
    assert sorted(await ready_refs(sk)) == ["r#3", "r#4"]
    await sk.hold("r#4", reason="not now")
    assert await ready_refs(sk) == ["r#3"]
    await sk.hold("r#1", reason="waiting on the design review")
    assert await ready_refs(sk) == []
    assert (await sk.get("r#3")).held
    await sk.unhold("r#1", reason="review done")
    await sk.unhold("r#4", reason="now")
    await sk.hold_project(p.slug, reason="parked this week")
    assert await ready_refs(sk) == []
    assert (await sk.get("r#4")).held
    await sk.unhold_project(p.slug, reason="back on")
    assert sorted(await ready_refs(sk)) == ["r#3", "r#4"]


async def test_archived_project_nodes_are_not_ready(sk: skift.LocalSkift) -> None:
    """Not archived: nodes of an archived project leave Ready."""
    p = await sk.create_project("R")
    await sk.patch(p.slug, [skift.CreateNode(title="Work")])
    await sk.archive_project(p.slug)
    assert await ready_refs(sk) == []
    assert not (await sk.get("r#1")).ready


async def test_ready_orders_by_priority_then_age(sk: skift.LocalSkift) -> None:
    """Ready orders by priority then age within a project."""
    p = await sk.create_project("R")
    await sk.patch(p.slug, [skift.CreateNode(title="old p3", priority=skift.Priority.P3)])
    await sk.patch(p.slug, [skift.CreateNode(title="old p2")])
    await sk.patch(p.slug, [skift.CreateNode(title="new p0", priority=skift.Priority.P0)])
    await sk.patch(p.slug, [skift.CreateNode(title="new p2")])
    assert await ready_refs(sk) == ["r#3", "r#2", "r#4", "r#1"]


async def test_ready_round_robins_across_projects(sk: skift.LocalSkift) -> None:
    """Across projects Ready takes a round-robin turn, one node per project per pass (priority is
    project-scoped, so a p0 in one project does not outrank the other project's turn)."""
    a = await sk.create_project("Alpha")
    b = await sk.create_project("Beta")
    await sk.patch(
        a.slug, [skift.CreateNode(title=f"a{i}", priority=skift.Priority.P0) for i in range(3)]
    )
    await sk.patch(
        b.slug, [skift.CreateNode(title=f"b{i}", priority=skift.Priority.P4) for i in range(2)]
    )
    refs = await ready_refs(sk)
    projects = [r.split("#")[0] for r in refs]
    assert sorted(refs) == ["alpha#1", "alpha#2", "alpha#3", "beta#1", "beta#2"]
    assert projects[:4] in (["alpha", "beta"] * 2, ["beta", "alpha"] * 2)
    assert [r for r in refs if r.startswith("alpha")] == ["alpha#1", "alpha#2", "alpha#3"]


async def test_ready_does_not_advance_the_turn(sk: skift.LocalSkift) -> None:
    """Ready presents the turn order and never advances the rotation cursor: asking twice gives the same page."""
    a = await sk.create_project("Alpha")
    b = await sk.create_project("Beta")
    await sk.patch(a.slug, [skift.CreateNode(title="a")])
    await sk.patch(b.slug, [skift.CreateNode(title="b")])
    assert await ready_refs(sk) == await ready_refs(sk)


async def test_ready_filters(sk: skift.LocalSkift) -> None:
    """One NodeFilter: projects, kinds (any), labels (all), any_labels (any), assignee_kind,
    min_priority and parent."""
    a = await sk.create_project("Alpha")
    b = await sk.create_project("Beta")
    await sk.patch(
        a.slug,
        [
            skift.CreateNode(alias="e", title="Epic", kind="epic"),
            skift.CreateNode(
                title="bug",
                kind="bug",
                labels=("api", "auth"),
                parent="e",
                priority=skift.Priority.P1,
            ),
            skift.CreateNode(
                title="chore", kind="chore", labels=("api",), priority=skift.Priority.P3
            ),
            skift.CreateNode(title="ask", assignee_kind=skift.AssigneeKind.USER, labels=("ui",)),
        ],
    )
    await sk.patch(b.slug, [skift.CreateNode(title="other", labels=("auth",))])

    async def refs(**kw: Any) -> list[str]:
        return sorted(await ready_refs(sk, **kw))

    assert await refs(projects=["beta"]) == ["beta#1"]
    assert await refs(projects=["alpha"]) == ["alpha#2", "alpha#3", "alpha#4"]
    assert await refs(kinds=["bug", "chore"]) == ["alpha#2", "alpha#3"]
    assert await refs(labels=["api", "auth"]) == ["alpha#2"]
    assert await refs(any_labels=["auth", "ui"]) == ["alpha#2", "alpha#4", "beta#1"]
    assert await refs(assignee_kind="user") == ["alpha#4"]
    assert await refs(min_priority="p1") == ["alpha#2"]
    assert await refs(min_priority="p2") == ["alpha#2", "alpha#4", "beta#1"]
    assert await refs(parent="alpha#1") == ["alpha#2"]


async def test_status_and_held_filter_listings_only(sk: skift.LocalSkift) -> None:
    """status and held filter ListNodes only; Ready refuses them with a pointer to the listing."""
    p = await sk.create_project("R")
    await sk.patch(p.slug, [skift.CreateNode(title="a"), skift.CreateNode(title="b")])
    await sk.complete("r#1")
    await sk.hold("r#2", reason="later")
    with pytest.raises(skift.Invalid) as ei:
        await sk.ready(status="open")
    assert "list" in ei.value.next
    with pytest.raises(skift.Invalid):
        await sk.ready(held=True)
    assert [n.ref for n in (await sk.list_nodes(status="done")).nodes] == ["r#1"]
    assert [n.ref for n in (await sk.list_nodes(held=True)).nodes] == ["r#2"]


async def test_empty_ready_page_reports_held_count(sk: skift.LocalSkift) -> None:
    """An empty Ready page reports held_count summed over the requested scope."""
    a = await sk.create_project("Alpha")
    b = await sk.create_project("Beta")
    await sk.patch(a.slug, [skift.CreateNode(title="a1"), skift.CreateNode(title="a2")])
    await sk.patch(b.slug, [skift.CreateNode(title="b1")])
    await sk.hold("alpha#1", reason="later")
    await sk.hold("alpha#2", reason="later")
    await sk.hold_project(b.slug, reason="not this week")
    page = await sk.ready()
    assert page.nodes == ()
    assert page.held_count == 3
    assert (await sk.ready(projects=["alpha"])).held_count == 2


async def test_ready_pages(sk: skift.LocalSkift) -> None:
    """Ready is paged: following next_page yields every ready node once, in turn order."""
    p = await sk.create_project("R")
    await sk.patch(p.slug, [skift.CreateNode(title=f"n{i}") for i in range(7)])
    seen: list[str] = []
    page: str | None = None
    while True:
        got = await sk.ready(limit=3, page=page)
        assert len(got.nodes) <= 3
        seen.extend(n.ref for n in got.nodes)
        page = got.next_page
        if page is None:
            break
    assert seen == [f"r#{i}" for i in range(1, 8)]


async def test_agent_ready_never_shows_a_gate(sk: skift.LocalSkift) -> None:
    """A gate never reaches an agent: an agent's Ready considers only nodes an agent may take,
    while a user's Ready shows both."""
    p = await sk.create_project("R")
    await sk.patch(
        p.slug,
        [
            skift.CreateNode(title="ask a person", assignee_kind=skift.AssigneeKind.USER),
            skift.CreateNode(title="agent work", assignee_kind=skift.AssigneeKind.AGENT),
            skift.CreateNode(title="anyone"),
        ],
    )
    bot = sk.acting_as(skift.Agent("bot"))
    assert sorted(await ready_refs(bot)) == ["r#2", "r#3"]
    assert await ready_refs(bot, assignee_kind="user") == []
    assert sorted(await ready_refs(sk)) == ["r#1", "r#2", "r#3"]
