"""Projects: created with just a title, slugs, rename, archive, listing, priority, vcs_url."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

import skift

if TYPE_CHECKING:
    from conftest import Snap


async def ready_refs(sk: skift.LocalSkift, **filters: Any) -> list[str]:
    return [n.ref for n in (await sk.ready(**filters)).nodes]


async def test_create_with_only_a_title(sk: skift.LocalSkift) -> None:
    """Creating a project requires no provisioning and no ritual: just a title."""
    p = await sk.create_project("OAuth spike")
    assert p.title == "OAuth spike"
    assert p.slug == "oauth-spike"
    assert p.priority is skift.Priority.P2
    assert p.vcs_url == ""
    assert not p.archived
    assert not p.held
    assert p.node_count == 0
    assert (await sk.get_project("oauth-spike")).id == p.id
    assert (await sk.get_project(p.id)).slug == "oauth-spike"


async def test_create_needs_a_title(sk: skift.LocalSkift, snap: Snap) -> None:
    """A project's one required field is its title; a blank one is invalid."""
    before = await snap(sk)
    with pytest.raises(skift.Invalid) as ei:
        await sk.create_project("   ")
    assert "title" in ei.value.message
    assert await snap(sk) == before


async def test_slug_is_lowercase_and_derived_from_the_title(sk: skift.LocalSkift) -> None:
    """The slug is derived from the title and normalized to lowercase."""
    p = await sk.create_project("Payments: Migrate To Stripe!")
    assert p.slug == "payments-migrate-to-stripe"
    assert p.slug == p.slug.lower()


async def test_slug_is_at_most_100_characters(sk: skift.LocalSkift) -> None:
    """A slug is bounded to 100 characters, even for a long title and after disambiguation."""
    title = "A very long project title " * 10
    first = await sk.create_project(title)
    second = await sk.create_project(title)
    assert len(first.slug) <= 100
    assert len(second.slug) <= 100
    assert first.slug != second.slug
    assert first.slug.startswith("a-very-long-project-title")
    assert (await sk.get_project(second.slug)).id == second.id


async def test_slug_disambiguated_on_collision(sk: skift.LocalSkift) -> None:
    """Slugs are disambiguated on collision: "OAuth spike" twice gives oauth-spike and oauth-spike-2."""
    a = await sk.create_project("OAuth spike")
    b = await sk.create_project("OAuth spike")
    c = await sk.create_project("oauth SPIKE")
    assert [a.slug, b.slug, c.slug] == ["oauth-spike", "oauth-spike-2", "oauth-spike-3"]
    assert len({a.id, b.id, c.id}) == 3


async def test_explicit_slug_that_is_taken_is_a_conflict(sk: skift.LocalSkift, snap: Snap) -> None:
    """A slug names one project; asking for a taken one explicitly is refused, nothing written."""
    await sk.create_project("Billing")
    before = await snap(sk)
    with pytest.raises(skift.Conflict) as ei:
        await sk.create_project("Other", slug="billing")
    assert "billing" in ei.value.message
    assert ei.value.next
    assert await snap(sk) == before


async def test_rename_keeps_the_old_slug_resolving(sk: skift.LocalSkift) -> None:
    """Renaming is allowed; retired slugs keep resolving forever, node refs included."""
    p = await sk.create_project("OAuth spike")
    await sk.patch(p.slug, [skift.CreateNode(title="Try PKCE")])
    renamed = await sk.rename_project("oauth-spike", "Auth flows")
    assert renamed.id == p.id
    assert renamed.slug == "auth-flows"
    assert renamed.title == "Auth flows"
    assert (await sk.get_project("oauth-spike")).id == p.id
    got = await sk.resolve("oauth-spike#1")
    assert got.ref == "auth-flows#1"
    assert got.title == "Try PKCE"
    # a bare number inside the project, named by its retired slug, too
    assert (await sk.resolve("#1", project="oauth-spike")).title == "Try PKCE"


async def test_retired_slug_is_never_reused(sk: skift.LocalSkift) -> None:
    """Retired slugs keep resolving, so a new project cannot take one: it is disambiguated."""
    old = await sk.create_project("OAuth spike")
    await sk.rename_project(old.slug, "Auth flows")
    new = await sk.create_project("OAuth spike")
    assert new.slug == "oauth-spike-2"
    assert (await sk.get_project("oauth-spike")).id == old.id


async def test_rename_with_an_explicit_slug(sk: skift.LocalSkift) -> None:
    """A project's slug is mutable; both the old and the new one resolve."""
    p = await sk.create_project("Billing")
    renamed = await sk.update_project("billing", slug="invoicing")
    assert renamed.slug == "invoicing"
    assert (await sk.get_project("billing")).id == p.id
    assert (await sk.get_project("invoicing")).id == p.id


async def test_priority_is_stored(sk: skift.LocalSkift) -> None:
    """Projects carry a priority of their own: stored, advisory, validated p0..p4."""
    p = await sk.create_project("Urgent", priority="p0")
    assert p.priority is skift.Priority.P0
    updated = await sk.update_project(p.slug, priority=skift.Priority.P3)
    assert updated.priority is skift.Priority.P3
    with pytest.raises(skift.Invalid):
        await sk.create_project("Bad", priority="p9")


async def test_list_in_activity_order(sk: skift.LocalSkift) -> None:
    """Listing defaults to activity order: the project with the most recent change comes first."""
    a = await sk.create_project("Alpha")
    b = await sk.create_project("Beta")
    c = await sk.create_project("Gamma")
    assert [p.slug for p in await sk.list_projects()] == [c.slug, b.slug, a.slug]
    await sk.patch(a.slug, [skift.CreateNode(title="Work in alpha")])
    assert [p.slug for p in await sk.list_projects()] == [a.slug, c.slug, b.slug]


async def test_list_pages(sk: skift.LocalSkift) -> None:
    """list_projects(limit, page) reads the same order a page at a time: every project
    once, none twice (tests/contract/test_keyset_pages.py walks it while it changes)."""
    for n in range(5):
        await sk.create_project(f"Paged {n}")
    whole = [p.slug for p in await sk.list_projects()]
    pages: list[list[str]] = []
    token: str | None = None
    while True:
        got = await sk.list_projects(limit=2, page=token)
        pages.append([p.slug for p in got])
        if (token := got.next_page) is None:
            break
    assert pages == [whole[0:2], whole[2:4], whole[4:5]]


async def test_list_never_sorts_by_priority(sk: skift.LocalSkift) -> None:
    """skift never sorts by a project's priority: a p0 project created earlier lists after a p4 one."""
    urgent = await sk.create_project("Urgent", priority="p0")
    later = await sk.create_project("Someday", priority="p4")
    assert [p.slug for p in await sk.list_projects()] == [later.slug, urgent.slug]


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/acme/api.git",
        "ssh://git@github.com/acme/api.git",
        "file:///srv/git/api.git",
        "",
    ],
)
async def test_vcs_url_absolute_or_empty_is_accepted(sk: skift.LocalSkift, url: str) -> None:
    """vcs_url is an annotation: an absolute URL, or empty; skift never reads it."""
    p = await sk.create_project("Api", vcs_url=url)
    assert p.vcs_url == url
    assert (await sk.get_project(p.slug)).vcs_url == url


@pytest.mark.parametrize(
    "url", ["github.com/acme/api", "not a url", "/srv/git/api.git", "https://"]
)
async def test_vcs_url_not_absolute_is_invalid(sk: skift.LocalSkift, snap: Snap, url: str) -> None:
    """vcs_url validation is exactly "an absolute URL, or empty"; anything else is invalid, nothing written."""
    before = await snap(sk)
    with pytest.raises(skift.Invalid) as ei:
        await sk.create_project("Api", vcs_url=url)
    assert "absolute URL" in ei.value.message
    assert ei.value.next
    assert await snap(sk) == before


async def test_vcs_url_update_validated_and_clearable(sk: skift.LocalSkift) -> None:
    """vcs_url is set at creation or by UpdateProject, validated the same way, and may be cleared."""
    p = await sk.create_project("Api")
    updated = await sk.update_project(p.slug, vcs_url="https://example.com/api.git")
    assert updated.vcs_url == "https://example.com/api.git"
    with pytest.raises(skift.Invalid):
        await sk.update_project(p.slug, vcs_url="example.com/api.git")
    assert (await sk.get_project(p.slug)).vcs_url == "https://example.com/api.git"
    assert (await sk.update_project(p.slug, vcs_url="")).vcs_url == ""


async def test_archived_project_drops_out_of_listing(sk: skift.LocalSkift) -> None:
    """Archived projects drop out of listing by default and appear when archived ones are asked for."""
    live = await sk.create_project("Live")
    gone = await sk.create_project("Gone")
    archived = await sk.archive_project(gone.slug, reason="spike finished")
    assert archived.archived
    assert archived.archived_at is not None
    assert [p.slug for p in await sk.list_projects()] == [live.slug]
    listed = {p.slug: p.archived for p in await sk.list_projects(archived=True)}
    assert listed == {live.slug: False, gone.slug: True}
    # keys stay valid forever
    assert (await sk.get_project(gone.slug)).archived


async def test_archived_project_refuses_patches(sk: skift.LocalSkift, snap: Snap) -> None:
    """An archived project is read-only: no patches; the refusal says so and what to do instead."""
    p = await sk.create_project("Gone")
    await sk.patch(p.slug, [skift.CreateNode(title="Old work")])
    await sk.archive_project(p.slug)
    before = await snap(sk)
    for ops in (
        [skift.CreateNode(title="New work")],
        [skift.UpdateNode(node="#1", title="Renamed")],
        [skift.CompleteNode(node="#1")],
        [skift.DropNode(node="#1", reason="no longer relevant")],
    ):
        with pytest.raises(skift.Refused) as ei:
            await sk.patch(p.slug, ops)
        assert "archived" in ei.value.message
        assert ei.value.next
    with pytest.raises(skift.Refused):
        await sk.update_project(p.slug, title="Renamed")
    assert await snap(sk) == before


async def test_archived_project_refuses_claims(sk: skift.LocalSkift) -> None:
    """An archived project is read-only: no claims, and its nodes leave the ready set."""
    p = await sk.create_project("Gone")
    await sk.patch(p.slug, [skift.CreateNode(title="Old work")])
    assert await ready_refs(sk) == ["gone#1"]
    await sk.archive_project(p.slug)
    assert await ready_refs(sk) == []
    with pytest.raises(skift.Refused) as ei:
        await sk.claim("gone#1")
    assert "archived" in ei.value.message
    with pytest.raises(skift.NothingReady):
        await sk.claim_next()


async def test_archived_project_refuses_new_edges_in_or_out(
    sk: skift.LocalSkift, snap: Snap
) -> None:
    """An archived project takes no new edges into it or out of it, from any project."""
    live = await sk.create_project("Live")
    gone = await sk.create_project("Gone")
    await sk.patch(live.slug, [skift.CreateNode(title="Live work")])
    await sk.patch(gone.slug, [skift.CreateNode(title="Old work")])
    await sk.archive_project(gone.slug)
    before = await snap(sk)
    with pytest.raises(skift.Refused) as ei:
        await sk.patch(live.slug, [skift.AddEdge(from_="gone#1", to="live#1")])
    assert "archived" in ei.value.message
    with pytest.raises(skift.Refused):
        await sk.patch(live.slug, [skift.AddEdge(from_="live#1", to="gone#1")])
    with pytest.raises(skift.Refused):
        await sk.patch(live.slug, [skift.CreateNode(title="New", blocked_by=("gone#1",))])
    assert await snap(sk) == before


async def test_archived_never_completed_node_still_blocks(sk: skift.LocalSkift) -> None:
    """Existing edges keep their meaning: an archived node never completed still blocks a node
    in another project, and Explain shows it (no path to readiness) instead of a silent stall."""
    live = await sk.create_project("Live")
    gone = await sk.create_project("Gone")
    await sk.patch(gone.slug, [skift.CreateNode(title="Never finished")])
    await sk.patch(live.slug, [skift.CreateNode(title="Downstream", blocked_by=("gone#1",))])
    await sk.archive_project(gone.slug)
    assert await ready_refs(sk) == []
    node = await sk.get("live#1")
    assert node.blocked
    assert not node.ready
    ex = await sk.explain("live#1")
    assert not ex.ready
    blocked = [r for r in ex.reasons if r.kind == "blocked_by"]
    assert [r.detail["ref"] for r in blocked] == ["gone#1"]
    no_path = [r for r in ex.reasons if r.kind == "no_path"]
    assert len(no_path) == 1
    assert "archived" in no_path[0].detail["why"]
    own = await sk.explain("gone#1")
    assert "archived" in own.kinds()


async def test_archived_completed_node_keeps_satisfying(sk: skift.LocalSkift) -> None:
    """Existing edges keep their meaning both ways: an archived node that was completed still
    satisfies the edge out of it."""
    live = await sk.create_project("Live")
    gone = await sk.create_project("Gone")
    await sk.patch(gone.slug, [skift.CreateNode(title="Finished")])
    await sk.patch(live.slug, [skift.CreateNode(title="Downstream", blocked_by=("gone#1",))])
    await sk.complete("gone#1")
    await sk.archive_project(gone.slug)
    assert await ready_refs(sk) == ["live#1"]


async def test_archive_twice_is_refused(sk: skift.LocalSkift) -> None:
    """Archiving is a deliberate, terminal act; archiving an archived project is refused."""
    p = await sk.create_project("Gone")
    await sk.archive_project(p.slug)
    with pytest.raises(skift.Refused):
        await sk.archive_project(p.slug)


async def test_rename_into_a_taken_slug_is_disambiguated(sk: skift.LocalSkift) -> None:
    """A slug derived on rename is disambiguated on collision like one derived at creation."""
    a = await sk.create_project("Billing")
    b = await sk.create_project("Invoices")
    renamed = await sk.rename_project(b.slug, "Billing")
    assert renamed.slug == "billing-2"
    assert (await sk.get_project("billing")).id == a.id
    assert (await sk.get_project("invoices")).id == b.id
