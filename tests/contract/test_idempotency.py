"""Idempotency: every patch carries a client request id; a repeat returns the original response."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

import skift

if TYPE_CHECKING:
    from conftest import Snap


def summary(res: skift.PatchResult) -> tuple[Any, ...]:
    return (
        res.request_id,
        res.created,
        res.dropped,
        [(n.ref, n.id, n.title, n.status, n.context_id) for n in res.nodes],
    )


@pytest.fixture
async def proj(sk: skift.LocalSkift) -> str:
    return (await sk.create_project("Idem")).slug


async def test_same_id_same_content_returns_the_original(
    sk: skift.LocalSkift, snap: Snap, proj: str
) -> None:
    """The same request id with the same content returns the original response, and the effect
    is applied once: no second node, no doubled events."""
    ops = [
        skift.CreateNode(alias="a", title="Once"),
        skift.CreateNode(title="Twice?", blocked_by=("a",)),
    ]
    first = await sk.patch(proj, ops, request_id="req-1")
    after_first = await snap(sk)
    again = await sk.patch(proj, ops, request_id="req-1")
    assert summary(again) == summary(first)
    assert again.created == {"a": "idem#1"}
    assert await snap(sk) == after_first
    assert len([n for n in (await sk.list_nodes()).nodes]) == 2


async def test_response_carries_the_request_id(sk: skift.LocalSkift, proj: str) -> None:
    """Every patch carries a request id; one is made when the caller gives none, and events record it."""
    given = await sk.patch(proj, [skift.CreateNode(title="a")], request_id="mine-42")
    assert given.request_id == "mine-42"
    made = await sk.patch(proj, [skift.CreateNode(title="b")])
    assert made.request_id
    assert made.request_id != given.request_id
    by_node = {e.node: e.request_id for e in await sk.events() if e.op == "create_node"}
    assert by_node == {"idem#1": "mine-42", "idem#2": made.request_id}


async def test_same_id_different_content_is_a_mismatch(
    sk: skift.LocalSkift, snap: Snap, proj: str
) -> None:
    """The same id with different content is an error rather than a silent replay; nothing written."""
    await sk.patch(proj, [skift.CreateNode(title="Original")], request_id="req-1")
    before = await snap(sk)
    with pytest.raises(skift.IdempotencyMismatch) as ei:
        await sk.patch(proj, [skift.CreateNode(title="Something else")], request_id="req-1")
    assert "req-1" in ei.value.message
    assert "fresh request id" in ei.value.next
    other = await sk.create_project("Other")
    mid = await snap(sk)
    with pytest.raises(skift.IdempotencyMismatch):
        await sk.patch(other.slug, [skift.CreateNode(title="Original")], request_id="req-1")
    assert await snap(sk) == mid
    assert before["nodes"] == mid["nodes"]


async def test_failed_patch_records_nothing(sk: skift.LocalSkift, snap: Snap, proj: str) -> None:
    """A refused patch records nothing, not even its request id, so the id can be reused."""
    before = await snap(sk)
    with pytest.raises(skift.NotFound):
        await sk.patch(
            proj,
            [skift.CreateNode(title="x"), skift.UpdateNode(node="#77", title="y")],
            request_id="r",
        )
    assert await snap(sk) == before
    res = await sk.patch(proj, [skift.CreateNode(title="Different content")], request_id="r")
    assert res.nodes[0].ref == "idem#1"
    assert res.nodes[0].title == "Different content"


async def test_key_order_and_whitespace_do_not_change_the_fingerprint(
    sk: skift.LocalSkift, proj: str
) -> None:
    """The fingerprint ignores key order and document whitespace: the same patch written with keys
    in another order (or as objects instead of dicts) is the same request."""
    doc_a = '[{"op": "create_node", "alias": "a", "title": "T", "labels": ["x"], "priority": "p1"}]'
    doc_b = """[
        {"priority":"p1",
         "labels":["x"],   "title":"T","alias":"a","op":"create_node"}
    ]"""
    first = await sk.patch(proj, json.loads(doc_a), request_id="r")
    second = await sk.patch(proj, json.loads(doc_b), request_id="r")
    third = await sk.patch(
        proj,
        [skift.CreateNode(alias="a", title="T", labels=("x",), priority=skift.Priority.P1)],
        request_id="r",
    )
    assert summary(first) == summary(second) == summary(third)
    assert len((await sk.list_nodes()).nodes) == 1


async def test_retried_complete_is_applied_once(sk: skift.LocalSkift, proj: str) -> None:
    """A retried completion with the same request id returns the original response instead of
    being refused as already done, and writes one completion."""
    await sk.patch(proj, [skift.CreateNode(title="Work")])
    first = await sk.complete("idem#1", result="r", request_id="done-1")
    again = await sk.complete("idem#1", result="r", request_id="done-1")
    assert summary(again) == summary(first)
    assert [e.op for e in await sk.events(ref="idem#1")].count("complete_node") == 1
    with pytest.raises(skift.Refused):
        await sk.complete("idem#1", result="r", request_id="done-2")


async def test_empty_request_id_is_invalid(sk: skift.LocalSkift, proj: str) -> None:
    """A request id is an idempotency key; a blank one is invalid input."""
    with pytest.raises(skift.Invalid):
        await sk.patch(proj, [skift.CreateNode(title="x")], request_id="  ")


async def test_hold_unhold_focus_retried_by_request_id_apply_once(
    sk: skift.LocalSkift, snap: Snap, proj: str
) -> None:
    """hold, unhold, focus, clearing a focus and holding a project carry a request id: a
    retry with the same id after the first landed (its answer lost) returns the first
    answer and writes nothing, instead of "already held" or a second sweep (issue 17)."""
    await sk.patch(proj, [skift.CreateNode(title="a"), skift.CreateNode(title="b")])
    other = (await sk.create_project("Other")).slug

    async def twice(call: Any) -> Any:
        first = await call()
        after = await snap(sk)
        again = await call()
        assert await snap(sk) == after, "the retry wrote something"
        return first, again

    first, again = await twice(lambda: sk.hold("#1", reason="wait", project=proj, request_id="h1"))
    assert summary(again) == summary(first)
    first, again = await twice(
        lambda: sk.unhold("#1", reason="back", project=proj, request_id="u1")
    )
    assert summary(again) == summary(first)
    f1, f2 = await twice(
        lambda: sk.focus(["#2"], reason="this week", project=proj, request_id="f1")
    )
    assert f2 == f1
    assert f1.held == (f"{proj}#1",)
    c1, c2 = await twice(lambda: sk.clear_focus(reason="done", project=proj, request_id="c1"))
    assert c2 == c1
    assert c1.released == (f"{proj}#1",)
    n1, n2 = await twice(lambda: sk.hold_project(other, reason="later", request_id="p1"))
    assert n1 == n2
    n1, n2 = await twice(lambda: sk.unhold_project(other, reason="now", request_id="p2"))
    assert n1 == n2
    with pytest.raises(skift.IdempotencyMismatch):
        await sk.hold("#2", reason="other", project=proj, request_id="h1")
    held_by = {
        e.op: e.request_id for e in await sk.events() if e.op in {"hold_node", "unhold_node"}
    }
    assert held_by["unhold_node"] in {"u1", "c1"}
