"""References: slug#N, #N, N, org/slug#N and ULIDs; numbers per project; resolution returns the title."""

from __future__ import annotations

import pytest

import skift


@pytest.fixture
async def spike(sk: skift.LocalSkift) -> skift.ProjectInfo:
    p = await sk.create_project("OAuth spike")
    await sk.patch(
        p.slug,
        [
            skift.CreateNode(title="Read the RFC"),
            skift.CreateNode(title="Try PKCE"),
            skift.CreateNode(title="Write it up"),
        ],
    )
    return p


@pytest.mark.own_server  # names the organization "default"
async def test_every_reference_form_resolves_with_its_title(
    sk: skift.LocalSkift, spike: skift.ProjectInfo
) -> None:
    """A node is slug#N, bare #N or N inside a project, org/slug#N fully qualified, or its ULID;
    every resolution returns the node's title so a caller can check itself."""
    node = await sk.get("oauth-spike#2")
    forms = [
        ("oauth-spike#2", None),
        ("#2", "oauth-spike"),
        ("2", "oauth-spike"),
        ("default/oauth-spike#2", None),
        (node.id, None),
        (node.id.lower(), None),
        ("#2", spike.id),
    ]
    for ref, project in forms:
        got = await sk.resolve(ref, project=project)
        assert (got.ref, got.id, got.title) == ("oauth-spike#2", node.id, "Try PKCE"), ref


async def test_get_and_explain_carry_the_title(
    sk: skift.LocalSkift, spike: skift.ProjectInfo
) -> None:
    """Every response that resolves a reference carries the node's title."""
    assert (await sk.get("#3", project=spike.slug)).title == "Write it up"
    ex = await sk.explain("#3", project=spike.slug)
    assert (ex.ref, ex.title) == ("oauth-spike#3", "Write it up")


async def test_numbers_are_sequential_per_project_from_one(sk: skift.LocalSkift) -> None:
    """Node numbers are sequential within a project and start at 1 in every project."""
    a = await sk.create_project("Alpha")
    b = await sk.create_project("Beta")
    r1 = await sk.patch(a.slug, [skift.CreateNode(title="a1"), skift.CreateNode(title="a2")])
    r2 = await sk.patch(b.slug, [skift.CreateNode(title="b1")])
    r3 = await sk.patch(a.slug, [skift.CreateNode(title="a3")])
    assert [n.ref for n in r1.nodes] == ["alpha#1", "alpha#2"]
    assert [n.number for n in r1.nodes] == [1, 2]
    assert [n.ref for n in r2.nodes] == ["beta#1"]
    assert [n.ref for n in r3.nodes] == ["alpha#3"]
    assert (await sk.get_project(a.slug)).node_count == 3


@pytest.mark.own_server  # names the organization "default"
async def test_wrong_org_is_not_found(sk: skift.LocalSkift, spike: skift.ProjectInfo) -> None:
    """The project half of a reference is sparse: a reference into another organization
    resolves to nothing, exactly like a reference to nothing."""
    with pytest.raises(skift.NotFound):
        await sk.resolve("acme/oauth-spike#2")
    with pytest.raises(skift.NotFound):
        await sk.get("acme/oauth-spike#2")
    with pytest.raises(skift.NotFound):
        await sk.get_project("acme/oauth-spike")
    assert (await sk.get_project("default/oauth-spike")).id == spike.id


async def test_unknown_slug_is_not_found(sk: skift.LocalSkift, spike: skift.ProjectInfo) -> None:
    """Cross-project fabrication fails outright: an unknown slug is NotFound, naming what to do."""
    with pytest.raises(skift.NotFound) as ei:
        await sk.resolve("oauth-spik#2")
    assert "oauth-spik" in ei.value.message
    assert ei.value.next
    with pytest.raises(skift.NotFound):
        await sk.get_project("nope")


async def test_unknown_number_or_id_is_not_found(
    sk: skift.LocalSkift, spike: skift.ProjectInfo
) -> None:
    """A number or id that names no node is NotFound."""
    with pytest.raises(skift.NotFound):
        await sk.resolve("oauth-spike#4")
    with pytest.raises(skift.NotFound):
        await sk.resolve(skift.ulid_str(skift.new_id()))


async def test_bare_number_needs_a_project(sk: skift.LocalSkift, spike: skift.ProjectInfo) -> None:
    """Bare #N and N mean something only inside a project; without one the caller is told to qualify."""
    for ref in ("#2", "2"):
        with pytest.raises(skift.Invalid) as ei:
            await sk.resolve(ref)
        assert "slug#N" in ei.value.next


@pytest.mark.parametrize("ref", ["oauth spike#2", "#two", "a/b/c#1", "oauth-spike#", ""])
async def test_malformed_reference_is_invalid(
    sk: skift.LocalSkift, spike: skift.ProjectInfo, ref: str
) -> None:
    """A reference that is none of the accepted forms is invalid input, and says which forms exist."""
    with pytest.raises(skift.Invalid) as ei:
        await sk.resolve(ref, project=spike.slug)
    assert "slug#N" in ei.value.next


@pytest.mark.own_server  # names the organization "default"
async def test_references_inside_patches(sk: skift.LocalSkift, spike: skift.ProjectInfo) -> None:
    """Operations accept every reference form, and node ids, wherever a node is expected."""
    other = await sk.create_project("Other")
    node2 = await sk.get("oauth-spike#2")
    res = await sk.patch(
        other.slug,
        [
            skift.CreateNode(
                alias="x", title="Uses the spike", blocked_by=("oauth-spike#1", node2.id)
            ),
            skift.AddEdge(from_="default/oauth-spike#3", to="x"),
        ],
    )
    assert res.created == {"x": "other#1"}
    ex = await sk.explain("other#1")
    assert sorted(r.detail["ref"] for r in ex.reasons if r.kind == "blocked_by") == [
        "oauth-spike#1",
        "oauth-spike#2",
        "oauth-spike#3",
    ]
