"""Search: every word of a query in a node's title, body, result or comments, within the
caller's organization, archived projects left out unless asked, best first."""

from __future__ import annotations

import secrets

import pytest

import skift


def refs(hits: list[skift.SearchHit]) -> list[str]:
    return [h.node.ref for h in hits]


@pytest.fixture
async def proj(sk: skift.LocalSkift) -> str:
    """s#1 title, s#2 body, s#3 result, s#4 comment: each holds 'keycloak' in one field only."""
    p = await sk.create_project("S")
    await sk.patch(
        p.slug,
        [
            skift.CreateNode(title="Evaluate Keycloak", body="Self-hosted identity."),
            skift.CreateNode(
                title="Pick a provider", body="Auth0 or keycloak, with token-refresh."
            ),
            skift.CreateNode(title="Summarise findings"),
            skift.CreateNode(title="Unrelated chore", body="Rotate the logs."),
        ],
    )
    bot = sk.acting_as(skift.Agent("bot"))
    claim = await bot.claim(f"{p.slug}#3")
    await bot.complete(f"{p.slug}#3", lease=claim.lease.id, result="We chose KEYCLOAK.")
    await sk.add_comment(f"{p.slug}#4", "Does this touch keycloak at all?")
    return p.slug


async def test_each_field_matches(sk: skift.LocalSkift, proj: str) -> None:
    """Title, body, result and comments are searched; words are case-insensitive and split at
    punctuation; matched names the fields and the snippet shows the word."""
    hits = {h.node.ref: h for h in await sk.search("keycloak")}
    assert set(hits) == {"s#1", "s#2", "s#3", "s#4"}
    assert hits["s#1"].matched == ("title",)
    assert hits["s#2"].matched == ("body",)
    assert hits["s#3"].matched == ("result",)
    assert hits["s#4"].matched == ("comment",)
    for ref in ("s#2", "s#3", "s#4"):
        assert "keycloak" in hits[ref].snippet.lower()
    assert refs(await sk.search("REFRESH")) == ["s#2"]
    assert refs(await sk.search("token refresh")) == ["s#2"]
    assert skift.to_json(hits["s#2"])["matched"] == ["body"]


async def test_every_word_must_match(sk: skift.LocalSkift, proj: str) -> None:
    """All words must occur in the node, in any of its fields together; one missing word excludes it."""
    assert refs(await sk.search("evaluate keycloak")) == ["s#1"]
    assert refs(await sk.search("unrelated keycloak")) == ["s#4"]  # title + comment
    assert await sk.search("keycloak okta") == []
    assert await sk.search("keycl") == []  # words, not prefixes


async def test_title_ranks_above_body(sk: skift.LocalSkift, proj: str) -> None:
    """A title hit ranks above a body-only hit, which ranks above result and comment hits."""
    hits = await sk.search("keycloak")
    assert refs(hits) == ["s#1", "s#2", "s#3", "s#4"]
    assert [h.rank for h in hits] == sorted((h.rank for h in hits), reverse=True)
    assert hits[0].rank > hits[1].rank


async def test_archived_left_out_unless_asked(sk: skift.LocalSkift, proj: str) -> None:
    """An archived project's nodes drop out of search unless include_archived."""
    old = await sk.create_project("Old")
    await sk.create(old.slug, "Keycloak notes from last year")
    await sk.archive_project(old.slug, reason="finished")
    assert "old#1" not in refs(await sk.search("keycloak"))
    assert "old#1" in refs(await sk.search("keycloak", include_archived=True))


async def test_projects_filter(sk: skift.LocalSkift, proj: str) -> None:
    """projects narrows the search; an unknown project is NotFound."""
    other = await sk.create_project("Other")
    await sk.create(other.slug, "Keycloak elsewhere")
    assert refs(await sk.search("keycloak", projects=[other.slug])) == ["other#1"]
    both = refs(await sk.search("keycloak", projects=[other.slug, proj]))
    assert set(both) == {"other#1", "s#1", "s#2", "s#3", "s#4"}
    with pytest.raises(skift.NotFound):
        await sk.search("keycloak", projects=["no-such-project"])


async def test_another_organization_never_matches(sk: skift.LocalSkift, proj: str) -> None:
    """Search is scoped to the caller's organization, both ways."""
    eve = sk.acting_as(skift.User("eve"), org=f"other-{secrets.token_hex(4)}")
    theirs = await eve.create_project("Theirs")
    await eve.create(theirs.slug, "Keycloak in another organization")
    assert refs(await eve.search("keycloak")) == ["theirs#1"]
    assert "theirs#1" not in refs(await sk.search("keycloak"))
    assert await eve.search("refresh") == []


async def test_bad_queries(sk: skift.LocalSkift, proj: str) -> None:
    """A query without words is Invalid; limit caps the hits and is bounded by the page size."""
    for q in ("", "   ", "-- !?"):
        with pytest.raises(skift.Invalid):
            await sk.search(q)
    assert len(await sk.search("keycloak", limit=2)) == 2
    with pytest.raises(skift.LimitExceeded):
        await sk.search("keycloak", limit=skift.DEFAULT_LIMITS.page_size + 1)
    with pytest.raises(skift.Invalid):
        await sk.search("keycloak", limit=0)
