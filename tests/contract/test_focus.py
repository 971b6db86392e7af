"""Focus: "only these this week" is one call that holds everything outside a keep-set."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

import skift

if TYPE_CHECKING:
    from conftest import OpenSkift, Snap


async def ready_projects(sk: skift.LocalSkift) -> set[str]:
    return {n.project for n in (await sk.ready()).nodes}


async def three_projects(sk: skift.LocalSkift) -> list[str]:
    slugs: list[str] = []
    for title in ("Alpha", "Beta", "Gamma"):
        p = await sk.create_project(title)
        await sk.patch(p.slug, [skift.CreateNode(title=f"{title} work")])
        slugs.append(p.slug)
    return slugs


async def test_org_focus_holds_every_other_project(sk: skift.LocalSkift) -> None:
    """Focus in an organization takes a keep-set of projects and holds every other live project."""
    a, b, c = await three_projects(sk)
    res = await sk.focus([a], reason="only alpha this week")
    assert res.scope == "org"
    assert set(res.held) == {b, c}
    assert res.group is not None
    assert res.parked == 2
    assert await ready_projects(sk) == {a}
    page = await sk.ready(projects=[b, c])
    assert page.nodes == ()
    assert page.held_count == 2
    held = {p.slug: p.held for p in await sk.list_projects()}
    assert held == {a: False, b: True, c: True}
    ops = [(e.op, e.project, e.reason) for e in await sk.events() if e.op == "hold_project"]
    assert sorted(ops) == [
        ("hold_project", b, "only alpha this week"),
        ("hold_project", c, "only alpha this week"),
    ]


async def test_focus_again_replaces_the_previous_sweep(sk: skift.LocalSkift) -> None:
    """Calling Focus again in a scope retires the previous sweep in the same transaction:
    exactly one sweep is ever active per scope."""
    a, b, c = await three_projects(sk)
    await sk.focus([a], reason="alpha")
    res = await sk.focus([b], reason="now beta")
    assert set(res.released) == {b, c}
    assert set(res.held) == {a, c}
    assert await ready_projects(sk) == {b}


async def test_a_hand_hold_survives_a_sweep_and_its_clearing(sk: skift.LocalSkift) -> None:
    """A sweep holds only what is not already held, and ClearFocus releases only its own
    group, so a hold placed by hand survives both."""
    a, b, c = await three_projects(sk)
    await sk.hold_project(c, reason="waiting on legal")
    res = await sk.focus([a], reason="alpha")
    assert res.held == (b,)
    cleared = await sk.clear_focus(reason="week over")
    assert cleared.released == (b,)
    assert await ready_projects(sk) == {a, b}
    gamma = await sk.get_project(c)
    assert gamma.held
    assert gamma.hold_reason == "waiting on legal"


async def test_a_project_created_after_a_sweep_is_live(sk: skift.LocalSkift) -> None:
    """A project created after a sweep is live, not held: it was created because someone cared."""
    a, _, _ = await three_projects(sk)
    await sk.focus([a], reason="alpha")
    d = await sk.create_project("Delta")
    await sk.patch(d.slug, [skift.CreateNode(title="Delta work")])
    assert await ready_projects(sk) == {a, d.slug}


async def test_project_focus_holds_the_rest_of_the_graph(sk: skift.LocalSkift) -> None:
    """In a project scope the keep-set is nodes: everything else open is held, but never an
    ancestor of a kept node (that would park the kept node too) and never its descendants."""
    p = await sk.create_project("Graph")
    res = await sk.patch(
        p.slug,
        [
            skift.CreateNode(alias="epic", title="Epic"),
            skift.CreateNode(alias="keep", title="Kept", parent="epic"),
            skift.CreateNode(alias="sub", title="Under kept", parent="keep"),
            skift.CreateNode(alias="sib", title="Sibling", parent="epic"),
            skift.CreateNode(alias="other", title="Other root"),
            skift.CreateNode(alias="leaf", title="Under other", parent="other"),
        ],
    )
    c = res.created
    out = await sk.focus([c["keep"]], project=p.slug, reason="just the kept part")
    assert out.scope == p.slug
    assert set(out.held) == {c["sib"], c["other"]}
    assert out.parked == 3
    ready = {n.ref for n in (await sk.ready(projects=[p.slug])).nodes}
    assert ready == {c["sub"]}
    assert not (await sk.get(c["epic"])).held
    assert (await sk.get(c["leaf"])).held
    ex = await sk.explain(c["leaf"])
    held = [r for r in ex.reasons if r.kind == "held"]
    assert held
    assert held[0].detail["on"] == c["other"]
    assert held[0].detail["group"] == out.group


async def test_project_focus_composes_with_org_focus(sk: skift.LocalSkift) -> None:
    """The two scopes compose: the org focus says which projects are live, a project focus
    refines one of them, and clearing one leaves the other in force."""
    a, b, _ = await three_projects(sk)
    res = await sk.patch(a, [skift.CreateNode(alias="x", title="Second alpha")])
    await sk.focus([a], reason="alpha only")
    await sk.focus([res.created["x"]], project=a, reason="and only x")
    assert {n.ref for n in (await sk.ready()).nodes} == {res.created["x"]}
    await sk.clear_focus(reason="all of alpha again", project=a)
    assert await ready_projects(sk) == {a}
    await sk.clear_focus(reason="everything again")
    assert b in await ready_projects(sk)


async def test_only_a_person_may_focus(sk: skift.LocalSkift, snap: Snap) -> None:
    """Focus is a hold: parking work is a person's call, so an agent is refused with the next move."""
    a, _, _ = await three_projects(sk)
    before = await snap(sk)
    bot = sk.acting_as(skift.Agent("bot"))
    with pytest.raises(skift.Refused) as info:
        await bot.focus([a], reason="agents may not")
    assert "person" in info.value.message
    assert info.value.next
    with pytest.raises(skift.Refused):
        await bot.clear_focus(reason="nor this")
    assert await snap(sk) == before


async def test_focus_needs_a_reason_and_known_keeps(sk: skift.LocalSkift, snap: Snap) -> None:
    """Every hold and release carries a reason; a keep-set naming nothing writes nothing."""
    a, _, _ = await three_projects(sk)
    before = await snap(sk)
    with pytest.raises(skift.Invalid):
        await sk.focus([a], reason="  ")
    with pytest.raises(skift.NotFound):
        await sk.focus([a, "no-such-project"], reason="typo")
    with pytest.raises(skift.Invalid):
        await sk.clear_focus(reason="")
    assert await snap(sk) == before


async def test_keep_set_size_is_limited(open_skift: OpenSkift) -> None:
    """The keep-set of one focus sweep is bounded, so one call cannot rewrite an organization unboundedly."""
    sk = await open_skift(limits=skift.Limits(keep_set=2))
    a, b, c = await three_projects(sk)
    with pytest.raises(skift.LimitExceeded) as info:
        await sk.focus([a, b, c], reason="too many")
    assert info.value.details["bound"] == 2
