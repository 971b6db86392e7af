"""Who is calling: decided by the transport, never by a request field.

- On the unix socket, the peer's uid from ``SO_PEERCRED`` (the kernel's word
  for who connected), authenticated as the ``unix`` identity with that uid.
- Over TCP, the bearer token in the ``authorization`` metadata
  (``Bearer <token>``), authenticated as a ``token`` identity (skift stores
  only its SHA-256 digest); or, when the server was given an OIDC issuer, a
  JWT from that issuer, verified (``_oidc``) and authenticated as the
  ``oidc`` identity ``iss|sub`` until its expiry. An OIDC identity nobody holds
  yet is bound at this sign-in to the principal of the invitation whose code
  the ``x-skift-invite`` metadata presents (docs/identity.md).

Either way the server's base :class:`skift.LocalSkift` derives a handle on
the same store acting as the principal holding that identity
(``authenticate``); an unknown or revoked identity is UNAUTHENTICATED, with a
``next`` naming the command that registers it. Calls carrying the same
credential at the same moment share one lookup (:meth:`Authenticator._once`):
a burst of a thousand calls from one token costs the pool one query, not a
thousand, and a lookup that starts after a revocation still sees it. The
reads agents call most (``_service.REMEMBERED``) start instead from the
principal a unix or token identity named when it was last looked up, and the
call's first transaction reads the identity again in its first round trip
(``Tx.expect_identity``): revoked, moved to another principal or its role
changed, the call is refused before any row is handed back or anything
committed, and authenticated again from the database.

Test hooks (``skift serve --test-hooks``, never in production): the
``x-skift-act-as: KIND:NAME`` metadata (and ``x-skift-org``) acts as any
principal, and ``x-skift-clock-offset: SECONDS`` moves the store's clock, so
the behaviour suite can run unchanged over gRPC. Without the flag those
headers are refused.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime, timedelta
from typing import Any, Final

import grpclib.server

import skift

from ._oidc import OidcVerifier, looks_like_jwt

INVITE: Final = "x-skift-invite"
"""An invitation's code, presented with an OIDC token at the identity's first sign-in."""
ACT_AS: Final = "x-skift-act-as"
ORG: Final = "x-skift-org"
CLOCK_OFFSET: Final = "x-skift-clock-offset"
_TEST_HEADERS: Final = (ACT_AS, ORG, CLOCK_OFFSET)

_UCRED: Final = struct.Struct("3i")  # struct ucred: pid, uid, gid

_KNOWN_AT_MOST: Final = 4096
"""Identities an Authenticator keeps as seen (forgotten all at once past it)."""


def peer_uid(stream: grpclib.server.Stream[Any, Any]) -> int | None:
    """The uid of the process at the other end of a unix socket; None on TCP."""
    return uid_of(stream.peer._transport)  # pyright: ignore[reportPrivateUsage]


def uid_of(transport: Any) -> int | None:
    """:func:`peer_uid` of a connection's transport."""
    sock: Any = transport.get_extra_info("socket")
    if sock is None or sock.family != socket.AF_UNIX:
        return None
    raw: bytes = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)
    _pid, uid, _gid = _UCRED.unpack(raw)
    return int(uid)


def bearer(md: Mapping[str, Any] | None) -> str | None:
    """The token of an ``authorization: Bearer <token>`` header, if any."""
    value = md.get("authorization") if md is not None else None
    if not isinstance(value, str):
        return None
    scheme, _, token = value.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


class Authenticator:
    """Turns a call's transport facts into the caller's handle on the store."""

    def __init__(
        self,
        base: skift.LocalSkift,
        *,
        test_hooks: bool = False,
        oidc: OidcVerifier | None = None,
    ) -> None:
        self.base = base
        self.test_hooks = test_hooks
        self.oidc = oidc
        self._impersonated: dict[tuple[str, str, str], skift.LocalSkift] = {}
        self._inflight: dict[
            tuple[str, str, datetime | None, str | None], asyncio.Future[skift.LocalSkift]
        ] = {}
        # unix and token identities looked up before: a call that may start from what
        # the base remembers of them asks it directly (no lookup, no task)
        self._known: set[tuple[str, str]] = set()

    async def _once(
        self,
        scheme: str,
        value: str,
        expires_at: datetime | None = None,
        invite: str | None = None,
        *,
        remembered: bool = False,
    ) -> skift.LocalSkift:
        """``base.authenticate``, shared by every call that asks for the same identity
        while a lookup of it is in flight. ``remembered``: an identity looked up before
        is taken from the base's memory, to be confirmed by the call's first transaction
        (``skift.LocalSkift.authenticate``)."""
        if remembered and (scheme, value) in self._known:
            try:
                return await self.base.authenticate(scheme, value, remembered=True)
            except skift.Unauthenticated:
                self._known.discard((scheme, value))
                raise
        key = (scheme, value, expires_at, invite)
        found = self._inflight.get(key)
        if found is not None:
            return await asyncio.shield(found)
        lookup: Callable[[], Awaitable[skift.LocalSkift]] = lambda: self.base.authenticate(  # noqa: E731
            scheme, value, expires_at=expires_at, invite=invite
        )
        task = asyncio.ensure_future(lookup())
        self._inflight[key] = task
        task.add_done_callback(lambda _: self._inflight.pop(key, None))
        handle = await asyncio.shield(task)
        if expires_at is None and scheme in ("unix", "token"):
            if len(self._known) >= _KNOWN_AT_MOST:
                self._known.clear()
            self._known.add((scheme, value))
        return handle

    def remembered(self, md: Mapping[str, Any] | None, uid: int | None) -> tuple[str, str] | None:
        """The unix or token identity a call's transport facts present, when it was looked up
        before: the one :meth:`caller_of` with ``remembered`` would start from without a
        lookup. None (test metadata, an OIDC token, no credentials, an identity not seen
        yet): :meth:`caller_of` decides."""
        if md is not None and any(key in md for key in _TEST_HEADERS):
            return None
        if uid is not None:
            key = ("unix", str(uid))
        else:
            token = bearer(md)
            if token is None or (self.oidc is not None and looks_like_jwt(token)):
                return None
            key = ("token", token)
        return key if key in self._known else None

    async def caller(
        self, stream: grpclib.server.Stream[Any, Any], *, remembered: bool = False
    ) -> skift.LocalSkift:
        """The caller's handle. ``remembered`` (a call that touches the store only through
        transactions): a unix or token identity seen before is not looked up now but
        confirmed with the call's first statement (its handle's ``identity_stale`` says
        when that refused it, and the call is authenticated again)."""
        return await self.caller_of(stream.metadata, peer_uid(stream), remembered=remembered)

    async def caller_of(
        self, md: Mapping[str, Any] | None, uid: int | None, *, remembered: bool = False
    ) -> skift.LocalSkift:
        """:meth:`caller` from a call's metadata (grpclib's, or the unary fast path's:
        ``_fast``) and the unix peer's uid (None on TCP)."""
        headers: dict[str, str] = {}
        if md is not None:
            for key in _TEST_HEADERS:
                value = md.get(key)
                if isinstance(value, str):
                    headers[key] = value
        if headers:
            if not self.test_hooks:
                raise skift.Unauthenticated(
                    f"{', '.join(sorted(headers))}: test-only metadata this server does not honour",
                    next="Leave those headers out; the transport identifies the caller.",
                )
            return self._test_caller(headers)
        if uid is not None:
            return await self._once("unix", str(uid), remembered=remembered)
        token = bearer(md)
        if token is not None:
            if self.oidc is not None and looks_like_jwt(token):
                found = await self.oidc.verify(token)
                code = md.get(INVITE) if md is not None else None
                invite = code.strip() or None if isinstance(code, str) else None
                return await self._once("oidc", found.value, found.expires_at, invite)
            return await self._once("token", token, remembered=remembered)
        raise skift.Unauthenticated(
            "no credentials: over TCP every call carries a bearer token",
            next="Send the metadata 'authorization: Bearer <token>'; a token comes from "
            "CreateToken, which an admin of skift calls on the server's socket.",
            move={"do": "get_token"},
        )

    def _test_caller(self, headers: dict[str, str]) -> skift.LocalSkift:
        offset = headers.get(CLOCK_OFFSET)
        if offset is not None:
            try:
                self.base.store.set_clock_offset(timedelta(seconds=float(offset)))
            except ValueError:
                raise skift.Invalid(f"{CLOCK_OFFSET} {offset!r} is not a number") from None
        who = headers.get(ACT_AS)
        if who is None:
            return self.base
        kind, _, name = who.partition(":")
        try:
            spec = skift.PrincipalSpec(name, skift.PrincipalKind(kind))
        except ValueError:
            raise skift.Invalid(
                f"{ACT_AS} {who!r} is not KIND:NAME", next="KIND is user, agent or service."
            ) from None
        org = headers.get(ORG, self.base.org_name)
        key = (spec.kind.value, spec.name, org)
        handle = self._impersonated.get(key)
        if handle is None:
            handle = self._impersonated[key] = self.base.acting_as(spec, org=org)
        return handle
