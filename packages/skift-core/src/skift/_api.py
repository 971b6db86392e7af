"""The Skift API in process: :class:`LocalSkift` and :func:`open`.

``skift.open(url)`` returns a :class:`LocalSkift` over a store; the gRPC
client in ``skift_server`` implements the same :class:`Skift` protocol
remotely. Every method runs the engine inside one store transaction
(``_session``); the methods are grouped by concern in ``_api_graph``
(projects, patches, reads), ``_api_work`` (the work protocol, holds, focus),
``_api_content`` (comments, search, usage, webhooks, artifacts, events) and
``_api_import`` (beads import and export).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from importlib.metadata import entry_points
from typing import Any
from urllib.parse import parse_qsl, urlsplit
from uuid import UUID

import attrs

from ._api_content import ContentApi
from ._api_import import ImportApi
from ._api_work import WorkApi
from ._blobs import FileBlobStore
from ._engine import Actor, token_digest
from ._errors import Conflict, Invalid, LimitExceeded, NotFound, Unauthenticated
from ._inputs import check_inputs
from ._intent import intent
from ._limits import DEFAULT_LIMITS, Limits
from ._memory import MemoryStore
from ._models import IdentityScheme, Principal, PrincipalKind
from ._ops import OpLike as OpLike
from ._org_policy import reset_policy as policy_reset
from ._org_policy import set_policy as policy_set
from ._org_policy import show_policy as policy_show
from ._orgs import (
    OrgCreated,
    OrgInfo,
    is_server_admin,
    refuse_oidc_binding,
    refuse_uid_binding,
    require_server_admin,
)
from ._orgs import bind_invited as orgs_bind_invited
from ._orgs import create_org as orgs_create
from ._orgs import list_orgs as orgs_list
from ._pages import Page, read_limit, read_position
from ._pages import cut as cut_page
from ._policy import Policy
from ._policy_records import OrgPolicy
from ._principal_spec import Agent as Agent
from ._principal_spec import PrincipalSpec as PrincipalSpec
from ._principal_spec import Service as Service
from ._principal_spec import User as User
from ._principals import check_oidc, check_uid
from ._refs import ulid_str
from ._secrets import redact_dsn
from ._session import refusal_past_cap
from ._signin import (
    SESSION_TTL,
    SIGNIN_CODE_TTL,
    BoardSession,
    SessionInfo,
    SigninCode,
    SigninKind,
    bad_code,
    bad_session,
    check_may_sign_in,
)
from ._signin import digest_of as signin_digest
from ._signin import new_secret as signin_secret
from ._store import Store, Tx
from ._surface import Skift as Skift
from ._views import InviteInfo, PrincipalInfo, TokenInfo, WhoAmI

_REMEMBERED = frozenset({IdentityScheme.UNIX.value, IdentityScheme.TOKEN.value})
"""Identities ``authenticate(remembered=True)`` may start from (OIDC's expire and bind)."""

_REMEMBER_AT_MOST = 4096
"""Identities a base handle remembers (the oldest is forgotten first)."""


@check_inputs
class LocalSkift(WorkApi, ContentApi, ImportApi):
    """skift in this process, over a store. Use ``skift.open`` to make one."""

    def acting_as(self, principal: PrincipalSpec, *, org: str | None = None) -> LocalSkift:
        """Another handle on the same store, acting as another principal."""
        return LocalSkift(
            self.store,
            principal=principal,
            org=org or self.org_name,
            limits=self.engine.limits,
            owns_store=False,
            policy=self.base_policy,
        )

    async def authenticate(
        self,
        scheme: str,
        value: str,
        *,
        expires_at: datetime | None = None,
        invite: str | None = None,
        remembered: bool = False,
    ) -> LocalSkift:
        """A handle acting as the principal that holds this identity (a transport's view).

        ``scheme`` is ``unix`` (value: the uid), ``token`` (value: the bearer
        secret, hashed here) or ``oidc`` (value: ``issuer|subject``, from a token
        the transport verified). An identity nobody registered is refused with
        the command that registers it. ``invite`` is an invitation's code the
        sign-in presents: an OIDC identity nobody holds yet is bound to the
        principal of the invitation with that code (ignored once it is bound). A call that waits (ClaimNext and the
        change stream with ``wait``) re-checks the identity each time it wakes
        and before it answers: a revoked identity, or one past ``expires_at``
        (an OIDC token's expiry), ends it with ``Unauthenticated``.

        ``remembered`` (a unix or token identity this handle looked up before): the
        handle starts from the principal it named then, and its first transaction
        confirms it (``Tx.expect_identity``: in PostgreSQL with the transaction's first
        statement, no round trip of its own) before it answers or commits anything; a
        revoked identity, or one that now names another principal or the same one with
        another role, is refused there and the handle says ``identity_stale`` (the
        transport looks it up again). Only for calls that touch the store through
        transactions alone.
        """
        if expires_at is not None and expires_at <= datetime.now(UTC):
            raise Unauthenticated(
                f"that {scheme} credential expired at {expires_at.isoformat()}",
                next="Get a fresh token from your identity provider and retry.",
            )
        lookup = token_digest(value) if scheme == IdentityScheme.TOKEN.value else value
        key = (scheme, lookup)
        if remembered and expires_at is None and scheme in _REMEMBERED:
            known = self._identities.get(key)
            org_name = self._org_names.get(known.org_id) if known is not None else None
            if known is not None and org_name is not None:
                handle = self._handle_of(known, scheme, org_name)
                handle._credential = (scheme, lookup, None)
                handle._remembered = (scheme, lookup, known)
                handle._remembered_by = self._identities
                return handle
        principal = await self.store.principal_by_identity(scheme, lookup)
        if principal is None and scheme == IdentityScheme.OIDC.value:
            # its holder's proof: an admin of their organization may have invited it
            await orgs_bind_invited(self.engine, self.store, scheme, lookup, invite)
            principal = await self.store.principal_by_identity(scheme, lookup)
        if principal is None:
            self._identities.pop(key, None)
            if scheme == IdentityScheme.UNIX.value:
                raise Unauthenticated(
                    f"uid {value} is not registered with skift",
                    next=f"Ask an admin of skift to add a principal for uid {value}.",
                    move={"do": "add_principal", "uid": value},
                )
            if scheme == IdentityScheme.OIDC.value:
                raise Unauthenticated(
                    f"the OIDC identity {value} is not attached to any principal",
                    next=f"Ask an admin of your organization to invite the OIDC identity {value} "
                    "for your principal, then sign in again.",
                    move={"do": "invite_identity", "scheme": "oidc", "value": value},
                )
            raise Unauthenticated(
                f"that {scheme} credential is unknown or revoked",
                next="Ask an admin of skift for a token.",
                move={"do": "get_token"},
            )
        org_name = self._org_names.get(principal.org_id)
        if org_name is None:  # one statement saved on every gRPC call after the first
            org = await self.store.org_by_id(principal.org_id)
            assert org is not None
            org_name = self._org_names[principal.org_id] = org.name
        if scheme in _REMEMBERED:
            if len(self._identities) >= _REMEMBER_AT_MOST:
                self._identities.pop(next(iter(self._identities)))
            self._identities[key] = principal
        handle = self._handle_of(principal, scheme, org_name)
        handle._credential = (scheme, lookup, expires_at)
        return handle

    def long_poll_refusal(
        self, scheme: str, value: str, wait: timedelta | None
    ) -> LimitExceeded | None:
        """For a transport that answers early: whether a long poll (ClaimNext or WatchEvents
        given ``wait``) of the principal a unix or token identity named when this handle last
        looked it up would be refused now, past its ``long_polls_per_principal``, and the
        :class:`LimitExceeded` its call would raise (the same object each time for one
        principal: nothing is raised or counted here). None: it would not be, or the identity
        is not remembered: the call decides as it always does. No statement, no task: a
        flood of long polls past the cap is refused at the cost of this question."""
        if not wait or scheme not in _REMEMBERED:
            return None
        lookup = token_digest(value) if scheme == IdentityScheme.TOKEN.value else value
        known = self._identities.get((scheme, lookup))
        if known is None:
            return None
        return refusal_past_cap(self.store, self.engine.limits, known, wait)

    def _handle_of(self, principal: Principal, scheme: str, org_name: str) -> LocalSkift:
        return LocalSkift(
            self.store,
            principal=PrincipalSpec(principal.name, principal.kind),
            org=org_name,
            limits=self.engine.limits,
            owns_store=False,
            policy=self.base_policy,
            actor=Actor(principal=principal, identity_scheme=scheme),
        )

    async def whoami(self) -> WhoAmI:
        """Who this handle acts as, in which organization, and what serves it (``skift status``)."""
        from importlib.metadata import PackageNotFoundError, version

        actor = await self._run(lambda tx, a: self.engine.current(tx, a))  # the role now
        try:
            release = version("skift-core")
        except PackageNotFoundError:
            release = "0"
        dsn = getattr(self.store, "dsn", None)
        return WhoAmI(
            principal=actor.principal.name,
            kind=actor.principal.kind.value,
            org=self.org_name,
            admin=actor.principal.admin,
            version=release,
            database=redact_dsn(dsn) if isinstance(dsn, str) else "memory:",
        )

    async def bootstrap_owner(self, uid: int, name: str | None = None) -> PrincipalInfo:
        """Make sure the owner of a server (a uid) is a user principal of this organization.

        The server calls this at start, so a first start has one organization
        and its owner can act at once. Idempotent; no policy gates it.
        """
        existing = await self.store.principal_by_identity(IdentityScheme.UNIX.value, str(uid))
        await self._whoami()

        async def go(tx: Tx, a: Actor) -> PrincipalInfo:
            p = existing
            if p is None:
                wanted = name or self.spec.name
                p = await tx.principal_by_name(wanted)
                if p is None:
                    p = await self.engine.add_principal(tx, None, wanted, PrincipalKind.USER, uid)
                else:
                    await self.engine._attach(tx, p, IdentityScheme.UNIX, str(uid))  # pyright: ignore[reportPrivateUsage]
            if p.org_id == tx.org_id and p.kind is PrincipalKind.USER and not p.admin:
                # the server's owner is an admin of its organization (so of the server)
                await tx.set_admin(p.id, True)
                owner = Actor(principal=p, identity_scheme=IdentityScheme.UNIX.value)
                await tx.append_events(
                    [
                        await self.engine._event(  # pyright: ignore[reportPrivateUsage]
                            tx,
                            owner,
                            "grant_admin",
                            reason="the server's owner, at start",
                            after={"principal": p.name, "admin": True},
                        )
                    ]
                )
                p = attrs.evolve(p, admin=True)
            return (await self.engine.principal_infos(tx, [p]))[0]

        return await self._run(go)

    # -------------------------------------------------------------- principals

    async def add_principal(
        self, name: str, kind: PrincipalKind | str = PrincipalKind.AGENT, *, uid: int | None = None
    ) -> PrincipalInfo:
        """Register a principal (a person only), with a unix identity when ``uid`` is given."""
        try:
            pk = PrincipalKind(kind)
        except ValueError:
            raise Invalid(
                f"kind {kind!r} is not user, agent or service",
                next="Use the kind user, agent or service.",
                field="kind",
            ) from None

        if uid is not None:
            check_uid(str(uid))
        binds = uid is not None and not await is_server_admin(self.store, await self._whoami())

        async def go(tx: Tx, a: Actor) -> PrincipalInfo:
            if binds:
                await self.engine.authorize(tx, a, [intent("admin")])
                refuse_uid_binding()
            p = await self.engine.add_principal(tx, a, name, pk, uid)
            return (await self.engine.principal_infos(tx, [p]))[0]

        return await self._run(go)

    async def check_action(self, action: str) -> None:
        """The coarse check a transport makes before any work (before a byte of the request's
        body is read): may this principal take ``action`` (``admin``, ``put_blob``,
        ``import``…) at all? The policy in force decides (``set_policy``: the base policy
        alone); the full request is authorized again inside its transaction. ``server_admin`` is no
        policy action: the caller must administer the server (a person of its first
        organization)."""
        actor = await self._whoami()
        if action == "server_admin":
            await require_server_admin(self.store, actor, "administers organizations")
            return
        if action == "set_policy":  # the base policy's call alone, by the role as stored now
            actor = await self._run(lambda tx, a: self.engine.current(tx, a))
            self.engine.authorize_base(actor, [intent(action)])
            return
        # the policy in force (the organization's stored modules too), as the engine asks
        await self._run(lambda tx, a: self.engine.authorize(tx, a, [intent(action)]))

    async def create_org(self, name: str, *, admin: str, uid: int | None = None) -> OrgCreated:
        """A new organization (a server administrator's call): its first user ``admin``, with
        the unix ``uid`` when given, and a bearer token for them, shown once."""
        actor = await self._whoami()
        return await orgs_create(self.engine, self.store, actor, name, admin, uid)

    async def list_orgs(
        self, *, limit: int | None = None, page: str | None = None
    ) -> Page[OrgInfo]:
        """Every organization of the server, oldest first (a server administrator's call).
        All of them, or ``limit`` from ``page`` (a previous page's ``next_page``) on."""
        size = None if limit is None else self.engine.page_size(limit)
        return await orgs_list(self.store, await self._whoami(), size=size, page=page)

    # ------------------------------------------ the organization's own policy

    async def policy(self) -> OrgPolicy:
        """The organization's own Rego modules, layered on the server's base policy (none:
        the base alone), and who last set them."""
        return await self._run(lambda tx, a: policy_show(tx))

    async def set_policy(
        self, modules: Mapping[str, str], *, reason: str | None = None
    ) -> OrgPolicy:
        """Replace the organization's own Rego modules (name to source), an admin's call.

        They are layered on the base policy (as :meth:`Policy.extended` layers
        modules): rules in package ``skift.authz`` add denials. A module that
        does not compile, a set with nothing in ``skift.authz``, or one that
        breaks a decision is Invalid, and nothing changes. Every server over the
        store applies the change from its next transaction; the change is an
        event with the reason.
        """
        return await self._run(
            lambda tx, a: policy_set(self.engine, tx, a, list(modules.items()), reason)
        )

    async def reset_policy(self, *, reason: str | None = None) -> OrgPolicy:
        """Drop the organization's own modules: the base policy alone decides again."""
        return await self._run(lambda tx, a: policy_reset(self.engine, tx, a, reason))

    async def list_principals(
        self, *, limit: int | None = None, page: str | None = None
    ) -> Page[PrincipalInfo]:
        """The organization's principals, their roles and identities (a person's call), by
        name. All of them, or ``limit`` from ``page`` (a previous page's ``next_page``) on
        (keyset: a principal added meanwhile moves no other)."""
        size = None if limit is None else self.engine.page_size(limit)
        after = read_position("principals", page, (str, UUID))

        async def go(tx: Tx, a: Actor) -> Page[PrincipalInfo]:
            await self.engine.authorize(tx, a, [intent("list_principals")])
            got = await tx.principal_page(after=after, limit=read_limit(size))
            rows, ends, more = cut_page("principals", got, size, lambda p: (p.name, p.id))
            return Page(await self.engine.principal_infos(tx, rows), ends=ends, more=more)

        return await self._run(go)

    async def attach_identity(self, principal: str, scheme: str, value: str) -> PrincipalInfo:
        """Give a principal another way in (unix uid, oidc subject, tailscale node): an
        administrator of the server's call. An admin of another organization invites an OIDC
        identity instead (:meth:`invite_identity`)."""
        kind = scheme.strip().lower()
        if kind == IdentityScheme.OIDC.value:
            value = check_oidc(value)
        binds = kind in ("unix", "oidc", "tailscale") and not (
            await is_server_admin(self.store, await self._whoami())
        )

        async def go(tx: Tx, a: Actor) -> PrincipalInfo:
            if binds:
                await self.engine.authorize(tx, a, [intent("admin")])
                if kind == IdentityScheme.UNIX.value:
                    refuse_uid_binding()
                refuse_oidc_binding()
            p = await self.engine.attach_identity(tx, a, principal, scheme, value)
            return (await self.engine.principal_infos(tx, [p]))[0]

        return await self._run(go)

    async def grant_admin(self, principal: str, *, reason: str) -> PrincipalInfo:
        """Give a person the organization's admin role (an admin's call; an event)."""

        async def go(tx: Tx, a: Actor) -> PrincipalInfo:
            p = await self.engine.grant_admin(tx, a, principal, reason)
            return (await self.engine.principal_infos(tx, [p]))[0]

        return await self._run(go)

    async def revoke_admin(self, principal: str, *, reason: str) -> PrincipalInfo:
        """Take the admin role from a person (an admin's call; an event); the organization's
        last admin stays one."""

        async def go(tx: Tx, a: Actor) -> PrincipalInfo:
            p = await self.engine.revoke_admin(tx, a, principal, reason)
            return (await self.engine.principal_infos(tx, [p]))[0]

        return await self._run(go)

    async def invite_identity(self, principal: str, scheme: str, value: str) -> InviteInfo:
        """Invite an external identity (an OIDC ``issuer|subject``) for a principal of the
        organization (an admin's call): its holder's first sign-in with it, presenting the
        answer's ``code``, binds it. The answer is the same whether or not another
        organization holds the identity (it is then never bound here)."""
        clean = check_oidc(value) if scheme.strip().lower() == IdentityScheme.OIDC.value else value
        holder = await self.store.principal_by_identity(IdentityScheme.OIDC.value, clean)

        async def go(tx: Tx, a: Actor) -> InviteInfo:
            got = await self.engine.invite_identity(tx, a, principal, scheme, clean)
            if holder is not None and holder.org_id == tx.org_id:
                raise Conflict(
                    f"{clean} is {holder.name}'s identity already",
                    next="Nothing to invite: it signs in as them.",
                )
            return got

        return await self._run(go)

    async def invites(self) -> list[InviteInfo]:
        """The organization's pending invitations, oldest first (an admin's call); their
        codes are never shown again."""
        return await self._run(lambda tx, a: self.engine.invites(tx, a))

    async def cancel_invite(self, invite: str) -> InviteInfo:
        """Cancel a pending invitation, by its id or the identity it invites (an admin's
        call; an event): its code binds nothing from now on."""
        return await self._run(lambda tx, a: self.engine.cancel_invite(tx, a, invite))

    async def create_token(self, principal: str) -> TokenInfo:
        """A new bearer token for a principal (a person's own, or an admin's for anyone); its
        secret is in the result and nowhere else."""
        return await self._run(lambda tx, a: self.engine.create_token(tx, a, principal))

    async def revoke_token(self, token_id: str) -> None:
        await self._run(lambda tx, a: self.engine.revoke_token(tx, a, token_id))

    # ------------------------------------------------ board sign-in (skift._signin)

    async def mint_signin_code(self) -> SigninCode:
        """A one-time code that signs the caller in to the web board (ten minutes, one use)."""
        actor = await self._whoami()
        check_may_sign_in(actor.principal)
        code = signin_secret(SigninKind.CODE)
        got = await self.store.signins.insert(
            digest=signin_digest(code),
            kind=SigninKind.CODE,
            principal=actor.principal,
            org=self.org_name,
            ttl=SIGNIN_CODE_TTL,
            identity_id=await self._credential_id(),
        )
        return SigninCode(code=code, principal=actor.principal.name, expires_at=got.expires_at)

    async def _credential_id(self) -> UUID | None:
        """The identity this handle came in through (``authenticate``): what a sign-in code
        it mints, and the session spent from it, live and die by. None in process."""
        if self._credential is None:
            return None
        scheme, lookup, _expires = self._credential

        async def go(tx: Tx, a: Actor) -> UUID | None:
            for ident in await tx.identities_of(a.id):
                live = ident.revoked_at is None
                if live and ident.scheme.value == scheme and ident.value == lookup:
                    return ident.id
            raise Unauthenticated(
                f"that {scheme} credential is unknown or revoked",
                next="Ask an admin of skift for a token.",
                move={"do": "get_token"},
            )

        return await self._run(go)

    async def redeem_signin_code(self, code: str) -> BoardSession:
        """Spend a sign-in code for a board session (a transport's call, like ``authenticate``)."""
        got = await self.store.signins.spend(signin_digest(code), SigninKind.CODE)
        if got is None:
            raise bad_code()
        secret = signin_secret(SigninKind.SESSION)
        session = await self.store.signins.insert(
            digest=signin_digest(secret),
            kind=SigninKind.SESSION,
            principal=got.principal,
            org=got.org,
            ttl=SESSION_TTL,
            identity_id=got.identity_id,  # revoking what minted the code ends the session
        )
        return BoardSession(
            secret=secret,
            principal=got.principal.name,
            principal_kind=got.principal.kind.value,
            org=got.org,
            expires_at=session.expires_at,
            id=ulid_str(session.id) if session.id else "",
        )

    async def signin_code_owner(self, code: str) -> tuple[str, str] | None:
        """Whose a live sign-in code is (principal name, organization), without spending it;
        None for a code that would not sign anyone in. The board's sign-in page asks, so a
        link that would switch a browser to someone else's session takes a click."""
        got = await self.store.signins.live(signin_digest(code), SigninKind.CODE)
        return None if got is None else (got.principal.name, got.org)

    async def session(self, secret: str) -> LocalSkift:
        """A handle acting as the person a live board session belongs to."""
        got = await self.store.signins.live(signin_digest(secret), SigninKind.SESSION)
        if got is None:
            raise bad_session()
        return LocalSkift(
            self.store,
            principal=PrincipalSpec(got.principal.name, got.principal.kind),
            org=got.org,
            limits=self.engine.limits,
            owns_store=False,
            policy=self.base_policy,
            actor=Actor(principal=got.principal, identity_scheme="board"),
        )

    async def end_session(self, secret: str) -> None:
        """Sign a board session out (ending one that already ended is not an error)."""
        await self.store.signins.spend(signin_digest(secret), SigninKind.SESSION)

    async def _session_owner(self, principal: str | None) -> Principal:
        """The caller, or (an admin's call) the principal named ``principal``."""
        actor = await self._whoami()
        if principal is None or principal.strip() == actor.principal.name:
            return actor.principal

        async def go(tx: Tx, a: Actor) -> Principal:
            await self.engine.authorize(tx, a, [intent("admin")])
            found = await tx.principal_by_name(principal.strip())
            if found is None:
                raise NotFound(
                    f"no principal {principal!r}",
                    next="The list of principals shows the organization's principals.",
                    move={"do": "list_principals"},
                )
            return found

        return await self._run(go)

    async def board_sessions(self, principal: str | None = None) -> list[SessionInfo]:
        """The live board sessions of the caller (or, an admin's call, of ``principal``),
        oldest first; never their secrets."""
        owner = await self._session_owner(principal)
        records = await self.store.signins.sessions(owner.id)
        vias: dict[UUID, str] = {}
        ids = {r.identity_id for r in records if r.identity_id is not None}
        if ids:

            async def go(tx: Tx, a: Actor) -> None:
                for ident in await tx.identities_of(owner.id):
                    if ident.id in ids:
                        vias[ident.id] = ident.scheme.value

            await self._run(go)
        return [
            SessionInfo(
                id=ulid_str(r.id) if r.id else "",
                principal=owner.name,
                created_at=r.created_at,
                expires_at=r.expires_at,
                via=vias.get(r.identity_id, "?") if r.identity_id else "local",
            )
            for r in records
        ]

    async def end_board_sessions(self, principal: str | None = None) -> int:
        """End every board session (and unspent sign-in code) of the caller, or, an admin's
        call, of ``principal``; returns how many sessions ended."""
        owner = await self._session_owner(principal)
        return await self.store.signins.end_all(owner.id)


def open(
    url: str,
    *,
    principal: PrincipalSpec | None = None,
    org: str = "default",
    limits: Limits | None = None,
    policy: Policy | None = None,
    blobs: str | os.PathLike[str] | None = None,
) -> LocalSkift:
    """Open skift over a store: ``memory:`` or ``postgresql://…``.

    Use it as an async context manager. ``principal`` names who this process
    acts as (default: a user named after the OS user). ``blobs`` is the
    directory blob bytes are kept in (also ``?blobs=DIR`` in the URL); the
    in-memory store keeps them in memory without one, PostgreSQL in
    ``skift.default_blob_dir()``.
    """
    lim = limits or DEFAULT_LIMITS
    scheme = url.split(":", 1)[0].lower()
    if scheme == "memory":
        where = blobs or dict(parse_qsl(urlsplit(url).query)).get("blobs")
        store = MemoryStore(blobs=FileBlobStore(where) if where else None)
        return LocalSkift(store, principal=principal, org=org, limits=lim, policy=policy)
    for ep in entry_points(group="skift.stores"):
        if ep.name == scheme:
            factory = ep.load()
            extra: dict[str, Any] = {"blobs": blobs} if blobs is not None else {}
            store: Store = factory(url, limits=lim, **extra)
            return LocalSkift(store, principal=principal, org=org, limits=lim, policy=policy)
    raise Invalid(
        f"no store for {url!r}",
        next="Use memory: or postgresql://…; PostgreSQL needs the skift-store-pg package installed.",
        field="url",
    )
