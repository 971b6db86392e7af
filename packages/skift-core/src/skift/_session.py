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
from collections.abc import AsyncGenerator, Awaitable, Callable, Hashable
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

_GROUPS: weakref.WeakKeyDictionary[Store, dict[Hashable, _Group]] = weakref.WeakKeyDictionary()
"""Waiting calls that ask the same read, per store (:meth:`LongPoll.read`)."""


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

    def _share_key(self) -> Hashable:
        """What calls must have in common to share a read (:meth:`LongPoll.read`): the
        organization, the principal as this handle knows it (role and all), the identity
        its caller presented, the limits and the policy its engine reads with."""
        cred = self._credential[:2] if self._credential is not None else None
        return (self._org_id, self._actor, cred, self.engine.limits, id(self.base_policy))

    def _checks(self) -> Hashable:
        """The identity check this handle's next transaction makes (:meth:`_run`)."""
        return (self._remembered, self._recheck_due)

    def _share_checks(self, members: list[Session]) -> None:
        """Handles that shared this one's run (the same :meth:`_checks` before it) take
        its identity check's outcome: confirmed, or refused and stale."""
        for m in members:
            if m is not self:
                m._remembered, m._recheck_due = self._remembered, self._recheck_due
                m.identity_stale = m.identity_stale or self.identity_stale

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
    connections it gives long polls and keeps the rest for ordinary calls.

    Waiting calls that ask the same read (:meth:`read`, :meth:`wait` given ``ask``: the
    same principal through the same identity, the same arguments and cursor) share it:
    they wake together and one read answers every one of them that asked before it
    started, so a principal's 32 identical waiting calls cost one read a wake, not 32."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._who: UUID | None = None
        self._token: Any = None
        self._group: _Group | None = None

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

    async def read(self, ask: Hashable, fn: Callable[[Tx, Actor], Awaitable[T]]) -> T:
        """``fn`` run as :meth:`Session._run` would run it for this call. A call that waits
        shares the run with the waiting calls asking the same read (``ask``: the
        operation and every argument ``fn`` reads, the cursor included) as the same
        principal through the same identity, with the same identity check pending: each
        gets the answer (or the error) of a run that started after it asked, and the
        identity check's outcome (:meth:`Session._share_checks`). At most one such run is in
        flight for one ``ask``; calls asking meanwhile share the next."""
        s = self._session
        if self._who is None:  # it does not wait: a read of its own
            return await s._run(fn)  # pyright: ignore[reportPrivateUsage]
        group = self._join(ask)
        try:
            checks = s._checks()  # pyright: ignore[reportPrivateUsage]
            run = group.pending.get(checks)
            if run is None:
                run = group.pending[checks] = _Run()
                run.task = asyncio.get_running_loop().create_task(_lead(group, checks, run, s, fn))
            run.members.append(s)
            return await asyncio.shield(run.answer)
        finally:
            self._leave()

    async def wait(self, org_id: UUID, remaining: float, ask: Hashable | None = None) -> None:
        """Wait for a change in the organization, at most ``remaining`` seconds and at most
        :data:`POLL_EVERY` (jittered), then re-check the caller's identity
        (:meth:`Session._recheck`: its expiry now, its holder with the first statement of the
        read the caller makes next, before it answers). The store's wake-up is the fast
        path; this poll is the correctness path (a wake-up lost, a pooler without LISTEN).
        Each wait is drawn afresh between half and one and a half times ``POLL_EVERY``, so
        waiters that started together do not all re-read in the same instant, once a
        second, ahead of every other caller. Given ``ask`` (the read it makes next,
        :meth:`read`), the call waits with the calls asking the same read: one wait drawn
        for them all (or its own ``remaining``, if that is sooner), so they read again
        together, once."""
        s = self._session
        low, high = POLL_JITTER
        seconds = POLL_EVERY * random.uniform(low, high)
        if ask is None or self._who is None:
            await s.store.wait_for_change(org_id, timedelta(seconds=min(remaining, seconds)))
        else:
            group = self._join(ask)
            wake = group.wake
            if wake is None or wake.done():
                wake = group.wake = asyncio.get_running_loop().create_future()
                group.waker = asyncio.get_running_loop().create_task(
                    _wake(s.store, org_id, seconds, wake)
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(wake), remaining)
        s._recheck()  # pyright: ignore[reportPrivateUsage]

    def _join(self, ask: Hashable) -> _Group:
        """The group of the calls asking ``ask`` as this one would, joined once."""
        s = self._session
        key = (s._share_key(), ask)  # pyright: ignore[reportPrivateUsage]
        group = self._group
        if group is not None and group.key == key:
            return group
        self._leave()
        groups = _GROUPS.setdefault(s.store, {})
        group = groups.get(key)
        if group is None:
            group = groups[key] = _Group(key)
        group.users += 1
        self._group = group
        return group

    def _leave(self) -> None:
        group, self._group = self._group, None
        if group is None:
            return
        group.users -= 1
        if group.users > 0:
            return
        groups = _GROUPS.get(self._session.store)
        if groups is not None and groups.get(group.key) is group:
            del groups[group.key]
        if group.waker is not None:  # nobody waits for it any more
            group.waker.cancel()

    def done(self) -> None:
        """The call returned: it no longer counts."""
        self._leave()
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


class _Run:
    """One shared run of a read (:meth:`LongPoll.read`): the calls it answers, its answer."""

    __slots__ = ("answer", "members", "task")

    def __init__(self) -> None:
        self.members: list[Session] = []
        self.answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.answer.add_done_callback(_retrieved)
        self.task: asyncio.Task[None] | None = None


class _Group:
    """The waiting calls asking one read as one principal through one identity: their
    shared wake-up, the run that is in flight and the runs not started yet (by the
    identity check they have pending)."""

    __slots__ = ("key", "pending", "running", "users", "wake", "waker")

    def __init__(self, key: Hashable) -> None:
        self.key = key
        self.users = 0
        self.pending: dict[Hashable, _Run] = {}
        self.running: _Run | None = None
        self.wake: asyncio.Future[None] | None = None
        self.waker: asyncio.Task[None] | None = None


async def _lead(
    group: _Group,
    checks: Hashable,
    run: _Run,
    session: Session,
    fn: Callable[[Tx, Actor], Awaitable[Any]],
) -> None:
    """Run ``run``: after the run in flight (so every call that asks meanwhile joins this
    one), as ``session`` (the first to ask), its identity check's outcome then shared."""
    while group.running is not None:
        await asyncio.wait({group.running.answer})
    group.running = run
    if group.pending.get(checks) is run:
        del group.pending[checks]  # who asks from now on waits for a run of its own
    try:
        got = await session._run(fn)  # pyright: ignore[reportPrivateUsage]
    except asyncio.CancelledError:
        run.answer.cancel()
        raise
    except Exception as exc:
        session._share_checks(run.members)  # pyright: ignore[reportPrivateUsage]
        run.answer.set_exception(exc)
    else:
        session._share_checks(run.members)  # pyright: ignore[reportPrivateUsage]
        run.answer.set_result(got)
    finally:
        if group.running is run:
            group.running = None


async def _wake(store: Store, org_id: UUID, seconds: float, wake: asyncio.Future[None]) -> None:
    """A group's wake-up: a change in the organization, or ``seconds`` gone."""
    try:
        await store.wait_for_change(org_id, timedelta(seconds=seconds))
    finally:
        if not wake.done():
            wake.set_result(None)


def _retrieved(answer: asyncio.Future[Any]) -> None:
    """A shared answer nobody waits for any more (every call that asked was cancelled)
    leaves no 'exception was never retrieved' behind."""
    if not answer.cancelled():
        answer.exception()


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
