"""Organizations and the server's administrators: who may create a tenant, and who binds a uid.

An administrator of the server is a user principal of the store's first
organization (the one the server was started for, which its owner joined at
first start). Only such a person creates an organization (``create_org``: the
tenant, its first user, and that user's token, which works at once over
TCP), lists them, and binds a unix uid to a principal: a uid is a property of
the host, so which principal of which organization a local process acts as
is the host administrator's decision, never a tenant's.
"""

from __future__ import annotations

import secrets
from datetime import datetime
from typing import TYPE_CHECKING

import attrs

from ._errors import Conflict, Invalid, Refused
from ._models import IdentityScheme, Org, PrincipalKind
from ._refs import ulid_str

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


NOT_ADMIN_NEXT = "Ask an administrator of the server (a person of its first organization) to do it."


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
    first = await server_org(store)
    return (
        actor.kind is PrincipalKind.USER
        and first is not None
        and actor.principal.org_id == first.id
    )


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
    """A new organization with one user, ``admin``, and a token for them."""
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
    from ._engine import token_digest

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


async def list_orgs(store: Store, actor: Actor) -> list[OrgInfo]:
    await require_server_admin(store, actor, "lists organizations")
    orgs = await store.list_orgs()
    return [OrgInfo(name=o.name, created_at=o.created_at, first=i == 0) for i, o in enumerate(orgs)]
