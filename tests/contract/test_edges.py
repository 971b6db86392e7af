"""Reading the blocks edges around nodes (``edges``): what the board draws a project's graph
and a node's blockers and inputs from, and ``skift graph`` its edges (ListEdges over gRPC)."""

from __future__ import annotations

import secrets

import pytest

import skift


def _pairs(edges: list[skift.EdgeInfo]) -> list[tuple[str, str]]:
    return [(e.source.ref, e.target.ref) for e in edges]


async def test_edges_into_and_out_of_nodes(sk: skift.LocalSkift) -> None:
    """Every blocks edge touching the nodes asked about, once, both ends named with title and
    status; nodes may be named by reference or by id, and other projects' ends are named too."""
    await sk.create_project("Graph", slug="g")
    await sk.create_project("Other", slug="o")
    await sk.patch(
        "g",
        [
            skift.CreateNode(alias="a", title="Research"),
            skift.CreateNode(alias="b", title="Decide", blocked_by=["a"]),
            skift.CreateNode(alias="c", title="Build", blocked_by=["a", "b"]),
        ],
    )
    await sk.patch("o", [skift.CreateNode(alias="x", title="Elsewhere", blocked_by=["g#3"])])
    got = await sk.edges(["g#1", "g#2"])
    assert _pairs(got) == [("g#1", "g#2"), ("g#1", "g#3"), ("g#2", "g#3")]
    assert got[0].source == skift.EdgeEnd(ref="g#1", title="Research", status=skift.Status.OPEN)
    assert got[0].kind == "blocks"
    c = await sk.get("g#3")
    assert _pairs(await sk.edges([c.id])) == [("g#1", "g#3"), ("g#2", "g#3"), ("g#3", "o#1")]
    await sk.complete("g#1", result="done")
    assert (await sk.edges(["#2"], project="g"))[0].source.status is skift.Status.DONE
    assert await sk.edges([]) == []


async def test_edges_of_unknown_or_foreign_nodes_are_not_found(sk: skift.LocalSkift) -> None:
    """A node of another organization is exactly like no node at all."""
    theirs = sk.acting_as(skift.User("eve"), org=f"other-{secrets.token_hex(4)}")
    await theirs.create_project("Theirs", slug="t")
    await theirs.patch("t", [skift.CreateNode(alias="a", title="Secret")])
    secret = await theirs.get("t#1")
    with pytest.raises(skift.NotFound):
        await sk.edges([secret.id])
    with pytest.raises(skift.NotFound):
        await sk.edges(["t#1"])


async def test_edges_of_a_node_many_wait_on_come_whole(sk: skift.LocalSkift) -> None:
    """More edges than a page holds (50 by default): the remote client reads every page."""
    await sk.create_project("Fan", slug="f")
    await sk.patch(
        "f",
        [
            skift.CreateNode(alias="root", title="Root"),
            *(skift.CreateNode(title=f"Leaf {i}", blocked_by=["root"]) for i in range(120)),
        ],
    )
    got = await sk.edges(["f#1"])
    assert len(got) == 120
    assert {e.source.ref for e in got} == {"f#1"}
    assert len({e.target.ref for e in got}) == 120
