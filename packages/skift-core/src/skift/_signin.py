"""Board sign-in: one-time codes minted for the caller, redeemed once for a session.

A person at a terminal asks for a sign-in code (``skift board``); the web
board exchanges it, once, for a session, and every later request of that
browser carries the session's secret in a cookie. Both are credentials kept
the way bearer tokens are (``_secrets.token_digest``): the secret is shown
once and the store keeps only its ``sha256:`` digest, with an expiry.

- A code lives ten minutes (:data:`SIGNIN_CODE_TTL`) and is spent by its
  first redemption; a second redemption, an expired code and an unknown one
  are refused alike (nothing tells a guesser which).
- A session lives :data:`SESSION_TTL` and ends at sign-out.
- A code remembers the identity it was minted through (a bearer token, a uid,
  an OIDC subject; none in process) and its session inherits it: once that
  identity is revoked, the code and every session it opened stop working
  (checked by the store in the statement that reads them).
- A person lists their live sessions and ends them all (``skift board
  sessions``, ``skift board sign-out --all``); an admin does it for another.
- Only a person (a user principal) gets a code: the board is where people
  answer gates; agents and services act through the API.

Codes and sessions are shared by every server over one database (a code
minted through one server is redeemed by another), so they live in the store
(:class:`SigninStore`, ``Store.signins``), outside any organization's
transaction: redeeming a code is how a browser learns whose it is.
"""

from __future__ import annotations

import asyncio
import enum
import secrets
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Protocol
from uuid import UUID

import attrs

from ._errors import Refused, Unauthenticated
from ._models import Principal, PrincipalKind
from ._refs import new_id
from ._secrets import token_digest

SIGNIN_CODE_TTL = timedelta(minutes=10)
"""How long a sign-in code may wait to be redeemed."""

SESSION_TTL = timedelta(hours=12)
"""How long a board session lasts from sign-in (a new ``skift board`` starts another)."""

CODE_PREFIX = "skc_"
SESSION_PREFIX = "sks_"


class SigninKind(enum.StrEnum):
    CODE = "code"
    SESSION = "session"


@attrs.frozen(kw_only=True)
class SigninRecord:
    """A stored code or session: its secret's digest, whose it is, and until when."""

    digest: str
    kind: SigninKind
    principal: Principal
    org: str
    created_at: datetime
    expires_at: datetime
    #: names a session to its person without its secret (None: kept before it had one)
    id: UUID | None = None
    #: the identity the code was minted through, which the session inherits (None: in process)
    identity_id: UUID | None = None


class SigninStore(Protocol):
    """Where codes and sessions are kept (``Store.signins``); no organization scopes it."""

    async def insert(
        self,
        *,
        digest: str,
        kind: SigninKind,
        principal: Principal,
        org: str,
        ttl: timedelta,
        identity_id: UUID | None = None,
    ) -> SigninRecord:
        """Keep a new credential, expiring ``ttl`` from the store's clock, opened through
        ``identity_id`` (None: in process).

        A store may forget credentials that expired long ago while it does so.
        """
        ...

    async def spend(self, digest: str, kind: SigninKind) -> SigninRecord | None:
        """Spend a live credential (unspent, not expired by the store's clock, its identity
        not revoked) and return it; None when there is none. Of two concurrent spends one
        wins."""
        ...

    async def live(self, digest: str, kind: SigninKind) -> SigninRecord | None:
        """The live credential with this digest (unspent, not expired, its identity not
        revoked); else None."""
        ...

    async def sessions(self, principal_id: UUID) -> list[SigninRecord]:
        """The principal's live sessions, oldest first."""
        ...

    async def end_all(self, principal_id: UUID) -> int:
        """Spend every live session and code of the principal; how many sessions ended."""
        ...


@attrs.frozen(kw_only=True)
class SigninCode:
    """A new sign-in code. ``code`` is the secret: shown here once, stored only as a digest.

    ``url``: the link that signs in with it, when the code came through a server
    that serves the board (``skift serve --http``); empty otherwise.
    """

    code: str
    principal: str
    expires_at: datetime
    url: str = ""


@attrs.frozen(kw_only=True)
class BoardSession:
    """A signed-in browser: ``secret`` goes in its cookie; ``principal`` is who it acts as."""

    secret: str
    principal: str
    principal_kind: str
    org: str
    expires_at: datetime
    id: str = ""


@attrs.frozen(kw_only=True)
class SessionInfo:
    """A live board session as its person (or an admin) sees it: never its secret.

    ``via``: the identity scheme of the credential that minted its sign-in code
    (``token``, ``unix``, ``oidc``; ``local`` in process); revoking that
    credential ends the session.
    """

    id: str
    principal: str
    created_at: datetime
    expires_at: datetime
    via: str


def digest_of(secret: str) -> str:
    return token_digest(secret.strip())


def new_secret(kind: SigninKind) -> str:
    return (CODE_PREFIX if kind is SigninKind.CODE else SESSION_PREFIX) + secrets.token_urlsafe(32)


def check_may_sign_in(principal: Principal) -> None:
    """The board is for people: a sign-in code is minted for a user principal only."""
    if principal.kind is not PrincipalKind.USER:
        raise Refused(
            f"{principal.name!r} is {principal.kind.value} principal: the board is for people",
            next="Agents and services act through the API; ask for a sign-in link as a person "
            "(a user principal).",
        )


def bad_code() -> Unauthenticated:
    return Unauthenticated(
        "that sign-in link is unknown, already used or expired (a link works once, "
        f"for {int(SIGNIN_CODE_TTL.total_seconds() // 60)} minutes)",
        next="Ask for a new sign-in link.",
        move={"do": "board_link"},
    )


def bad_session() -> Unauthenticated:
    return Unauthenticated(
        "not signed in (the session ended, expired or never existed)",
        next="Ask for a sign-in link and open it.",
        move={"do": "board_link"},
    )


def _always(_identity: UUID) -> bool:
    return True


class MemorySignins:
    """:class:`SigninStore` in this process's memory (the in-memory store's)."""

    def __init__(
        self, now: Callable[[], datetime], identity_live: Callable[[UUID], bool] | None = None
    ) -> None:
        self._now = now
        self._identity_live: Callable[[UUID], bool] = identity_live or _always
        self._rows: dict[str, tuple[SigninRecord, bool]] = {}
        self._lock = asyncio.Lock()

    async def insert(
        self,
        *,
        digest: str,
        kind: SigninKind,
        principal: Principal,
        org: str,
        ttl: timedelta,
        identity_id: UUID | None = None,
    ) -> SigninRecord:
        async with self._lock:
            now = self._now()
            for key, (old, _spent) in list(self._rows.items()):
                if old.expires_at < now - timedelta(days=1):
                    del self._rows[key]
            record = SigninRecord(
                digest=digest,
                kind=kind,
                principal=principal,
                org=org,
                created_at=now,
                expires_at=now + ttl,
                id=new_id(),
                identity_id=identity_id,
            )
            self._rows[digest] = (record, False)
            return record

    def _live(self, digest: str, kind: SigninKind) -> SigninRecord | None:
        row = self._rows.get(digest)
        if row is None:
            return None
        record, spent = row
        if spent or record.kind is not kind or record.expires_at <= self._now():
            return None
        if record.identity_id is not None and not self._identity_live(record.identity_id):
            return None
        return record

    async def spend(self, digest: str, kind: SigninKind) -> SigninRecord | None:
        async with self._lock:
            record = self._live(digest, kind)
            if record is not None:
                self._rows[digest] = (record, True)
            return record

    async def live(self, digest: str, kind: SigninKind) -> SigninRecord | None:
        return self._live(digest, kind)

    async def sessions(self, principal_id: UUID) -> list[SigninRecord]:
        rows = [
            r
            for digest, (r, _spent) in self._rows.items()
            if r.principal.id == principal_id and self._live(digest, SigninKind.SESSION)
        ]
        return sorted(rows, key=lambda r: (r.created_at, r.digest))

    async def end_all(self, principal_id: UUID) -> int:
        async with self._lock:
            ended = 0
            for digest, (r, _spent) in list(self._rows.items()):
                if r.principal.id == principal_id and self._live(digest, r.kind):
                    self._rows[digest] = (r, True)
                    ended += r.kind is SigninKind.SESSION
            return ended
