"""Structural limits: configurable ceilings, each refusal naming the limit, nothing written."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

import pytest

import skift

if TYPE_CHECKING:
    from conftest import OpenSkift, Snap

LIMITS = skift.Limits(
    ops_per_patch=3,
    nodes_per_patch=2,
    edges_per_patch=2,
    title_chars=20,
    body_bytes=10,
    result_bytes=10,
    page_size=4,
    labels_per_node=2,
    label_chars=5,
    reason_chars=8,
    default_page_size=2,
    lease_ttl_ceiling=timedelta(minutes=10),
    lease_ttl_floor=timedelta(seconds=30),
)


@pytest.fixture
async def small(open_skift: OpenSkift) -> skift.LocalSkift:
    sk = await open_skift(limits=LIMITS)
    p = await sk.create_project("Lim")
    await sk.patch(p.slug, [skift.CreateNode(title="a"), skift.CreateNode(title="b")])
    return sk


def assert_names_limit(err: skift.LimitExceeded, name: str, bound: int) -> None:
    assert err.details["limit"] == name
    assert err.details["bound"] == bound
    assert str(bound) in err.message
    assert err.next


async def test_operations_per_patch(small: skift.LocalSkift, snap: Snap) -> None:
    """Operations per patch is a ceiling: a patch over it is refused naming the limit; nothing written."""
    before = await snap(small)
    ops = [skift.UpdateNode(node=f"#{i % 2 + 1}", title=f"t{i}") for i in range(4)]
    with pytest.raises(skift.LimitExceeded) as ei:
        await small.patch("lim", ops)
    assert_names_limit(ei.value, "ops_per_patch", 3)
    assert "4" in ei.value.message
    assert await snap(small) == before
    await small.patch("lim", ops[:3])


async def test_nodes_created_per_patch(small: skift.LocalSkift, snap: Snap) -> None:
    """Nodes created per patch is a ceiling of its own."""
    before = await snap(small)
    with pytest.raises(skift.LimitExceeded) as ei:
        await small.patch("lim", [skift.CreateNode(title=f"n{i}") for i in range(3)])
    assert_names_limit(ei.value, "nodes_per_patch", 2)
    assert await snap(small) == before


async def test_edges_created_per_patch(small: skift.LocalSkift, snap: Snap) -> None:
    """Edges created per patch counts add_edge and every blocked_by entry."""
    before = await snap(small)
    with pytest.raises(skift.LimitExceeded) as ei:
        await small.patch(
            "lim",
            [
                skift.CreateNode(title="c", blocked_by=("#1", "#2")),
                skift.AddEdge(from_="#1", to="#2"),
            ],
        )
    assert_names_limit(ei.value, "edges_per_patch", 2)
    assert await snap(small) == before


async def test_title_size(small: skift.LocalSkift, snap: Snap) -> None:
    """Titles are bounded; the refusal names the size and the limit."""
    before = await snap(small)
    with pytest.raises(skift.LimitExceeded) as ei:
        await small.patch("lim", [skift.CreateNode(title="x" * 21)])
    assert_names_limit(ei.value, "title", 20)
    assert await snap(small) == before


async def test_body_size(small: skift.LocalSkift, snap: Snap) -> None:
    """Body size is a ceiling (storage, and the abuse ceiling), on create and on update."""
    before = await snap(small)
    with pytest.raises(skift.LimitExceeded) as ei:
        await small.patch("lim", [skift.CreateNode(title="ok", body="é" * 6)])
    assert_names_limit(ei.value, "body", 10)
    assert "12 bytes" in ei.value.message
    with pytest.raises(skift.LimitExceeded):
        await small.patch("lim", [skift.UpdateNode(node="#1", body="x" * 11)])
    assert await snap(small) == before
    await small.patch("lim", [skift.UpdateNode(node="#1", body="x" * 10)])


async def test_result_size(small: skift.LocalSkift, snap: Snap) -> None:
    """complete_node carries a result under a size cap."""
    before = await snap(small)
    with pytest.raises(skift.LimitExceeded) as ei:
        await small.complete("lim#1", result="x" * 11)
    assert_names_limit(ei.value, "result", 10)
    assert await snap(small) == before
    assert (await small.get("lim#1")).status is skift.Status.OPEN


async def test_page_size(small: skift.LocalSkift) -> None:
    """Page size is bounded; the default page is used when none is asked for."""
    with pytest.raises(skift.LimitExceeded) as ei:
        await small.ready(limit=5)
    assert_names_limit(ei.value, "page_size", 4)
    with pytest.raises(skift.LimitExceeded):
        await small.list_nodes(limit=5)
    with pytest.raises(skift.LimitExceeded):
        await small.list_projects(limit=5)
    await small.patch("lim", [skift.CreateNode(title="c")])
    page = await small.ready()
    assert len(page.nodes) == 2
    assert page.next_page is not None
    assert len((await small.ready(limit=4)).nodes) == 3
    with pytest.raises(skift.Invalid):
        await small.ready(limit=0)


async def test_lease_ttl_ceiling_and_floor(small: skift.LocalSkift) -> None:
    """TTL is requested by the client and bounded by the server: clamped to the ceiling and the floor."""
    long = await small.claim("lim#1", ttl=timedelta(days=30))
    assert long.lease.expires_at - long.lease.created_at == timedelta(minutes=10)
    short = await small.claim("lim#2", ttl=timedelta(seconds=1))
    assert short.lease.expires_at - short.lease.created_at == timedelta(seconds=30)


async def test_labels_per_node_and_label_size(small: skift.LocalSkift, snap: Snap) -> None:
    """Labels are free strings, bounded in number per node and in length."""
    before = await snap(small)
    with pytest.raises(skift.LimitExceeded) as ei:
        await small.patch("lim", [skift.CreateNode(title="c", labels=("a", "b", "c"))])
    assert_names_limit(ei.value, "labels_per_node", 2)
    with pytest.raises(skift.LimitExceeded) as ei:
        await small.patch("lim", [skift.UpdateNode(node="#1", labels=("toolong",))])
    assert_names_limit(ei.value, "label", 5)
    assert await snap(small) == before


async def test_reason_size(small: skift.LocalSkift, snap: Snap) -> None:
    """A reason is bounded like any other text."""
    before = await snap(small)
    with pytest.raises(skift.LimitExceeded) as ei:
        await small.drop("lim#1", reason="far too long a reason")
    assert_names_limit(ei.value, "reason", 8)
    assert await snap(small) == before


async def test_held_count_stops_at_its_bound(open_skift: OpenSkift) -> None:
    """Past Limits.held_count_bound a page says "at least": the bound, not exact."""
    sk = await open_skift(limits=skift.Limits(held_count_bound=2))
    p = await sk.create_project("Parked")
    await sk.patch(p.slug, [skift.CreateNode(title=f"t{i}") for i in range(3)])
    await sk.hold_project(p.slug, reason="not this week")
    page = await sk.ready()
    assert (page.nodes, page.held_count, page.held_count_exact) == ((), 2, False)
    listed = await sk.list_nodes()
    assert (listed.held_count, listed.held_count_exact) == (2, False)
    with pytest.raises(skift.NothingReady) as ei:
        await sk.claim_next()
    assert "2+ held" in ei.value.message
    assert (ei.value.details["held_count"], ei.value.details["held_count_exact"]) == (2, False)
    # at the bound the count is still exact
    await sk.complete(f"{p.slug}#1", result="done anyway")
    page = await sk.ready()
    assert (page.held_count, page.held_count_exact) == (2, True)
