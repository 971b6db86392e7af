"""One caller's handle on a store: who it acts as, and running the engine in a transaction.

Every method of the API runs through :meth:`Session._run`, which retries a
transaction that lost a race (``TransientError``) a few times, jittered; a call
that waits re-checks its caller's identity when it wakes (:meth:`Session._recheck`).
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import random
import weakref
from collections.abc import AsyncGenerator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Any, Self, TypeVar
from uuid import UUID

from ._engine import Actor, Engine
from ._errors import Conflict, LimitExceeded, Refused, Unauthenticated
from ._limits import DEFAULT_LIMITS, Limits
from ._models import Principal
from ._policy import Policy
from ._principal_spec import PrincipalSpec, User
from ._store import WAITING, Store, TransientError, Tx

T = TypeVar("T")

POLL_EVERY = 1.0
"""Seconds a waiting call (ClaimNext, WatchEvents) waits between reads, on average, when
nothing wakes it (:meth:`LongPoll.wait`)."""
POLL_JITTER = (0.5, 1.5)
"""Each such wait is ``POLL_EVERY`` times a factor drawn from this range."""

_LONG_POLLS: weakref.WeakKeyDictionary[Store, dict[UUID, int]] = weakref.WeakKeyDictionary()
"""Long polls waiting, by principal, per store (so per server process)."""


class Session:
    """The store, the engine and the acting principal that the API's methods share."""

    def __init__(
        self,
        store: Store,
        *,
        principal: PrincipalSpec | None = None,
        org: str = "default",
        limits: Limits = DEFAULT_LIMITS,
        owns_store: bool = True,
        identity_scheme: str = "local",
        policy: Policy | None = None,
        actor: Actor | None = None,
    ) -> None:
        self.store = store
        self.spec = principal or User(getpass.getuser())
        self.org_name = org
        self.base_policy = policy or Policy.default()
        self.engine = Engine(limits, org=org, policy=self.base_policy)
        self.identity_scheme = identity_scheme
        self._owns = owns_store
        self._actor: Actor | None = actor
        self._org_id: UUID | None = actor.principal.org_id if actor else None
        # set by authenticate: the identity to re-check when a long poll wakes
        self._credential: tuple[str, str, datetime | None] | None = None
        # organization names by id, for authenticate (a transport's base handle asks once
        # per call); an organization's name never changes and its id is never reused
        self._org_names: dict[UUID, str] = {}
        # a transport's base handle: the principal each identity named when last looked up
        # (authenticate with remembered=True starts from it and has it confirmed)
        self._identities: dict[tuple[str, str], Principal] = {}
        # set by authenticate(remembered=True): the identity and the principal it named,
        # confirmed by this handle's first transaction (see _confirm)
        self._remembered: tuple[str, str, Principal] | None = None
        self._remembered_by: dict[tuple[str, str], Principal] | None = None  # the base's memory
        self.identity_stale = False
        # set when a waiting call wakes: its next transaction re-checks the identity
        # (_rechecked) with its first statement
        self._recheck_due = False
        """The remembered identity no longer named its principal as it was (revoked, moved
        or its role changed): the call was refused, and the transport looks it up again."""

    async def __aenter__(self) -> Self:
        await self._whoami()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        if self._owns:
            await self.store.close()

    def _recheck(self) -> None:
        """A waiting call woke: refuse it now if its credential expired meanwhile, and have
        its next transaction (the read it makes before it answers) confirm with its first
        statement that the identity still names its principal (:meth:`_rechecked`): no
        round trip of its own (a principal's 32 waiting calls re-read at once otherwise
        cost twice the statements)."""
        if self._credential is None or self._actor is None:
            return
        scheme, _, expires_at = self._credential
        if expires_at is not None and expires_at <= datetime.now(UTC):
            raise Unauthenticated(
                f"the {scheme} credential of this call expired at {expires_at.isoformat()} "
                "while it waited",
                next="Get a fresh token from your identity provider and call again.",
            )
        self._recheck_due = True

    def _rechecked(self, principal: Principal | None) -> None:
        """Judge a woken call's identity by who holds it now (``Tx.expect_identity``)."""
        assert self._credential is not None
        assert self._actor is not None
        if principal is None or principal.id != self._actor.id:
            raise Unauthenticated(
                f"the {self._credential[0]} credential of this call was revoked while it waited",
                next="Ask an admin of skift for a new credential.",
                move={"do": "get_token"},
            )
        self._recheck_due = False

    def _confirm(self, found: Principal | None) -> None:
        """Judge a remembered identity by who holds it now: the same principal, role and
        all, or the call is refused before anything is answered (and marked stale)."""
        remembered = self._remembered
        if remembered is None:
            return
        if found != remembered[2]:
            self.identity_stale = True
            if self._remembered_by is not None:  # forgotten: the next call looks it up
                self._remembered_by.pop((remembered[0], remembered[1]), None)
            raise Unauthenticated(
                f"the {remembered[0]} credential of this call no longer names the principal "
                "it named",
                next="Ask an admin of skift for a new credential.",
                move={"do": "get_token"},
            )
        self._remembered = None

    async def confirm_identity(self) -> None:
        """Confirm a remembered identity now, in a statement of its own (before reading a
        large request: issue 29's rule); nothing to do for any other handle."""
        if self._remembered is not None:
            scheme, lookup, _ = self._remembered
            self._confirm(await self.store.principal_by_identity(scheme, lookup))

    async def _whoami(self) -> Actor:
        if self._actor is None:
            org = await self.store.ensure_org(self.org_name)
            p = await self.store.ensure_principal(org.id, self.spec.name, self.spec.kind)
            if p.kind is not self.spec.kind:
                raise Conflict(
                    f"{p.name!r} is a {p.kind.value} principal, not a {self.spec.kind.value}",
                    next=f"Open as skift.{p.kind.value.title()}({p.name!r}), or choose another name.",
                )
            self._org_id = org.id
            self._actor = Actor(principal=p, identity_scheme=self.identity_scheme)
        return self._actor

    @contextlib.asynccontextmanager
    async def _long_poll(self, waits: bool) -> AsyncGenerator[LongPoll]:
        """Around a call that may wait (ClaimNext, WatchEvents; ``waits``: it was given a
        wait): see :class:`LongPoll`."""
        poll = LongPoll(self)
        if waits:
            await poll.start()
        try:
            yield poll
        finally:
            poll.done()

    async def _run(
        self,
        fn: Callable[[Tx, Actor], Awaitable[T]],
        *,
        graph_lock: bool = False,
        attempts: int = 5,
    ) -> T:
        actor = await self._whoami()
        assert self._org_id is not None
        for attempt in range(attempts):
            try:
                async with self.store.transaction(self._org_id, graph_lock=graph_lock) as tx:
                    if self._remembered is not None:
                        scheme, lookup, _ = self._remembered
                        await tx.expect_identity(scheme, lookup, self._confirm)
                    elif self._recheck_due and self._credential is not None:
                        scheme, lookup, _ = self._credential
                        await tx.expect_identity(scheme, lookup, self._rechecked)
                    self.engine.reading_as(tx, actor)  # reads follow this principal's policy
                    return await fn(tx, actor)
            except Refused:
                await self._record_trips(actor)
                raise
            except TransientError as exc:
                if attempt == attempts - 1:
                    raise Conflict(
                        f"the request lost a race {attempts} times in a row ({exc})",
                        next="Retry it; a patch is safe to retry with the same request id.",
                    ) from exc
                # jittered, so the losers of one race do not collide again in lockstep
                await asyncio.sleep(random.uniform(0.5, 1.5) * 0.01 * min(attempt + 1, 10))
        raise AssertionError("unreachable")

    async def _record_trips(self, actor: Actor) -> None:
        """An event for each trip of the organization's policy budget (skift._policy): the
        request that tripped it was refused, so the event has a transaction of its own."""
        trips = self.engine.take_trips()
        if not trips:
            return
        assert self._org_id is not None
        async with self.store.transaction(self._org_id) as tx:
            await tx.append_events(
                [
                    await self.engine._event(  # pyright: ignore[reportPrivateUsage]
                        tx, actor, "policy_over_budget", reason=why
                    )
                    for why in trips
                ]
            )


class LongPoll:
    """One call that may wait. Given a wait (:meth:`start`), it counts against its
    principal's ``long_polls_per_principal`` from its start (past it
    :class:`LimitExceeded`, retry after a second, before any work) and is marked
    :data:`~skift._store.WAITING`, so the store serves all its reads from the
    connections it gives long polls and keeps the rest for ordinary calls."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._who: UUID | None = None
        self._token: Any = None

    async def start(self) -> None:
        s = self._session
        actor = await s._whoami()  # pyright: ignore[reportPrivateUsage]
        who = actor.principal.id
        counts = _LONG_POLLS.setdefault(s.store, {})
        cap = s.engine.limits.long_polls_per_principal
        if counts.get(who, 0) >= cap:
            raise _past_cap(actor.principal.name, cap)
        counts[who] = counts.get(who, 0) + 1
        self._who = who
        self._token = WAITING.set(True)

    async def wait(self, org_id: UUID, remaining: float) -> None:
        """Wait for a change in the organization, at most ``remaining`` seconds and at most
        :data:`POLL_EVERY` (jittered), then re-check the caller's identity
        (:meth:`Session._recheck`: its expiry now, its holder with the first statement of the
        read the caller makes next, before it answers). The store's wake-up is the fast
        path; this poll is the correctness path (a wake-up lost, a pooler without LISTEN).
        Each wait is drawn afresh between half and one and a half times ``POLL_EVERY``, so
        waiters that started together (a principal's 32 long polls at once) do not all
        re-read in the same instant, once a second, ahead of every other caller."""
        s = self._session
        low, high = POLL_JITTER
        seconds = min(remaining, POLL_EVERY * random.uniform(low, high))
        await s.store.wait_for_change(org_id, timedelta(seconds=seconds))
        s._recheck()  # pyright: ignore[reportPrivateUsage]

    def done(self) -> None:
        """The call returned: it no longer counts."""
        if self._token is not None:
            WAITING.reset(self._token)
            self._token = None
        who, self._who = self._who, None
        if who is None:
            return
        counts = _LONG_POLLS.get(self._session.store)
        if counts is None:
            return
        left = counts.get(who, 1) - 1
        if left > 0:
            counts[who] = left
        else:
            counts.pop(who, None)


def _past_cap(name: str, cap: int) -> LimitExceeded:
    """What a long poll past its principal's ``long_polls_per_principal`` is refused with."""
    return LimitExceeded(
        f"{name} already has {cap} calls waiting (ClaimNext or "
        "WatchEvents with a wait); a server takes at most that many per principal",
        next="Let one of them return, or call without a wait; retry in a second.",
        limit="long_polls_per_principal",
        value=cap,
        retry_after=1,
    )


_PAST_CAP: dict[tuple[str, int], LimitExceeded] = {}
_PAST_CAP_AT_MOST = 1024


def refusal_past_cap(
    store: Store, limits: Limits, principal: Principal, wait: timedelta | None
) -> LimitExceeded | None:
    """Whether a call of ``principal`` that waits ``wait`` (ClaimNext, WatchEvents) would be
    refused now by :meth:`LongPoll.start`, and with what: the same :class:`LimitExceeded`
    object for the same principal and cap each time, never raised here (a flood of refusals
    makes no exception object each). None: it would not be (or it does not wait)."""
    if not wait:  # the API's methods wait only when given a wait
        return None
    counts = _LONG_POLLS.get(store)
    cap = limits.long_polls_per_principal
    if counts is None or counts.get(principal.id, 0) < cap:
        return None
    key = (principal.name, cap)
    found = _PAST_CAP.get(key)
    if found is None:
        if len(_PAST_CAP) >= _PAST_CAP_AT_MOST:
            _PAST_CAP.clear()
        found = _PAST_CAP[key] = _past_cap(principal.name, cap)
    return found


def no_delegation(on_behalf_of: str | None) -> None:
    if on_behalf_of:
        raise Refused(
            "acting on behalf of another principal is not supported yet",
            next="Act as yourself: leave on_behalf_of unset. Delegation needs a server-known grant, planned after v1.",
        )
