"""Organization admins (issue 28, point 1): a principal has a role in its organization, admin or
not (people only). The organization's first person is its admin (``sk``, ada, here); admins grant
and revoke the role (the last admin stays); only an admin mints or revokes another principal's
token, adds principals, sets the stored policy and restricts projects; a person mints their own
tokens; an admin reads a restricted project only by joining its readers.

Before issue 28 every person was in effect the organization's admin: bob, a person who is not,
minted a token for ada and read what she restricted with it."""

from __future__ import annotations

import asyncio
import secrets

import pytest

import skift


async def _people(sk: skift.LocalSkift) -> tuple[skift.LocalSkift, skift.LocalSkift]:
    """bob, a person who is not an admin, and bot, an agent; both exist."""
    bob = sk.acting_as(skift.User("bob"))
    bot = sk.acting_as(skift.Agent("bot"))
    for h in (bob, bot):
        await h.list_projects()
    return bob, bot


async def test_the_first_person_is_the_admin_and_the_list_says_who(sk: skift.LocalSkift) -> None:
    await _people(sk)
    roles = {p.name: (p.kind, p.admin) for p in await sk.list_principals()}
    assert roles["ada"] == ("user", True)
    assert roles["bob"] == ("user", False)
    assert roles["bot"] == ("agent", False)
    added = await sk.add_principal("carol", "user")
    assert not added.admin


async def test_a_person_who_is_not_an_admin_mints_tokens_only_for_themself(
    sk: skift.LocalSkift,
) -> None:
    """Point 1: bob may not mint a token for ada (nor for an agent), revoke hers, add a principal,
    set the policy or restrict a project; he mints and revokes his own tokens."""
    bob, _bot = await _people(sk)
    await sk.create_project("Payroll", slug="payroll")
    await sk.restrict_project("payroll", readers=[], reason="salaries")
    adas = await sk.create_token("ada")
    before = await sk.list_principals()
    for attempt in (
        bob.create_token("ada"),
        bob.create_token("bot"),
        bob.revoke_token(adas.id),
        bob.add_principal("mallory", "user"),
        bob.set_policy({"x.rego": "package skift.authz\n"}, reason="mine"),
        bob.reset_policy(reason="mine"),
        bob.restrict_project("payroll", readers=["bob"], reason="let me in"),
        bob.grant_admin("bob", reason="promote myself"),
    ):
        with pytest.raises((skift.Refused, skift.NotFound)):
            await attempt
    assert await sk.list_principals() == before
    own = await bob.create_token("bob")
    assert own.principal == "bob"
    await bob.revoke_token(own.id)
    with pytest.raises(skift.NotFound):
        await bob.get("payroll#1")


async def test_grant_and_revoke_are_events_and_the_last_admin_stays(sk: skift.LocalSkift) -> None:
    bob, _bot = await _people(sk)
    got = await sk.grant_admin("bob", reason="runs ops")
    assert got.admin
    token = await bob.create_token("bot")  # bob's handle was made before: the role is read now
    await bob.revoke_token(token.id)
    with pytest.raises(skift.Refused, match="an admin already"):
        await sk.grant_admin("bob", reason="again")
    with pytest.raises(skift.Invalid, match="needs a reason"):
        await sk.revoke_admin("bob", reason=" ")
    gone = await bob.revoke_admin("ada", reason="handing over")
    assert not gone.admin
    with pytest.raises(skift.Refused):
        await sk.create_token("bot")  # ada's handle too: the role is read now
    with pytest.raises(skift.Refused, match="last admin") as ei:
        await bob.revoke_admin("bob", reason="leaving")
    assert ei.value.move == {"do": "grant_admin"}
    with pytest.raises(skift.Refused, match="not an admin"):
        await bob.revoke_admin("ada", reason="again")
    with pytest.raises(skift.NotFound):
        await bob.grant_admin("nobody", reason="x")
    events = [(e.op, e.principal, e.reason, e.after) for e in await sk.events()]
    assert ("grant_admin", "ada", "runs ops", {"principal": "bob", "admin": True}) in events
    assert ("revoke_admin", "bob", "handing over", {"principal": "ada", "admin": False}) in events
    roles = {p.name: p.admin for p in await bob.list_principals() if p.name in ("ada", "bob")}
    assert roles == {"ada": False, "bob": True}


async def test_an_agent_is_never_an_admin(sk: skift.LocalSkift) -> None:
    _bob, bot = await _people(sk)
    with pytest.raises(skift.Invalid, match="only a person is an admin"):
        await sk.grant_admin("bot", reason="it runs the builds")
    with pytest.raises(skift.Refused, match="only a person"):
        await bot.grant_admin("bot", reason="mine")
    assert not next(p for p in await sk.list_principals() if p.name == "bot").admin


async def test_an_admin_reads_a_restricted_project_only_by_joining_it(
    sk: skift.LocalSkift,
) -> None:
    """dora, an admin who is not a reader, finds payroll as nothing; restricting it (again) adds
    her to its readers, and the event says an admin joined; so does lifting it."""
    bob, _bot = await _people(sk)
    dora = sk.acting_as(skift.User("dora"))
    await dora.list_projects()
    await sk.grant_admin("dora", reason="second admin")
    await sk.create_project("Payroll", slug="payroll")
    await sk.patch("payroll", [skift.CreateNode(title="Salaries")])
    await sk.restrict_project("payroll", readers=["bob"], reason="salaries")
    with pytest.raises(skift.NotFound):
        await dora.get("payroll#1")
    assert "payroll" not in [p.slug for p in await dora.list_projects()]
    got = await dora.restrict_project("payroll", readers=["ada", "bob"], reason="audit")
    assert got.readers == ("dora", "ada", "bob")
    assert (await dora.get("payroll#1")).title == "Salaries"
    (joined,) = [
        e for e in await dora.events() if e.op == "restrict_project" and e.reason == "audit"
    ]
    assert joined.after == {"readers": ["dora", "ada", "bob"], "admin_joined": "dora"}
    assert joined.before == {"readers": ["ada", "bob"]}
    # ada (an admin and a reader) replaces the readers: dora is out again; dora lifts it
    await sk.restrict_project("payroll", readers=["bob"], reason="audit done")
    with pytest.raises(skift.NotFound):
        await dora.get("payroll#1")
    await dora.unrestrict_project("payroll", reason="published")
    (lifted,) = [e for e in await bob.events() if e.op == "unrestrict_project"]
    assert lifted.after == {"readers": None, "admin_joined": "dora"}
    # a person who is not an admin still finds a project they do not read as nothing
    await sk.restrict_project("payroll", readers=[], reason="again")
    with pytest.raises(skift.NotFound):
        await bob.restrict_project("payroll", readers=["bob"], reason="let me in")
    with pytest.raises(skift.NotFound):
        await bob.restrict_project("nosuch", readers=["bob"], reason="let me in")


async def test_people_arriving_at_once_in_an_empty_organization_make_one_admin(
    sk: skift.LocalSkift,
) -> None:
    """The first person is the admin even when several arrive at the same moment: the decision is
    serialized per organization (PostgreSQL: an advisory lock, then a fresh look), never two
    statements each seeing an organization with nobody in it. Before, on PostgreSQL, people
    created at once in an empty organization could each become its admin."""
    for _round in range(4):
        org = f"race-{secrets.token_hex(4)}"
        people = [sk.acting_as(skift.User(f"p{i}"), org=org) for i in range(8)]
        await asyncio.gather(*(h.list_projects() for h in people))
        roles = {p.name: p.admin for p in await people[0].list_principals()}
        assert len(roles) == 8
        assert sum(roles.values()) == 1, roles
