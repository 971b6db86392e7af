"""Binding external identities (issue 28, point 2): an OIDC identity (``issuer|subject``) is bound
by the server's administrator directly, or by its holder's proof: they sign in with a valid token
for it presenting the code of an invitation an admin of their organization made, naming the
principal. One identity maps to one principal in one organization; another organization's attempt
is refused or comes to nothing, and never says who holds it.

Before issue 28 an organization's admin attached a person of another organization's OIDC identity
to a principal of its own: the real organization then got Conflict, and the person's genuine
token signed them in as the attacker's principal.

The sign-in itself is the transport's step (``authenticate``, after the server verified the
token): here in process over the store under test; through a real ``skift serve
--oidc-issuer`` with keys made in the test in tests/server/test_oidc_binding.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

import skift

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

# Two organizations: the server's (ada is an admin of it, so of the server) and acme, which
# ada creates; on "remote" a server of its own, whose organization is the first.
pytestmark = pytest.mark.own_server

DORA = "https://accounts.example.com|10769150350006150715113082367"


@pytest.fixture
async def local(sk: skift.LocalSkift, store_url: str) -> AsyncIterator[skift.LocalSkift]:
    """The in-process API over the store under test (on "remote": the server's database)."""
    if isinstance(sk, skift.LocalSkift):
        yield sk
        return
    async with skift.open(store_url.removeprefix("remote+"), principal=skift.User("ada")) as h:
        yield h


async def _acme(sk: skift.LocalSkift, local: skift.LocalSkift) -> skift.LocalSkift:
    """acme, a second organization; wile is its admin, its person dora is added."""
    made = await sk.create_org("acme", admin="wile")
    wile = await local.authenticate("token", made.token)
    await wile.add_principal("dora", "user")
    return wile


async def test_an_invited_identity_binds_at_its_holders_sign_in(
    sk: skift.LocalSkift, local: skift.LocalSkift
) -> None:
    wile = await _acme(sk, local)
    with pytest.raises(skift.Unauthenticated, match="not attached") as ei:
        await local.authenticate("oidc", DORA)
    assert "invite" in (ei.value.next or "")
    invite = await wile.invite_identity("dora", "oidc", DORA)
    assert (invite.principal, invite.value, invite.invited_by) == ("dora", DORA, "wile")
    assert invite.code.startswith("skinv_")
    # the code is the proof of which invitation the person means: without it nothing binds
    with pytest.raises(skift.Unauthenticated, match="invited but not yet bound") as ei:
        await local.authenticate("oidc", DORA)
    assert ei.value.move == {"do": "present_invite"}
    assert "acme" not in ei.value.message
    with pytest.raises(skift.Unauthenticated, match="not one for"):
        await local.authenticate("oidc", DORA, invite="skinv_guessed")
    dora = await local.authenticate("oidc", DORA, invite=invite.code)
    assert (dora.org_name, dora.spec.name) == ("acme", "dora")
    again = await local.authenticate("oidc", DORA)  # bound now: the invitation is used up
    assert again.spec.name == "dora"
    assert await wile.invites() == []
    listed = {p.name: p for p in await wile.list_principals()}
    assert [(i.scheme, i.value) for i in listed["dora"].identities] == [("oidc", DORA)]
    (bound,) = [e for e in await wile.events() if e.op == "bind_identity"]
    assert (bound.principal, bound.identity_scheme) == ("dora", "oidc")
    assert bound.after == {
        "principal": "dora",
        "scheme": "oidc",
        "value": DORA,
        "invited_by": "wile",
    }
    (invited,) = [e for e in await wile.events() if e.op == "invite_identity"]
    assert invite.code not in repr(invited)  # the code is shown once, to the admin


async def test_only_the_server_admin_binds_directly(
    sk: skift.LocalSkift, local: skift.LocalSkift
) -> None:
    """A tenant's admin attaches no OIDC identity (it invites); the server's admin does, at home."""
    wile = await _acme(sk, local)
    with pytest.raises(skift.Refused, match="only an administrator of the server binds") as ei:
        await wile.attach_identity("dora", "oidc", DORA)
    assert "invite it" in ei.value.next.lower()
    with pytest.raises(skift.Unauthenticated):
        await local.authenticate("oidc", DORA)
    await sk.acting_as(skift.User("bob")).list_projects()
    got = await sk.attach_identity("bob", "oidc", DORA)
    assert [i.value for i in got.identities] == [DORA]
    assert (await local.authenticate("oidc", DORA)).spec.name == "bob"
    for bad in ("no-bar", "|subject", "https://issuer|"):
        with pytest.raises(skift.Invalid, match=r"issuer\|subject"):
            await wile.invite_identity("dora", "oidc", bad)
    with pytest.raises(skift.Invalid, match="only an OIDC identity"):
        await wile.invite_identity("dora", "unix", "4242")


async def test_another_organization_cannot_take_a_bound_identity_nor_learn_who_holds_it(
    sk: skift.LocalSkift, local: skift.LocalSkift
) -> None:
    """ada's organization binds DORA to bob; acme's invitation of it answers as for a free
    identity (nothing names bob or the organization) and never binds: bob stays bob. Inviting it
    in the organization that holds it names the holder (it is that organization's own)."""
    wile = await _acme(sk, local)
    await sk.acting_as(skift.User("bob")).list_projects()
    await sk.attach_identity("bob", "oidc", DORA)
    held = await wile.invite_identity("dora", "oidc", DORA)
    free = await wile.invite_identity("dora", "oidc", "https://accounts.example.com|free")
    assert (held.principal, held.invited_by, held.scheme) == (
        free.principal,
        free.invited_by,
        "oidc",
    )
    assert "bob" not in repr(held)
    assert (await local.authenticate("oidc", DORA)).org_name != "acme"
    assert (await local.authenticate("oidc", DORA)).spec.name == "bob"
    with pytest.raises(skift.Conflict, match="bob"):
        await sk.invite_identity("ada", "oidc", DORA)


async def test_the_first_invitation_does_not_win_the_presented_code_decides(
    sk: skift.LocalSkift, local: skift.LocalSkift
) -> None:
    """Issue 28: acme invites dora's identity first, though dora means to join ada's
    organization. Before, dora's first sign-in bound her into acme (the only invitation,
    presented or not). Now nothing binds without a code, and the code dora presents (the one
    ada's organization gave her) decides; acme's invitation stays pending, binding nothing."""
    wile = await _acme(sk, local)
    first = await wile.invite_identity("dora", "oidc", DORA)
    await sk.acting_as(skift.User("bob")).list_projects()
    meant = await sk.invite_identity("bob", "oidc", DORA)
    with pytest.raises(skift.Unauthenticated, match="invited but not yet bound") as ei:
        await local.authenticate("oidc", DORA)
    for name in ("acme", "wile", "bob", "dora"):
        assert name not in ei.value.message.replace(DORA, "")
    got = await local.authenticate("oidc", DORA, invite=meant.code)
    home = (await sk.whoami()).org
    assert (got.org_name, got.spec.name) == (home, "bob")
    # bound now: acme's code changes nothing, and acme learns nothing from it
    later = await local.authenticate("oidc", DORA, invite=first.code)
    assert (later.org_name, later.spec.name) == (home, "bob")
    assert [i.value for i in await wile.invites()] == [DORA]
    assert await sk.invites() == []


async def test_an_admin_lists_and_cancels_pending_invitations(
    sk: skift.LocalSkift, local: skift.LocalSkift
) -> None:
    """Pending invitations are listed (never their codes) and cancelled, by id or by identity,
    an admin's call each; a cancelled invitation's code binds nothing; each is an event."""
    wile = await _acme(sk, local)
    await wile.add_principal("erin", "user")
    other = "https://accounts.example.com|erin"
    a = await wile.invite_identity("dora", "oidc", DORA)
    b = await wile.invite_identity("erin", "oidc", other)
    listed = await wile.invites()
    assert [(i.id, i.principal, i.value, i.invited_by, i.code) for i in listed] == [
        (a.id, "dora", DORA, "wile", ""),
        (b.id, "erin", other, "wile", ""),
    ]
    token = await wile.create_token("dora")
    dora = await local.authenticate("token", token.token)
    bot = wile.acting_as(skift.Agent("bot"), org="acme")
    for who in (dora, bot):
        with pytest.raises(skift.Refused):
            await who.invites()
        with pytest.raises(skift.Refused):
            await who.cancel_invite(a.id)
    gone = await wile.cancel_invite(a.id)
    assert (gone.principal, gone.value, gone.code) == ("dora", DORA, "")
    await wile.cancel_invite(other)
    assert await wile.invites() == []
    with pytest.raises(skift.NotFound, match="no pending invitation") as ei:
        await wile.cancel_invite(a.id)
    assert ei.value.move == {"do": "list_invites"}
    with pytest.raises(skift.Unauthenticated, match="not attached"):
        await local.authenticate("oidc", DORA, invite=a.code)
    cancels = [e for e in await wile.events() if e.op == "cancel_invite"]
    assert [(e.principal, e.before) for e in cancels] == [
        ("wile", {"principal": "dora", "scheme": "oidc", "value": DORA}),
        ("wile", {"principal": "erin", "scheme": "oidc", "value": other}),
    ]
    # inviting again replaces the invitation and its code: the old code binds nothing
    old = await wile.invite_identity("dora", "oidc", DORA)
    new = await wile.invite_identity("dora", "oidc", DORA)
    assert old.code != new.code
    with pytest.raises(skift.Unauthenticated, match="not one for"):
        await local.authenticate("oidc", DORA, invite=old.code)
    assert (await local.authenticate("oidc", DORA, invite=new.code)).spec.name == "dora"


async def test_a_person_who_is_not_an_admin_invites_nothing(
    sk: skift.LocalSkift, local: skift.LocalSkift
) -> None:
    wile = await _acme(sk, local)
    token = await wile.create_token("dora")
    dora = await local.authenticate("token", token.token)
    with pytest.raises(skift.Refused, match="only an admin of the organization"):
        await dora.invite_identity("dora", "oidc", DORA)
    with pytest.raises(skift.Refused, match="only an admin of the organization"):
        await dora.invite_identity("wile", "oidc", DORA)
    with pytest.raises(skift.Unauthenticated):
        await local.authenticate("oidc", DORA)
