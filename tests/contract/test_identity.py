"""Principals and identities: who acts is half the record.

A principal (user, agent or service) holds identities keyed by scheme and
value: a unix uid, a bearer token (stored only as its digest, shown once), and
later oidc and tailscale. Every event records the principal and the identity
scheme it came through. Only people administer principals and tokens.
"""

from __future__ import annotations

import asyncio
import hashlib
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

import skift

# A unix identity is unique across organizations, and these tests reach the server's
# database in process: on "remote" each gets a server to itself.
pytestmark = pytest.mark.own_server

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from conftest import Snap


@pytest.fixture
async def local(sk: skift.LocalSkift, store_url: str) -> AsyncIterator[skift.LocalSkift]:
    """The in-process API over the store under test, for what a transport does itself
    (``authenticate``, ``bootstrap_owner``): on "remote", a handle on the server's database."""
    if isinstance(sk, skift.LocalSkift):
        yield sk
        return
    async with skift.open(store_url.removeprefix("remote+"), principal=skift.User("ada")) as h:
        yield h


async def principal(sk: skift.LocalSkift, name: str) -> skift.PrincipalInfo:
    return next(p for p in await sk.list_principals() if p.name == name)


async def test_add_principal_with_uid(sk: skift.LocalSkift) -> None:
    """A user adds a principal; with a uid it gets a unix identity; listing shows it."""
    added = await sk.add_principal("carol", "user", uid=1234)
    assert (added.name, added.kind) == ("carol", "user")
    assert [(i.scheme, i.value, i.revoked) for i in added.identities] == [("unix", "1234", False)]
    agent = await sk.add_principal("build-bot", "agent")
    assert agent.identities == ()
    listed = {p.name: p for p in await sk.list_principals()}
    assert {"ada", "carol", "build-bot"} <= set(listed)
    assert listed["carol"] == added
    assert listed["build-bot"].kind == "agent"
    ops = [(e.op, e.principal, e.after) for e in await sk.events() if e.op == "add_principal"]
    assert ops == [
        ("add_principal", "ada", {"name": "carol", "kind": "user", "uid": 1234}),
        ("add_principal", "ada", {"name": "build-bot", "kind": "agent", "uid": None}),
    ]


async def test_add_principal_duplicate_name_conflicts(sk: skift.LocalSkift, snap: Snap) -> None:
    """A principal's name is unique in its organization: adding it twice is a Conflict that names
    it and says what to do instead, and writes nothing."""
    await sk.add_principal("carol", "user")
    before = await snap(sk)
    with pytest.raises(skift.Conflict) as ei:
        await sk.add_principal("carol", "agent")
    assert "carol" in ei.value.message
    assert "attach an identity" in ei.value.next
    with pytest.raises(skift.Conflict):
        await sk.add_principal("ada", "user")  # the caller itself
    assert await snap(sk) == before


async def test_add_principal_bad_input_is_invalid(sk: skift.LocalSkift) -> None:
    """An unknown kind or an empty name is invalid input, with the accepted values."""
    with pytest.raises(skift.Invalid) as ei:
        await sk.add_principal("carol", "robot")
    assert "user, agent or service" in ei.value.next
    with pytest.raises(skift.Invalid):
        await sk.add_principal("  ", "user")


async def test_agent_may_not_administer(sk: skift.LocalSkift, snap: Snap) -> None:
    """Only a person administers principals, identities and tokens (listing them and sweeping
    expired leases included): an agent is refused with the next move, and nothing is written.
    Over the server the refusal comes before the call does any work (tests/server)."""
    await sk.add_principal("carol", "user")
    token = await sk.create_token("carol")
    bot = sk.acting_as(skift.Agent("bot"))
    await sk.create_project("Bot's")
    await bot.patch("bot-s", [skift.CreateNode(title="Bot's")])  # the agent exists and can write
    before = await snap(sk)
    principals = await sk.list_principals()
    for attempt in (
        bot.add_principal("mallory", "user", uid=666),
        bot.attach_identity("carol", "unix", "667"),
        bot.create_token("carol"),
        bot.create_token("bot"),
        bot.revoke_token(token.id),
        bot.list_principals(),
        bot.sweep_expired(),
    ):
        with pytest.raises(skift.Refused) as ei:
            await attempt
        assert "only a person administers" in ei.value.message
        assert "an admin of the organization" in ei.value.next
    assert await snap(sk) == before
    assert await sk.list_principals() == principals


async def test_token_secret_is_shown_once(sk: skift.LocalSkift) -> None:
    """create_token returns the secret once; listing shows only the token's id (never the secret or
    its digest), and neither appears in the event log."""
    await sk.add_principal("bot", "agent")
    token = await sk.create_token("bot")
    assert token.principal == "bot"
    assert token.token.startswith("skt_")
    assert len(token.token) > 40
    bot = await principal(sk, "bot")
    assert [(i.scheme, i.value, i.id) for i in bot.identities] == [("token", token.id, token.id)]
    digest = "sha256:" + hashlib.sha256(token.token.encode()).hexdigest()
    listing = repr(await sk.list_principals())
    log = repr(await sk.events())
    for secret in (token.token, digest, digest.removeprefix("sha256:")):
        assert secret not in listing
        assert secret not in log
    second = await sk.create_token("bot")
    assert second.token != token.token
    assert second.id != token.id


async def test_token_authenticates_as_its_principal(
    sk: skift.LocalSkift, local: skift.LocalSkift
) -> None:
    """authenticate("token", secret) gives a handle acting as the token's principal: its writes'
    events name that principal, its kind and the identity scheme "token", and the policy applies
    to it as to that principal."""
    await sk.add_principal("bot", "agent")
    token = await sk.create_token("bot")
    p = await sk.create_project("P")
    bot = await local.authenticate("token", token.token)
    await bot.patch(p.slug, [skift.CreateNode(title="Filed over a token")])
    ev = (await sk.events(ref="p#1"))[-1]
    assert (ev.op, ev.principal, ev.principal_kind, ev.identity_scheme) == (
        "create_node",
        "bot",
        "agent",
        "token",
    )
    local = [e for e in await sk.events() if e.op == "create_project"]
    assert [(e.principal, e.identity_scheme) for e in local] == [("ada", "local")]
    with pytest.raises(skift.Refused):
        await bot.hold("p#1", reason="agents may not")


async def test_unix_uid_authenticates_as_its_principal(
    sk: skift.LocalSkift, local: skift.LocalSkift
) -> None:
    """authenticate("unix", uid) gives a handle acting as the principal holding that uid; its
    events record the identity scheme "unix"."""
    await sk.add_principal("carol", "user", uid=1234)
    p = await sk.create_project("P")
    carol = await local.authenticate("unix", "1234")
    await carol.patch(p.slug, [skift.CreateNode(title="Filed over the socket")])
    ev = (await sk.events(ref="p#1"))[-1]
    assert (ev.principal, ev.principal_kind, ev.identity_scheme) == ("carol", "user", "unix")
    await carol.hold("p#1", reason="a person may")


async def test_wrong_and_revoked_tokens_are_unauthenticated(
    sk: skift.LocalSkift, local: skift.LocalSkift
) -> None:
    """A wrong token and a revoked one are Unauthenticated, and the next move is to get a token
    (each surface words it: the CLI names `skift token create`); revoking shows in the listing, and revoking twice is refused."""
    await sk.add_principal("bot", "agent")
    token = await sk.create_token("bot")
    for wrong in ("skt_wrong", token.token + "x", "", token.id):
        with pytest.raises(skift.Unauthenticated) as ei:
            await local.authenticate("token", wrong)
        assert ei.value.move == {"do": "get_token"}
    await local.authenticate("token", token.token)
    await sk.revoke_token(token.id)
    with pytest.raises(skift.Unauthenticated) as ei:
        await local.authenticate("token", token.token)
    assert ei.value.move == {"do": "get_token"}
    bot = await principal(sk, "bot")
    assert [(i.id, i.revoked) for i in bot.identities] == [(token.id, True)]
    with pytest.raises(skift.Refused) as ei2:
        await sk.revoke_token(token.id)
    assert "already revoked" in ei2.value.message
    with pytest.raises(skift.NotFound):
        await sk.revoke_token(skift.ulid_str(skift.new_id()))
    revoke = [e for e in await sk.events() if e.op == "revoke_token"]
    assert [e.before for e in revoke] == [{"token_id": token.id}]


async def test_revoked_token_leaves_others_working(
    sk: skift.LocalSkift, local: skift.LocalSkift
) -> None:
    """Revoking one token leaves the principal's other tokens working."""
    await sk.add_principal("bot", "agent")
    one = await sk.create_token("bot")
    two = await sk.create_token("bot")
    await sk.revoke_token(one.id)
    again = await local.authenticate("token", two.token)
    await sk.create_project("Still in")
    await again.patch("still-in", [skift.CreateNode(title="Still working")])


async def test_unknown_uid_names_the_command_that_registers_it(
    sk: skift.LocalSkift, local: skift.LocalSkift
) -> None:
    """A uid nobody registered is Unauthenticated, and the next move is the exact command that
    registers it."""
    with pytest.raises(skift.Unauthenticated) as ei:
        await local.authenticate("unix", "4242")
    assert "4242" in ei.value.message
    assert "uid 4242" in ei.value.next
    # the CLI words the move as the exact command: skift principal add NAME --kind user --uid 4242
    assert ei.value.move == {"do": "add_principal", "uid": "4242"}


async def test_bootstrap_owner_is_idempotent(sk: skift.LocalSkift, local: skift.LocalSkift) -> None:
    """bootstrap_owner(uid) makes the server's owner a user principal holding that uid, and calling
    it again changes nothing."""
    first = await local.bootstrap_owner(1000, name="owner")
    assert (first.name, first.kind) == ("owner", "user")
    assert [(i.scheme, i.value) for i in first.identities] == [("unix", "1000")]
    listing = await sk.list_principals()
    again = await local.bootstrap_owner(1000, name="owner")
    assert again == first
    assert await sk.list_principals() == listing
    owner = await local.authenticate("unix", "1000")
    await owner.create_project("Owned")
    await owner.hold_project("owned", reason="the owner is a person")


async def test_bootstrap_owner_attaches_to_the_acting_user(
    sk: skift.LocalSkift, local: skift.LocalSkift
) -> None:
    """Without a name, bootstrap_owner gives the uid to the principal the handle acts as."""
    got = await local.bootstrap_owner(1001)
    assert got.name == "ada"
    assert got.kind == "user"
    assert ("unix", "1001") in [(i.scheme, i.value) for i in got.identities]
    assert await local.bootstrap_owner(1001) == got


async def test_attach_identity(sk: skift.LocalSkift, local: skift.LocalSkift, snap: Snap) -> None:
    """A user attaches another identity to a principal; a live uid already attached elsewhere is a
    Conflict, and tokens are not attached by hand."""
    await sk.add_principal("carol", "user", uid=1234)
    await sk.add_principal("dave", "user")
    got = await sk.attach_identity("carol", "oidc", "https://id.example|carol")
    assert ("oidc", "https://id.example|carol") in [(i.scheme, i.value) for i in got.identities]
    before = await snap(sk)
    with pytest.raises(skift.Conflict) as ei:
        await sk.attach_identity("dave", "unix", "1234")
    assert "already belongs" in ei.value.message
    with pytest.raises(skift.Conflict):
        await sk.attach_identity("carol", "unix", "1234")
    with pytest.raises(skift.Invalid) as ei2:
        await sk.attach_identity("dave", "token", "sha256:abc")
    assert "create_token" in ei2.value.next
    with pytest.raises(skift.Invalid):
        await sk.attach_identity("dave", "kerberos", "dave@EXAMPLE")
    with pytest.raises(skift.Invalid):
        await sk.attach_identity("dave", "unix", "not-a-uid")
    with pytest.raises(skift.NotFound) as ei3:
        await sk.attach_identity("nobody", "unix", "99")
    assert ei3.value.move == {"do": "list_principals"}
    assert await snap(sk) == before
    assert [i.value for i in (await principal(sk, "dave")).identities] == []
    carol = await local.authenticate("unix", "1234")
    await carol.create_project("Carol's")


async def test_on_behalf_of_is_refused(sk: skift.LocalSkift, snap: Snap) -> None:
    """on_behalf_of exists so shapes never change, but delegation is not in v1: set on patch,
    claim or claim_next it is refused with the next move, and nothing is written."""
    p = await sk.create_project("P")
    await sk.patch(p.slug, [skift.CreateNode(title="Work")])
    bot = sk.acting_as(skift.Agent("bot"))
    before = await snap(sk)
    for attempt in (
        bot.patch(p.slug, [skift.CreateNode(title="For ada")], on_behalf_of="ada"),
        bot.claim("p#1", on_behalf_of="ada"),
        bot.claim_next(on_behalf_of="ada"),
        sk.patch(p.slug, [skift.CreateNode(title="For bot")], on_behalf_of="bot"),
    ):
        with pytest.raises(skift.Refused) as ei:
            await attempt
        assert "on behalf of" in ei.value.message
        assert "leave on_behalf_of unset" in ei.value.next
    assert await snap(sk) == before


async def test_human_written(sk: skift.LocalSkift) -> None:
    """Whether a user principal has ever written to a node is derived from its events: False while
    only agents wrote it, True once a user writes to it, and it stays True."""
    p = await sk.create_project("P")
    bot = sk.acting_as(skift.Agent("bot"))
    await bot.patch(p.slug, [skift.CreateNode(title="Agent's")])
    assert not (await sk.get("p#1")).human_written
    claim = await bot.claim("p#1")
    await bot.patch(p.slug, [skift.UpdateNode(node="#1", body="notes")], lease=claim.lease.id)
    assert not (await bot.get("p#1")).human_written
    await bot.release("p#1", lease=claim.lease.id, reason="crash")
    assert not (await sk.get("p#1")).human_written
    await sk.patch(p.slug, [skift.UpdateNode(node="#1", title="Agent's, edited by ada")])
    assert (await sk.get("p#1")).human_written
    assert (await bot.get("p#1")).human_written
    listed = {n.ref: n.human_written for n in (await sk.list_nodes()).nodes}
    assert listed == {"p#1": True}
    await sk.patch(p.slug, [skift.CreateNode(title="Ada's")])
    assert (await sk.get("p#2")).human_written
    other = sk.acting_as(skift.Agent("other-bot"))
    await other.patch(p.slug, [skift.CreateNode(title="Other agent's")])
    assert not (await sk.get("p#3")).human_written


@pytest.mark.in_process("authenticate is the transport's step; tests/server covers it over TCP")
async def test_a_revoked_or_expired_identity_ends_a_waiting_call(sk: skift.LocalSkift) -> None:
    """What a transport authenticated is re-checked when a waiting call wakes: revoking the token
    (or an OIDC token's expiry) ends a waiting ClaimNext and change-stream read Unauthenticated,
    and the work written meanwhile is not handed out. (Through the server: tests/server.)"""
    await sk.create_project("Quiet")
    await sk.add_principal("bot", "agent")
    token = await sk.create_token("bot")
    bot = await sk.authenticate("token", token.token)
    cursor = (await sk.watch_events()).cursor
    claiming = asyncio.create_task(bot.claim_next(wait=timedelta(seconds=20)))
    watching = asyncio.create_task(bot.watch_events(after=cursor, wait=timedelta(seconds=20)))
    await asyncio.sleep(0.3)
    await sk.revoke_token(token.id)
    await sk.patch("quiet", [skift.CreateNode(title="After the revocation")])
    for task in (claiming, watching):
        with pytest.raises(skift.Unauthenticated, match="revoked while it waited"):
            await task
    assert (await sk.get("quiet#1")).ready

    await sk.add_principal("dora", "user")
    await sk.attach_identity("dora", "oidc", "https://id.example|dora")
    soon = datetime.now(UTC) + timedelta(seconds=1)
    dora = await sk.authenticate("oidc", "https://id.example|dora", expires_at=soon)
    with pytest.raises(skift.Unauthenticated, match="expired"):
        await dora.watch_events(after=(await sk.watch_events()).cursor, wait=timedelta(seconds=10))
    with pytest.raises(skift.Unauthenticated, match="expired"):
        await sk.authenticate("oidc", "https://id.example|dora", expires_at=soon)


async def test_whoami_names_the_caller_its_organization_and_a_store_without_a_password(
    sk: skift.LocalSkift,
) -> None:
    """``whoami`` (``skift status``): the principal the handle acts as, its kind and
    organization, a version, and the store without any password."""
    me = await sk.whoami()
    assert me.principal == "ada"
    assert me.kind == "user"
    assert me.org
    assert me.version
    assert me.database == "memory:" or me.database.startswith(("postgresql", "host="))
    assert "password" not in me.database
    bot = await sk.acting_as(skift.Agent("bot")).whoami()
    assert (bot.principal, bot.kind, bot.org) == ("bot", "agent", me.org)
    assert me.admin is True  # ada is her organization's admin
    assert bot.admin is False


def test_a_dsn_is_shown_without_its_password() -> None:
    from skift._secrets import redact_dsn

    assert redact_dsn("postgresql://ada:s3cret@db:5432/skift") == "postgresql://ada@db:5432/skift"
    assert redact_dsn("postgresql://db/skift") == "postgresql://db/skift"
    assert "s3cret" not in redact_dsn("host=db password=s3cret dbname=skift")
