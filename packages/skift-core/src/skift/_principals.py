"""Principals and their identities: people, agents and services; unix uids, OIDC, tokens.

A principal has a role in its organization: ``admin`` or not (people only). The
organization's first person is its admin; admins grant and revoke the role (the last
admin stays), add principals, mint and revoke tokens for others and invite external
identities. A person mints and revokes their own tokens. The policy decides each
(``policy/default.rego``: ``admin``, ``own_token``).
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from uuid import UUID

import attrs

from ._context import Actor, Context
from ._errors import Conflict, Invalid, NotFound, Refused
from ._intent import intent
from ._models import Identity, IdentityInvite, IdentityScheme, Principal, PrincipalKind
from ._refs import new_id, parse_ulid, ulid_str
from ._secrets import token_digest
from ._store import Tx
from ._views import IdentityInfo, InviteInfo, PrincipalInfo, TokenInfo

INVITE_CODE_PREFIX = "skinv_"
"""An invitation's code starts so (a bearer token with ``skt_``): who holds one knows which."""

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
                    admin=p.admin,
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
        """Add a principal (an admin's call), with a unix identity when ``uid`` is given.
        The organization's first person is its admin.

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
        if kind is PrincipalKind.USER:  # two people added at once: one sees the other
            await tx.lock_principals()
        first_person = kind is PrincipalKind.USER and not any(
            o.kind is PrincipalKind.USER for o in await tx.list_principals()
        )
        p = Principal(
            id=new_id(), org_id=tx.org_id, name=clean, kind=kind, created_at=now, admin=first_person
        )
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
        """A bearer token for ``principal``: a person's own, or an admin's for anyone."""
        p = await self._principal(tx, principal)
        await self.authorize(tx, actor, [intent("own_token" if p.id == actor.id else "admin")])
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
        """Revoke a token: a person's own, or an admin's of anyone."""
        ident_id = parse_ulid(token_id.strip())
        ident = await tx.identity_by_id(ident_id) if ident_id else None
        if ident is None or ident.scheme is not IdentityScheme.TOKEN:
            raise NotFound(
                f"no token {token_id!r}",
                next="The list of principals shows their token ids.",
                move={"do": "list_principals"},
            )
        own = ident.principal_id == actor.id
        await self.authorize(tx, actor, [intent("own_token" if own else "admin")])
        if not await tx.revoke_identity(ident.id):
            raise Refused(f"token {token_id} is already revoked", next="Nothing to do.")
        await tx.append_events(
            [await self._event(tx, actor, "revoke_token", before={"token_id": token_id})]
        )

    # -------------------------------------------------------------- the admin role

    async def grant_admin(self, tx: Tx, actor: Actor, principal: str, reason: str) -> Principal:
        """Give a person the organization's admin role (an admin's call; an event)."""
        await self.authorize(tx, actor, [intent("admin")])
        why = self._reason(reason, "grant of the admin role")
        p = await self._principal(tx, principal)
        if p.kind is not PrincipalKind.USER:
            raise Invalid(
                f"{p.name} is {'an' if p.kind is PrincipalKind.AGENT else 'a'} {p.kind.value}: "
                "only a person is an admin",
                next="Grant the role to a person; an agent asks a person through a gate.",
                field="principal",
            )
        if p.admin:
            raise Refused(f"{p.name} is an admin already", next="Nothing to do.")
        await tx.set_admin(p.id, True)
        await tx.append_events(
            [
                await self._event(
                    tx, actor, "grant_admin", reason=why, after={"principal": p.name, "admin": True}
                )
            ]
        )
        return attrs.evolve(p, admin=True)

    async def revoke_admin(self, tx: Tx, actor: Actor, principal: str, reason: str) -> Principal:
        """Take the admin role from a person (an admin's call; an event). The organization's
        last admin stays one."""
        await self.authorize(tx, actor, [intent("admin")])
        why = self._reason(reason, "revocation of the admin role")
        p = await self._principal(tx, principal)
        admins = await tx.admins(lock=True)
        if p.id not in admins:
            raise Refused(f"{p.name} is not an admin", next="Nothing to do.")
        if admins == [p.id]:
            raise Refused(
                f"{p.name} is the organization's last admin",
                next=f"Grant the role to another person first, then revoke it from {p.name}.",
                move={"do": "grant_admin"},
            )
        await tx.set_admin(p.id, False)
        await tx.append_events(
            [
                await self._event(
                    tx,
                    actor,
                    "revoke_admin",
                    reason=why,
                    before={"principal": p.name, "admin": True},
                    after={"principal": p.name, "admin": False},
                )
            ]
        )
        return attrs.evolve(p, admin=False)

    # -------------------------------------------------------------- invitations

    async def invite_identity(
        self, tx: Tx, actor: Actor, principal: str, scheme: str, value: str
    ) -> InviteInfo:
        """Invite an external identity (an OIDC ``issuer|subject``) for a principal (an admin's
        call): it becomes the principal's when its holder signs in with it presenting the
        invitation's code, which the answer carries once (only its digest is kept). Inviting
        the same identity again replaces the invitation and its code. An event (never the
        code)."""
        await self.authorize(tx, actor, [intent("admin")])
        if scheme.strip().lower() != IdentityScheme.OIDC.value:
            raise Invalid(
                f"identity scheme {scheme!r} is not invited: only an OIDC identity is",
                next="Invite an OIDC identity (issuer|subject); a uid is bound by an administrator "
                "of the server, and a token is minted for the principal instead.",
                field="scheme",
            )
        clean = check_oidc(value)
        p = await self._principal(tx, principal)
        code = INVITE_CODE_PREFIX + secrets.token_urlsafe(24)
        invite = IdentityInvite(
            id=new_id(),
            org_id=tx.org_id,
            principal_id=p.id,
            scheme=IdentityScheme.OIDC,
            value=clean,
            invited_by=actor.id,
            created_at=await tx.now(),
            code_digest=token_digest(code),
        )
        await tx.put_invite(invite)
        await tx.append_events(
            [
                await self._event(
                    tx,
                    actor,
                    "invite_identity",
                    after={"principal": p.name, "scheme": "oidc", "value": clean},
                )
            ]
        )
        return InviteInfo(
            id=ulid_str(invite.id),
            principal=p.name,
            scheme="oidc",
            value=clean,
            invited_by=actor.principal.name,
            created_at=invite.created_at,
            code=code,
        )

    async def invites(self, tx: Tx, actor: Actor) -> list[InviteInfo]:
        """The organization's pending invitations, oldest first (an admin's call); never
        their codes."""
        await self.authorize(tx, actor, [intent("admin")])
        return await self._invite_infos(tx, await tx.invites())

    async def _invite_infos(self, tx: Tx, pending: Sequence[IdentityInvite]) -> list[InviteInfo]:
        names = await tx.principals_by_id(
            {i.principal_id for i in pending} | {i.invited_by for i in pending}
        )

        def name(pid: UUID) -> str:
            found = names.get(pid)
            return found.name if found else ulid_str(pid)

        return [
            InviteInfo(
                id=ulid_str(i.id),
                principal=name(i.principal_id),
                scheme=i.scheme.value,
                value=i.value,
                invited_by=name(i.invited_by),
                created_at=i.created_at,
            )
            for i in pending
        ]

    async def cancel_invite(self, tx: Tx, actor: Actor, which: str) -> InviteInfo:
        """Cancel a pending invitation, named by its id or by the identity it invites (an
        admin's call): its code binds nothing from now on. An event."""
        await self.authorize(tx, actor, [intent("admin")])
        key = which.strip()
        ident = parse_ulid(key)
        found = next((i for i in await tx.invites() if i.id == ident or i.value == key), None)
        if found is None or not await tx.take_invite(found.id):
            raise NotFound(
                f"no pending invitation {key[:200]!r}",
                next="List the pending invitations; a used one is a bound identity now.",
                move={"do": "list_invites"},
            )
        (info,) = await self._invite_infos(tx, [found])
        await tx.append_events(
            [
                await self._event(
                    tx,
                    actor,
                    "cancel_invite",
                    before={
                        "principal": info.principal,
                        "scheme": info.scheme,
                        "value": info.value,
                    },
                )
            ]
        )
        return info

    async def bind_invited(self, tx: Tx, invite: IdentityInvite) -> Principal | None:
        """Bind an invited identity to its principal, its holder having signed in with it (the
        transport verified the token); None when the invitation is gone or the identity was
        bound meanwhile. An event, by the principal, through the identity."""
        if not await tx.take_invite(invite.id):
            return None
        found = await tx.principals_by_id([invite.principal_id, invite.invited_by])
        p = found.get(invite.principal_id)
        if p is None:
            return None
        try:
            await self._attach(tx, p, invite.scheme, invite.value)
        except Conflict:
            return None
        inviter = found.get(invite.invited_by)
        actor = Actor(principal=p, identity_scheme=invite.scheme.value)
        await tx.append_events(
            [
                await self._event(
                    tx,
                    actor,
                    "bind_identity",
                    after={
                        "principal": p.name,
                        "scheme": invite.scheme.value,
                        "value": invite.value,
                        "invited_by": inviter.name if inviter else ulid_str(invite.invited_by),
                    },
                )
            ]
        )
        return p


def check_oidc(value: str) -> str:
    """An OIDC identity is ``issuer|subject``, both present."""
    clean = value.strip()
    issuer, bar, subject = clean.partition("|")
    if not bar or not issuer or not subject or len(clean) > 1000:
        raise Invalid(
            f"{clean[:60]!r} is not an OIDC identity (issuer|subject)",
            next="Give it as ISSUER|SUBJECT, e.g. https://accounts.example.com|10769150350006150715113082367.",
        )
    return clean
