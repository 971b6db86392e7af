"""The patch engine: node defaults, aliases, flat operations, atomicity."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import attrs
import pytest

import skift

if TYPE_CHECKING:
    from conftest import Snap


async def ready_refs(sk: skift.LocalSkift, **filters: Any) -> list[str]:
    return [n.ref for n in (await sk.ready(**filters)).nodes]


async def test_node_defaults(sk: skift.LocalSkift) -> None:
    """create_node defaults: kind task, priority p2, status open, no parent, agent-eligible,
    and a context id minted by skift at creation."""
    p = await sk.create_project("Defaults")
    res = await sk.patch(p.slug, [skift.CreateNode(title="Plain")])
    (node,) = res.nodes
    assert node.ref == "defaults#1"
    assert node.kind == "task"
    assert node.priority is skift.Priority.P2
    assert node.status is skift.Status.OPEN
    assert node.parent is None
    assert node.labels == ()
    assert node.assignee_kind is None
    assert node.body == ""
    assert node.ready
    assert uuid.UUID(node.context_id)
    assert node.created_at.utcoffset() == timedelta(0)


async def test_create_node_fields_are_kept(sk: skift.LocalSkift) -> None:
    """create_node takes title, body, kind, priority p0-p4, parent, labels, assignee_kind, assignee;
    skift validates no kind and keeps what it was given."""
    p = await sk.create_project("Fields")
    res = await sk.patch(
        p.slug,
        [
            skift.CreateNode(alias="epic", title="Epic"),
            {
                "op": "create_node",
                "title": "Investigate",
                "body": "# Why\nBecause.",
                "kind": "my-own-kind",
                "priority": "p0",
                "parent": "epic",
                "labels": ["backend", "auth"],
                "assignee_kind": "agent",
                "assignee": "bot",
            },
        ],
    )
    node = await sk.get("fields#2")
    # get attributes the content it returns; a patch result does not (docs/python.md)
    assert (node.body_author, node.body_author_kind) == ("ada", "user")
    unattributed = attrs.evolve(
        node, body_author=None, body_author_kind=None, result_author=None, result_author_kind=None
    )
    assert unattributed == res.nodes[1]
    assert (node.title, node.body, node.kind, node.priority) == (
        "Investigate",
        "# Why\nBecause.",
        "my-own-kind",
        skift.Priority.P0,
    )
    assert node.parent == "fields#1"
    assert node.labels == ("backend", "auth")
    assert node.assignee_kind is skift.AssigneeKind.AGENT
    assert node.assignee == "bot"


async def test_context_id_distinct_per_node_and_stable(sk: skift.LocalSkift) -> None:
    """The context id is minted at creation, one per node, and never changes with edits."""
    p = await sk.create_project("Ctx")
    res = await sk.patch(p.slug, [skift.CreateNode(title="a"), skift.CreateNode(title="b")])
    a, b = res.nodes
    assert a.context_id != b.context_id
    await sk.patch(
        p.slug, [skift.UpdateNode(node="#1", title="a, renamed", priority=skift.Priority.P1)]
    )
    await sk.complete("ctx#1")
    await sk.reopen("ctx#1", reason="review feedback")
    assert (await sk.get("ctx#1")).context_id == a.context_id


async def test_aliases_usable_by_later_ops_and_created_maps_them(sk: skift.LocalSkift) -> None:
    """create_node takes an alias any later operation may use wherever a node reference is expected;
    the response maps every alias to the node's ref."""
    p = await sk.create_project("Hosting")
    res = await sk.patch(
        p.slug,
        [
            skift.CreateNode(alias="epic", title="Move hosting"),
            skift.CreateNode(alias="research", title="Recommend a provider", parent="epic"),
            skift.CreateNode(
                alias="signup",
                title="Sign up with the provider",
                parent="epic",
                assignee_kind=skift.AssigneeKind.USER,
                blocked_by=("research",),
            ),
            skift.CreateNode(alias="migrate", title="Migrate", parent="epic"),
            skift.AddEdge(from_="signup", to="migrate"),
            skift.UpdateNode(node="research", priority=skift.Priority.P1),
        ],
    )
    assert res.created == {
        "epic": "hosting#1",
        "research": "hosting#2",
        "signup": "hosting#3",
        "migrate": "hosting#4",
    }
    assert res.dropped == ()
    assert (await sk.get("hosting#2")).priority is skift.Priority.P1
    assert [
        r.detail["ref"] for r in (await sk.explain("hosting#4")).reasons if r.kind == "blocked_by"
    ] == ["hosting#3"]
    assert await ready_refs(sk) == ["hosting#2"]


async def test_unknown_alias_is_not_found_and_nothing_written(
    sk: skift.LocalSkift, snap: Snap
) -> None:
    """Aliases are only those created earlier in the same patch; anything else is a reference to nothing."""
    p = await sk.create_project("Aliases")
    before = await snap(sk)
    with pytest.raises(skift.SkiftError) as ei:
        await sk.patch(
            p.slug,
            [skift.AddEdge(from_="later", to="first"), skift.CreateNode(alias="later", title="x")],
        )
    assert isinstance(ei.value, skift.Invalid | skift.NotFound)
    assert await snap(sk) == before


async def test_alias_used_twice_is_invalid(sk: skift.LocalSkift, snap: Snap) -> None:
    """Each created node gets its own alias; reusing one in a patch is refused, nothing written."""
    p = await sk.create_project("Aliases")
    before = await snap(sk)
    with pytest.raises(skift.Invalid) as ei:
        await sk.patch(
            p.slug, [skift.CreateNode(alias="a", title="x"), skift.CreateNode(alias="a", title="y")]
        )
    assert "'a'" in ei.value.message
    assert await snap(sk) == before


async def test_update_node_changes_only_what_it_names(sk: skift.LocalSkift) -> None:
    """update_node changes the fields it names and leaves the rest; an empty string clears parent."""
    p = await sk.create_project("Upd")
    await sk.patch(
        p.slug,
        [
            skift.CreateNode(alias="e", title="Epic"),
            skift.CreateNode(title="Child", parent="e", labels=("x",), priority=skift.Priority.P3),
        ],
    )
    await sk.patch(p.slug, [skift.UpdateNode(node="#2", title="Renamed child", labels=("y", "z"))])
    node = await sk.get("upd#2")
    assert (node.title, node.labels, node.priority, node.parent) == (
        "Renamed child",
        ("y", "z"),
        skift.Priority.P3,
        "upd#1",
    )
    assert not (await sk.get("upd#1")).ready
    await sk.patch(p.slug, [{"op": "update_node", "node": "#2", "parent": ""}])
    assert (await sk.get("upd#2")).parent is None
    assert sorted(await ready_refs(sk)) == ["upd#1", "upd#2"]


async def test_parent_is_in_the_same_project(sk: skift.LocalSkift, snap: Snap) -> None:
    """Nodes never move between projects, and a parent is in its child's project; across projects
    the refusal points to a blocks edge instead."""
    a = await sk.create_project("Alpha")
    b = await sk.create_project("Beta")
    await sk.patch(a.slug, [skift.CreateNode(title="Epic in alpha")])
    before = await snap(sk)
    with pytest.raises(skift.Invalid) as ei:
        await sk.patch(b.slug, [skift.CreateNode(title="Child", parent="alpha#1")])
    assert "edge" in ei.value.next
    assert await snap(sk) == before


async def test_remove_edge_unblocks(sk: skift.LocalSkift) -> None:
    """Edges may be removed; removal unblocks the target and is an event."""
    p = await sk.create_project("Edges")
    await sk.patch(
        p.slug,
        [skift.CreateNode(alias="a", title="A"), skift.CreateNode(title="B", blocked_by=("a",))],
    )
    assert await ready_refs(sk) == ["edges#1"]
    res = await sk.patch(p.slug, [skift.RemoveEdge(from_="#1", to="#2")])
    assert [n.ref for n in res.nodes] == ["edges#2"]
    assert sorted(await ready_refs(sk)) == ["edges#1", "edges#2"]
    assert [e.op for e in await sk.events(ref="edges#2")][-1] == "remove_edge"


async def test_remove_missing_edge_is_not_found(sk: skift.LocalSkift, snap: Snap) -> None:
    """Removing an edge that does not exist names the pair and points at Explain."""
    p = await sk.create_project("Edges")
    await sk.patch(p.slug, [skift.CreateNode(title="A"), skift.CreateNode(title="B")])
    before = await snap(sk)
    with pytest.raises(skift.NotFound) as ei:
        await sk.patch(p.slug, [skift.RemoveEdge(from_="#1", to="#2")])
    assert "edges#1" in ei.value.message
    assert "edges#2" in ei.value.message
    assert await snap(sk) == before


async def test_duplicate_edge_is_one_edge(sk: skift.LocalSkift) -> None:
    """An edge is a pair and a kind: adding it twice leaves one edge, so one removal unblocks."""
    p = await sk.create_project("Edges")
    await sk.patch(
        p.slug,
        [skift.CreateNode(alias="a", title="A"), skift.CreateNode(title="B", blocked_by=("a",))],
    )
    await sk.patch(p.slug, [skift.AddEdge(from_="#1", to="#2")])
    await sk.patch(p.slug, [skift.RemoveEdge(from_="#1", to="#2")])
    assert sorted(await ready_refs(sk)) == ["edges#1", "edges#2"]


async def test_patch_is_atomic(sk: skift.LocalSkift, snap: Snap) -> None:
    """Atomic: a patch whose 50th operation is refused leaves no trace of the first 49 —
    nodes, numbers, ready set and events all unchanged."""
    p = await sk.create_project("Atomic")
    await sk.patch(p.slug, [skift.CreateNode(alias="seed", title="Seed")])
    before = await snap(sk)
    ops: list[skift.Op] = [
        skift.CreateNode(alias=f"n{i}", title=f"Node {i}", blocked_by=("#1",)) for i in range(40)
    ]
    ops += [skift.UpdateNode(node="#1", title="Seed, renamed")]
    ops += [skift.AddEdge(from_=f"n{i}", to=f"n{i + 1}") for i in range(8)]
    ops.append(skift.UpdateNode(node="#999", title="No such node"))
    assert len(ops) == 50
    with pytest.raises(skift.NotFound) as ei:
        await sk.patch(p.slug, ops)
    assert ei.value.details.get("index") == 49
    assert await snap(sk) == before
    # the refused patch used no node numbers either
    res = await sk.patch(p.slug, [skift.CreateNode(title="Next")])
    assert res.nodes[0].ref == "atomic#2"


async def test_malformed_operation_names_index_and_field(sk: skift.LocalSkift, snap: Snap) -> None:
    """A malformed patch document is invalid input that points at the operation index and field."""
    p = await sk.create_project("Docs")
    before = await snap(sk)
    with pytest.raises(skift.Invalid) as ei:
        await sk.patch(
            p.slug, [{"op": "create_node", "title": "ok"}, {"op": "create_node", "priority": "p2"}]
        )
    assert "ops[1].title" in ei.value.message
    with pytest.raises(skift.Invalid) as ei:
        await sk.patch(p.slug, [{"op": "create_node", "title": "x", "priority": "p7"}])
    assert "ops[0].priority" in ei.value.message
    with pytest.raises(skift.Invalid) as ei:
        await sk.patch(p.slug, [{"op": "explode_node", "node": "#1"}])
    assert "create_node" in ei.value.next
    with pytest.raises(skift.Invalid):
        await sk.patch(p.slug, [{"op": "create_node", "title": "x", "colour": "red"}])
    with pytest.raises(skift.Invalid):
        await sk.patch(p.slug, [])
    assert await snap(sk) == before


async def test_node_needs_a_title(sk: skift.LocalSkift, snap: Snap) -> None:
    """A node needs a title; a blank one is invalid and nothing is written."""
    p = await sk.create_project("Titles")
    before = await snap(sk)
    with pytest.raises(skift.Invalid) as ei:
        await sk.patch(p.slug, [skift.CreateNode(title="ok"), skift.CreateNode(title="  ")])
    assert ei.value.next
    assert await snap(sk) == before


async def test_patch_to_unknown_project_is_not_found(sk: skift.LocalSkift) -> None:
    """The project is hoisted to the patch; naming one that does not exist is NotFound."""
    with pytest.raises(skift.NotFound):
        await sk.patch("no-such-project", [skift.CreateNode(title="x")])


async def test_cross_project_edge(sk: skift.LocalSkift) -> None:
    """Cross-project references are qualified; a blocks edge across projects works like any other."""
    a = await sk.create_project("Alpha")
    b = await sk.create_project("Beta")
    await sk.patch(a.slug, [skift.CreateNode(title="Upstream")])
    await sk.patch(b.slug, [skift.CreateNode(title="Downstream", blocked_by=("alpha#1",))])
    assert await ready_refs(sk) == ["alpha#1"]
    await sk.complete("alpha#1", result="done")
    assert await ready_refs(sk) == ["beta#1"]
