"""Principals and their identities: people, agents and services; unix uids, OIDC, tokens."""

from __future__ import annotations

import secrets
from collections.abc import Sequence

from ._context import Actor, Context
from ._errors import Conflict, Invalid, NotFound, Refused
from ._intent import intent
from ._models import Identity, IdentityScheme, Principal, PrincipalKind
from ._refs import new_id, parse_ulid, ulid_str
from ._secrets import token_digest
from ._store import Tx
from ._views import IdentityInfo, PrincipalInfo, TokenInfo

MAX_UID = 2**32 - 2
"""The largest unix uid (2**32 - 1 is the kernel's "no uid")."""


def check_uid(value: str) -> None:
    """:class:`Invalid` unless ``value`` is a unix uid (0 to :data:`MAX_UID`), checked before
    anything else looks at the request (who may bind it included)."""
    if not (value.isascii() and value.isdigit() and int(value) <= MAX_UID):
        raise Invalid(
            f"{value[:40]!r} is not a uid (0 to {MAX_UID})",
            next="Give the numeric uid, e.g. 1000.",
            field="uid",
        )


class Principals(Context):
    """Adding principals, attaching identities, minting and revoking bearer tokens."""

    # -------------------------------------------------------------- principals

    async def principal_infos(self, tx: Tx, principals: Sequence[Principal]) -> list[PrincipalInfo]:
        out: list[PrincipalInfo] = []
        for p in principals:
            idents = await tx.identities_of(p.id)
            out.append(
                PrincipalInfo(
                    id=ulid_str(p.id),
                    name=p.name,
                    kind=p.kind.value,
                    identities=tuple(
                        IdentityInfo(
                            id=ulid_str(i.id),
                            scheme=i.scheme.value,
                            value=ulid_str(i.id) if i.scheme is IdentityScheme.TOKEN else i.value,
                            created_at=i.created_at,
                            revoked=i.revoked_at is not None,
                        )
                        for i in idents
                    ),
                    created_at=p.created_at,
                )
            )
        return out

    async def _principal(self, tx: Tx, name_or_id: str) -> Principal:
        ident = parse_ulid(name_or_id.strip())
        found = (await tx.principals_by_id([ident])).get(ident) if ident else None
        found = found or await tx.principal_by_name(name_or_id.strip())
        if found is None:
            raise NotFound(
                f"no principal {name_or_id!r}",
                next="List the principals, or add one.",
                move={"do": "list_principals"},
            )
        return found

    async def add_principal(
        self, tx: Tx, actor: Actor | None, name: str, kind: PrincipalKind, uid: int | None
    ) -> Principal:
        """Add a principal (admin: a person), with a unix identity when ``uid`` is given.

        ``actor`` None is the server's own bootstrap, which no policy gates.
        """
        if actor is not None:
            await self.authorize(tx, actor, [intent("admin")])
        clean = name.strip()
        if not clean or len(clean) > 100:
            raise Invalid(
                "a principal needs a name of 1 to 100 characters",
                next="Name it, e.g. ada or build-bot.",
                field="name",
            )
        if await tx.principal_by_name(clean) is not None:
            raise Conflict(
                f"a principal named {clean!r} exists",
                next="Choose another name, or attach an identity to it.",
            )
        now = await tx.now()
        p = Principal(id=new_id(), org_id=tx.org_id, name=clean, kind=kind, created_at=now)
        await tx.insert_principal(p)
        if uid is not None:
            await self._attach(tx, p, IdentityScheme.UNIX, str(uid))
        if actor is not None:
            await tx.append_events(
                [
                    await self._event(
                        tx,
                        actor,
                        "add_principal",
                        after={"name": clean, "kind": kind.value, "uid": uid},
                    )
                ]
            )
        return p

    async def _attach(self, tx: Tx, p: Principal, scheme: IdentityScheme, value: str) -> Identity:
        if scheme is IdentityScheme.UNIX:
            check_uid(value)
        ident = Identity(
            id=new_id(),
            org_id=tx.org_id,
            principal_id=p.id,
            scheme=scheme,
            value=value,
            created_at=await tx.now(),
        )
        await tx.insert_identity(ident)
        return ident

    async def attach_identity(
        self, tx: Tx, actor: Actor, principal: str, scheme: str, value: str
    ) -> Principal:
        await self.authorize(tx, actor, [intent("admin")])
        p = await self._principal(tx, principal)
        try:
            kind = IdentityScheme(scheme)
        except ValueError:
            raise Invalid(
                f"identity scheme {scheme!r} is not one of unix, oidc, tailscale",
                next="Tokens are made with create_token; attach unix, oidc or tailscale identities.",
                field="scheme",
            ) from None
        if kind in (IdentityScheme.TOKEN, IdentityScheme.LOCAL):
            raise Invalid(
                f"{scheme} identities are not attached by hand",
                next="Use create_token for a bearer token.",
                field="scheme",
            )
        await self._attach(tx, p, kind, value.strip())
        await tx.append_events(
            [
                await self._event(
                    tx, actor, "attach_identity", after={"principal": p.name, "scheme": kind.value}
                )
            ]
        )
        return p

    async def create_token(self, tx: Tx, actor: Actor, principal: str) -> TokenInfo:
        await self.authorize(tx, actor, [intent("admin")])
        p = await self._principal(tx, principal)
        secret = "skt_" + secrets.token_urlsafe(32)
        ident = await self._attach(tx, p, IdentityScheme.TOKEN, token_digest(secret))
        await tx.append_events(
            [
                await self._event(
                    tx,
                    actor,
                    "create_token",
                    after={"principal": p.name, "token_id": ulid_str(ident.id)},
                )
            ]
        )
        return TokenInfo(
            id=ulid_str(ident.id), principal=p.name, token=secret, created_at=ident.created_at
        )

    async def revoke_token(self, tx: Tx, actor: Actor, token_id: str) -> None:
        await self.authorize(tx, actor, [intent("admin")])
        ident_id = parse_ulid(token_id.strip())
        ident = await tx.identity_by_id(ident_id) if ident_id else None
        if ident is None or ident.scheme is not IdentityScheme.TOKEN:
            raise NotFound(
                f"no token {token_id!r}",
                next="The list of principals shows their token ids.",
                move={"do": "list_principals"},
            )
        if not await tx.revoke_identity(ident.id):
            raise Refused(f"token {token_id} is already revoked", next="Nothing to do.")
        await tx.append_events(
            [await self._event(tx, actor, "revoke_token", before={"token_id": token_id})]
        )
