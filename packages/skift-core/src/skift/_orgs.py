"""Organizations and the server's administrators: who may create a tenant, and who binds a uid.

An administrator of the server is an admin of the store's first organization
(the one the server was started for, whose owner joined it as its admin at
first start). Only such a person creates an organization (``create_org``: the
tenant, its first user and admin, and that user's token, which works at once
over TCP), lists them, and binds an identity directly: a unix uid is a property
of the host, so which principal of which organization a local process acts as
is the host administrator's decision, never a tenant's; an OIDC identity is
bound directly by the server's administrator, or by its holder signing in with
it after an admin of their organization invited it (:func:`bind_invited`).
"""

from __future__ import annotations

import hmac
import secrets
from datetime import datetime
from typing import TYPE_CHECKING

import attrs

from ._errors import Conflict, Invalid, Refused, Unauthenticated
from ._models import IdentityScheme, Org, PrincipalKind
from ._pages import Page, cut, read_limit, read_position
from ._refs import ulid_str
from ._secrets import token_digest

if TYPE_CHECKING:
    from ._engine import Actor, Engine
    from ._store import Store


@attrs.frozen(kw_only=True)
class OrgInfo:
    """An organization as ``list_orgs`` shows it."""

    name: str
    created_at: datetime
    first: bool = False
    """The server's own organization (its users administer the server)."""


@attrs.frozen(kw_only=True)
class OrgCreated:
    """What ``create_org`` returns: the organization, its first user, and that user's bearer
    token (shown once, never again)."""

    org: str
    admin: str
    token: str
    token_id: str
    uid: int | None = None


NOT_ADMIN_NEXT = "Ask an administrator of the server (an admin of its first organization) to do it."


def refuse_oidc_binding() -> None:
    raise Refused(
        "only an administrator of the server binds an OIDC identity directly; an admin of "
        "the organization invites it, and its holder's first sign-in with it binds it",
        next="Invite it for the principal (its issuer|subject), then have the person sign in "
        "with a token for it.",
        move={"do": "invite_identity", "scheme": "oidc"},
    )


def refuse_uid_binding() -> None:
    raise Refused(
        "only an administrator of the server binds a unix uid: a uid belongs to the host, "
        "and which principal of which organization it acts as is the host's decision",
        next="Ask an administrator of the server to bind it (a new organization's first user "
        "can be given a uid); use a token or OIDC meanwhile.",
        move={"do": "bind_uid"},
    )


async def server_org(store: Store) -> Org | None:
    orgs = await store.list_orgs()
    return orgs[0] if orgs else None


async def is_server_admin(store: Store, actor: Actor) -> bool:
    """An admin of the first organization, by the role as stored now."""
    first = await server_org(store)
    if actor.kind is not PrincipalKind.USER or first is None or actor.principal.org_id != first.id:
        return False
    async with store.transaction(first.id) as tx:
        found = (await tx.principals_by_id([actor.id])).get(actor.id)
    return found is not None and found.admin


async def bind_invited(
    engine: Engine, store: Store, scheme: str, value: str, code: str | None
) -> None:
    """A sign-in with an identity nobody holds (the transport verified its token): bind it
    to the principal of the invitation whose code the sign-in presents. Without a code, or
    with one no pending invitation of this identity has, nothing is bound: an invitation
    alone never decides (an organization that invited someone else's identity first would
    otherwise get them). Two organizations may invite one identity; the code says which
    one the person meant, and names neither to them."""
    invites = await store.invites_for_identity(scheme, value)
    if not invites:
        return
    if not code:
        raise Unauthenticated(
            f"the {scheme} identity {value} is invited but not yet bound: its first sign-in "
            "presents the invitation's code",
            next="Sign in again presenting the code the admin who invited you gave you.",
            move={"do": "present_invite"},
        )
    digest = token_digest(code.strip())
    chosen = next(
        (
            i
            for i in invites
            if i.code_digest is not None and hmac.compare_digest(i.code_digest, digest)
        ),
        None,
    )
    if chosen is None:
        raise Unauthenticated(
            f"that invitation code is not one for the {scheme} identity {value}, or it was "
            "used or cancelled",
            next="Ask the admin who invited you for a fresh invitation, and sign in with its code.",
        )
    async with store.transaction(chosen.org_id) as tx:
        await engine.bind_invited(tx, chosen)


async def require_server_admin(store: Store, actor: Actor, what: str) -> None:
    if not await is_server_admin(store, actor):
        raise Refused(f"only an administrator of the server {what}", next=NOT_ADMIN_NEXT)


def _name(text: str, what: str) -> str:
    clean = text.strip()
    if not clean or len(clean) > 100:
        raise Invalid(
            f"{what} needs a name of 1 to 100 characters",
            next="Name it, e.g. acme or ada.",
            field="name",
        )
    return clean


async def create_org(
    engine: Engine, store: Store, actor: Actor, name: str, admin: str, uid: int | None
) -> OrgCreated:
    """A new organization with one user, ``admin`` (its admin), and a token for them."""
    await require_server_admin(store, actor, "creates organizations")
    org_name = _name(name, "an organization")
    admin_name = _name(admin, "its first user")
    if any(o.name == org_name for o in await store.list_orgs()):
        raise Conflict(
            f"an organization named {org_name!r} exists",
            next="Choose another name (the list of organizations shows them).",
            move={"do": "list_orgs"},
            field="name",
        )
    if uid is not None and await store.principal_by_identity("unix", str(uid)) is not None:
        raise Conflict(
            f"uid {uid} already acts as a principal on this server",
            next="Leave the uid out, or give a uid no principal holds yet.",
            field="uid",
        )
    org = await store.ensure_org(org_name)
    async with store.transaction(org.id) as tx:
        if await tx.list_principals():
            raise Conflict(
                f"an organization named {org_name!r} was just created by someone else",
                next="Choose another name (the list of organizations shows them).",
                move={"do": "list_orgs"},
                field="name",
            )
        principal = await engine.add_principal(tx, None, admin_name, PrincipalKind.USER, uid)
        secret = "skt_" + secrets.token_urlsafe(32)
        ident = await engine._attach(  # pyright: ignore[reportPrivateUsage]
            tx, principal, IdentityScheme.TOKEN, token_digest(secret)
        )
    first = await server_org(store)
    assert first is not None
    async with store.transaction(first.id) as tx:
        await tx.append_events(
            [
                await engine._event(  # pyright: ignore[reportPrivateUsage]
                    tx,
                    actor,
                    "create_org",
                    after={"org": org_name, "admin": admin_name, "uid": uid},
                )
            ]
        )
    return OrgCreated(
        org=org_name, admin=admin_name, token=secret, token_id=ulid_str(ident.id), uid=uid
    )


async def list_orgs(
    store: Store, actor: Actor, *, size: int | None = None, page: str | None = None
) -> Page[OrgInfo]:
    """Every organization, oldest first (created_at, name): all when ``size`` is None, else
    ``size`` of them after ``page`` (keyset). The first of all is the server's own."""
    after = read_position("orgs", page, (datetime, str))
    await require_server_admin(store, actor, "lists organizations")
    got = await store.org_page(after=after, limit=read_limit(size))
    orgs, ends, more = cut("orgs", got, size, lambda o: (o.created_at, o.name))
    return Page(
        [
            OrgInfo(name=o.name, created_at=o.created_at, first=after is None and i == 0)
            for i, o in enumerate(orgs)
        ],
        ends=ends,
        more=more,
    )
