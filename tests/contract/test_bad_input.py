"""Bad input gets a clear answer naming the field, never an internal error, and writes nothing.

Issue 17: a NUL byte in any text, a reference long enough to overflow the
HTTP/2 headers its error rode in, unbounded ``kind`` and ``request_id``, a uid
of 2**40, token counts past int64, a rate of 1e400, ``max_nodes = -1`` and a
100,000-operation patch each got an internal error, a dead connection, a
wrong class or minutes of work before.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pytest

import skift

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from conftest import OpenSkift, Snap

NUL = "a\x00b"


async def _setup(sk: skift.LocalSkift) -> tuple[str, str]:
    p = await sk.create_project("Bad input")
    res = await sk.patch(p.slug, [skift.CreateNode(title="target")])
    return p.slug, res.nodes[0].ref


def _nul_calls(
    slug: str, ref: str
) -> list[tuple[str, Callable[[skift.LocalSkift], Awaitable[Any]]]]:
    """Every text field the issue names, each carrying a NUL byte."""
    return [
        ("ops[0].title", lambda s: s.patch(slug, [skift.CreateNode(title=NUL)])),
        ("ops[0].body", lambda s: s.patch(slug, [skift.CreateNode(title="t", body=NUL)])),
        ("ops[0].labels[0]", lambda s: s.patch(slug, [skift.CreateNode(title="t", labels=(NUL,))])),
        ("ops[0].kind", lambda s: s.patch(slug, [skift.CreateNode(title="t", kind=NUL)])),
        (
            "ops[0].assignee",
            lambda s: s.patch(slug, [skift.CreateNode(title="t", assignee=NUL)]),
        ),
        ("request_id", lambda s: s.patch(slug, [skift.CreateNode(title="t")], request_id=NUL)),
        ("body", lambda s: s.add_comment(ref, NUL)),
        ("title", lambda s: s.create_project(NUL)),
        ("slug", lambda s: s.create_project("t", slug=NUL)),
        ("model", lambda s: s.record_usage(ref, model=NUL, input_tokens=1, estimate=True)),
        ("media_type", lambda s: s.put_blob(b"x", media_type=NUL)),
        ("name", lambda s: s.add_principal(NUL)),
        ("ref", lambda s: s.get(NUL)),
        ("query", lambda s: s.search(NUL)),
        ("result", lambda s: s.complete(ref, result=NUL)),
    ]


async def test_nul_byte_in_any_text_is_invalid_naming_the_field(
    sk: skift.LocalSkift, snap: Snap
) -> None:
    """A NUL byte anywhere is Invalid naming the field (PostgreSQL cannot store it); nothing written."""
    slug, ref = await _setup(sk)
    before = await snap(sk)
    for field, call in _nul_calls(slug, ref):
        with pytest.raises(skift.Invalid) as ei:
            await call(sk)
        assert field in ei.value.message, (field, ei.value.message)
        assert "NUL" in ei.value.message
        assert ei.value.next
    assert await snap(sk) == before


async def test_deep_nesting_is_invalid(sk: skift.LocalSkift, snap: Snap) -> None:
    """200-deep artifact metadata is refused as Invalid, before any work."""
    slug, ref = await _setup(sk)
    deep: Any = "leaf"
    for _ in range(200):
        deep = {"k": deep}
    before = await snap(sk)
    art = {"name": "deep", "parts": [{"type": "text", "text": "x"}], "metadata": deep}
    with pytest.raises(skift.Invalid) as ei:
        await sk.attach_artifact(ref, art)
    assert "levels deep" in ei.value.message
    assert await snap(sk) == before
    del slug


async def test_long_reference_is_shortened_in_the_message(sk: skift.LocalSkift) -> None:
    """A 30,000-character reference is not repeated whole; the connection lives on."""
    slug, ref = await _setup(sk)
    long_ref = "x" * 30_000
    with pytest.raises(skift.SkiftError) as ei:
        await sk.get(long_ref)
    assert isinstance(ei.value, skift.NotFound | skift.Invalid)
    assert len(ei.value.message) < 1100
    assert len(str(ei.value)) < 2200
    assert (await sk.get(ref)).title == "target"  # the same handle still works
    del slug


async def test_kind_and_request_id_have_length_limits(sk: skift.LocalSkift, snap: Snap) -> None:
    """``kind`` over 100 characters and ``request_id`` over 200 are LimitExceeded naming the limit."""
    slug, _ = await _setup(sk)
    before = await snap(sk)
    with pytest.raises(skift.LimitExceeded) as ei:
        await sk.patch(slug, [skift.CreateNode(title="t", kind="k" * 10_000)])
    assert ei.value.details["limit"] == "kind_chars"
    assert ei.value.details["bound"] == 100
    with pytest.raises(skift.LimitExceeded) as ei:
        await sk.patch(slug, [skift.CreateNode(title="t")], request_id="r" * 100_000)
    assert ei.value.details["limit"] == "request_id_chars"
    assert len(ei.value.message) < 200
    assert await snap(sk) == before
    await sk.patch(slug, [skift.CreateNode(title="t", kind="k" * 100)], request_id="r" * 200)


async def test_uid_out_of_range_is_invalid(sk: skift.LocalSkift) -> None:
    """A uid of 2**40 is no uid; 2**32 - 2 is the largest there is."""
    with pytest.raises(skift.Invalid) as ei:
        await sk.add_principal("far", uid=2**40)
    assert "uid" in ei.value.message
    with pytest.raises(skift.Invalid):
        await sk.add_principal("neg", uid=-1)


async def test_token_counts_fit_int64(sk: skift.LocalSkift, snap: Snap) -> None:
    """2**63 input tokens is Invalid (it read back negative); 2**63 - 1 is kept exactly."""
    _, ref = await _setup(sk)
    before = await snap(sk)
    with pytest.raises(skift.Invalid) as ei:
        await sk.record_usage(ref, model="m", input_tokens=2**63, estimate=True)
    assert "input_tokens" in ei.value.message
    assert await snap(sk) == before
    await sk.record_usage(ref, model="m", input_tokens=2**63 - 1, estimate=True)
    report = await sk.usage(ref)
    assert report.estimate.input_tokens == 2**63 - 1


async def test_rates_and_budgets_are_bounded(sk: skift.LocalSkift) -> None:
    """A rate of 1e400 is Invalid, not a cost of 5E+394."""
    slug, ref = await _setup(sk)
    with pytest.raises(skift.Invalid) as ei:
        await sk.set_rate("m", input="1e400", output=1)
    assert "input rate" in ei.value.message
    with pytest.raises(skift.Invalid):
        await sk.update_project(slug, budget=Decimal("1e20"))
    with pytest.raises(skift.Invalid):
        await sk.patch(slug, [skift.UpdateNode(node=ref, budget="1e400")])
    assert await sk.rates() == []


async def test_negative_cascade_bound_is_invalid(sk: skift.LocalSkift, snap: Snap) -> None:
    """``cascade max_nodes = -1`` is malformed input (Invalid), not a rule's refusal."""
    _, ref = await _setup(sk)
    before = await snap(sk)
    with pytest.raises(skift.Invalid) as ei:
        await sk.drop(ref, reason="gone", cascade=-1)
    assert "max_nodes" in ei.value.message
    assert await snap(sk) == before


async def test_huge_patch_is_refused_before_it_is_built(sk: skift.LocalSkift) -> None:
    """A patch of 20,000 operations (limit 5,000) is LimitExceeded naming ops_per_patch."""
    slug, _ = await _setup(sk)
    ops = [{"op": "create_node", "title": f"n{i}"} for i in range(20_000)]
    with pytest.raises(skift.LimitExceeded) as ei:
        await sk.patch(slug, ops)
    assert ei.value.details["limit"] == "ops_per_patch"


async def test_tree_depth_is_limited(open_skift: OpenSkift, snap: Snap) -> None:
    """A parent chain deeper than ``tree_depth`` is LimitExceeded, by creation or by a move.

    Explain and Ready walk the chain; a 3,000-deep one (an agent may build it
    under its own work) took Explain over 30 s.
    """
    sk = await open_skift(limits=skift.Limits(tree_depth=4))
    p = await sk.create_project("Deep")
    ops: list[skift.Op] = [skift.CreateNode(title="l1", alias="l1")]
    ops += [skift.CreateNode(title=f"l{i}", alias=f"l{i}", parent=f"l{i - 1}") for i in (2, 3, 4)]
    chain = (await sk.patch(p.slug, ops)).nodes
    before = await snap(sk)
    with pytest.raises(skift.LimitExceeded) as ei:
        await sk.patch(p.slug, [skift.CreateNode(title="l5", parent=chain[3].ref)])
    assert ei.value.details["limit"] == "tree_depth"
    assert ei.value.details["bound"] == 4
    with pytest.raises(skift.LimitExceeded):  # in one patch too
        await sk.patch(
            p.slug,
            [
                skift.CreateNode(title="a", alias="a", parent=chain[2].ref),
                skift.CreateNode(title="b", parent="a"),
            ],
        )
    # a two-level subtree moved under level 3 would make five levels
    sub = (
        await sk.patch(
            p.slug,
            [skift.CreateNode(title="s1", alias="s1"), skift.CreateNode(title="s2", parent="s1")],
        )
    ).nodes
    before = await snap(sk)
    with pytest.raises(skift.LimitExceeded):
        await sk.patch(p.slug, [skift.UpdateNode(node=sub[0].ref, parent=chain[2].ref)])
    assert await snap(sk) == before
    await sk.patch(p.slug, [skift.UpdateNode(node=sub[0].ref, parent=chain[1].ref)])
    why = await sk.explain(chain[0].ref)
    assert any(r.kind == "open_children" for r in why.reasons)


async def test_sweep_limit_out_of_range_is_invalid(sk: skift.LocalSkift, snap: Snap) -> None:
    """A negative or huge sweep limit is Invalid naming it (the fuzzer found a negative one
    INTERNAL on PostgreSQL: "LIMIT must not be negative")."""
    before = await snap(sk)
    for bad in (-1, 10**12):
        with pytest.raises(skift.Invalid) as ei:
            await sk.sweep_expired(limit=bad)
        assert ei.value.details.get("field") == "limit"
    assert await snap(sk) == before
