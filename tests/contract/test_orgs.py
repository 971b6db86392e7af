"""Organizations: a server administrator (a person of the first organization) creates them with a
first user and that user's token, lists them, and alone binds unix uids to principals."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

import skift

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

# The server administrator is a person of the store's first organization: on "remote" a server
# of its own, whose organization is the first. A token or uid is authenticated by a transport, in
# process (`local`); over TCP through a real server: tests/server/test_org_token_tcp.py.
pytestmark = pytest.mark.own_server


@pytest.fixture
async def local(sk: skift.LocalSkift, store_url: str) -> AsyncIterator[skift.LocalSkift]:
    """The in-process API over the store under test (on "remote": the server's database)."""
    if isinstance(sk, skift.LocalSkift):
        yield sk
        return
    async with skift.open(store_url.removeprefix("remote+"), principal=skift.User("ada")) as h:
        yield h


async def test_a_server_admin_creates_an_organization(
    sk: skift.LocalSkift, local: skift.LocalSkift
) -> None:
    """create_org makes the tenant, its first user and a token that acts as that user there at
    once; the two organizations see nothing of each other; the event is the server's."""
    await sk.create_project("Ours")
    made = await sk.create_org("acme", admin="wile")
    assert (made.org, made.admin) == ("acme", "wile")
    assert made.token.startswith("skt_")

    wile = await local.authenticate("token", made.token)
    assert wile.org_name == "acme"
    assert [p.name for p in await wile.list_principals()] == ["wile"]
    assert await wile.list_projects() == []
    theirs = await wile.create_project("Ours")  # slugs are per organization
    assert theirs.slug == "ours"
    await wile.patch("ours", [skift.CreateNode(title="Rocket skates")])
    assert [n.title for n in (await sk.ready()).nodes] == []
    assert [e.op for e in await wile.events()][-1] == "create_node"

    (event,) = [e for e in await sk.events() if e.op == "create_org"]
    assert (event.principal, event.after) == ("ada", {"org": "acme", "admin": "wile", "uid": None})
    orgs = await sk.list_orgs()
    assert [(o.name, o.first) for o in orgs][-1] == ("acme", False)
    assert orgs[0].first


async def test_bad_and_duplicate_names(sk: skift.LocalSkift) -> None:
    await sk.create_org("acme", admin="wile")
    with pytest.raises(skift.Conflict, match="'acme' exists"):
        await sk.create_org("acme", admin="road")
    for name, admin in (("", "x"), ("ok", " "), ("x" * 101, "y")):
        with pytest.raises(skift.Invalid):
            await sk.create_org(name, admin=admin)


async def test_only_a_server_admin_creates_or_lists_organizations(
    sk: skift.LocalSkift, local: skift.LocalSkift
) -> None:
    """The new organization's own admin, and an agent of the server's organization, are refused
    with the next move."""
    made = await sk.create_org("acme", admin="wile")
    wile = await local.authenticate("token", made.token)
    bot = sk.acting_as(skift.Agent("bot"))
    for who in (wile, bot):
        with pytest.raises(skift.Refused, match="only an administrator of the server") as ei:
            await who.create_org("evil", admin="x")
        assert "first organization" in ei.value.next
        with pytest.raises(skift.Refused, match="only an administrator of the server"):
            await who.list_orgs()
    assert "evil" not in [o.name for o in await sk.list_orgs()]


async def test_only_a_server_admin_binds_a_uid(
    sk: skift.LocalSkift, local: skift.LocalSkift
) -> None:
    """A tenant's admin may not bind a unix uid (adding a principal with one, or attaching one):
    the uid is the host's. The server admin binds one with the organization's first user, and a
    process of that uid then acts there; a uid already bound is a Conflict."""
    made = await sk.create_org("acme", admin="wile", uid=4242)
    wile_by_uid = await local.authenticate("unix", "4242")
    assert (wile_by_uid.org_name, wile_by_uid.spec.name) == ("acme", "wile")

    wile = await local.authenticate("token", made.token)
    before = await wile.list_principals()
    for attempt in (
        wile.add_principal("coyote", "user", uid=4343),
        wile.attach_identity("wile", "unix", "4343"),
    ):
        with pytest.raises(skift.Refused, match="only an administrator of the server binds") as ei:
            await attempt
        assert ei.value.move == {"do": "bind_uid"}  # the CLI names `--uid`
    assert await wile.list_principals() == before
    with pytest.raises(skift.Unauthenticated):
        await local.authenticate("unix", "4343")
    await wile.add_principal("coyote", "user")  # without a uid: the tenant's own business
    await wile.invite_identity("coyote", "oidc", "https://id.example|coyote")

    with pytest.raises(skift.Conflict, match="uid 4242"):
        await sk.create_org("other", admin="x", uid=4242)
    assert "other" not in [o.name for o in await sk.list_orgs()]
    await sk.add_principal("local-bot", "agent", uid=4444)  # the server admin, at home


async def test_org_pages_hold_still_while_organizations_are_created(
    sk: skift.LocalSkift,
) -> None:
    """ListOrgs pages by (created_at, name): an organization created between pages comes
    after the position; none is sent twice or skipped; the size asked applies."""
    for i in range(5):
        await sk.create_org(f"paged-{i}", admin="boss")
    throughout = [o.name for o in await sk.list_orgs()]
    seen: list[str] = []
    token: str | None = None
    i = 0
    while True:
        page = await sk.list_orgs(limit=1 + i % 2, page=token)
        assert len(page) <= 1 + i % 2
        seen += [o.name for o in page]
        if (token := page.next_page) is None:
            break
        await sk.create_org(f"later-{i}", admin="boss")
        i += 1
    assert len(seen) == len(set(seen))
    assert [n for n in seen if n in throughout] == throughout
    assert [o.first for o in await sk.list_orgs()][:2] == [True, False]
    first = await sk.list_orgs(limit=2)
    second = await sk.list_orgs(limit=3, page=first.next_page)
    assert [o.name for o in [*first, *second]] == [o.name for o in await sk.list_orgs()][:5]
    assert not any(o.first for o in second)
    with pytest.raises(skift.Invalid) as ei:
        await sk.list_orgs(page="garbage")
    assert ei.value.details.get("field") == "page_token"
