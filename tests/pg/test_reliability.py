"""RELIABILITY.md on real PostgreSQL: leases, fencing, wake-ups, cycles, idempotency, atomicity.

These tests need real concurrency, so they run only against PostgreSQL and
every concurrent actor gets a connection pool of its own (a ``LocalSkift``
over its own ``PgStore``): what they race on is the database, not a lock in
this process. Each test's docstring names the guarantee it proves.

Measurements (storm throughput, wake-up latency) are printed; run with ``-s``
to see them.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import random
import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from uuid import UUID

import psycopg
import pytest
from psycopg import sql

import skift
from skift._engine import _find_cycle  # pyright: ignore[reportPrivateUsage]
from skift_pg import PgStore

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

MIN = timedelta(minutes=1)


# ---------------------------------------------------------------------- helpers


def _client(
    dsn: str,
    name: str,
    *,
    user: bool = False,
    max_size: int = 2,
    listen: bool = True,
    pooler_prepares: bool = False,
) -> skift.LocalSkift:
    """A skift handle with a pool of its own, as a separate process would have."""
    principal = skift.User(name) if user else skift.Agent(name)
    store = PgStore(
        dsn, min_size=1, max_size=max_size, listen=listen, pooler_prepares=pooler_prepares
    )
    return skift.LocalSkift(store, principal=principal)


@contextlib.asynccontextmanager
async def _clients(
    dsn: str,
    names: list[str],
    *,
    user: bool = False,
    max_size: int = 2,
    listen: bool = True,
    pooler_prepares: bool = False,
) -> AsyncIterator[list[skift.LocalSkift]]:
    """Independent handles, opened (pool connected, principal known) before they are used."""
    async with contextlib.AsyncExitStack() as stack:
        handles = [
            _client(
                dsn, n, user=user, max_size=max_size, listen=listen, pooler_prepares=pooler_prepares
            )
            for n in names
        ]
        for h in handles:
            await stack.enter_async_context(h)
        yield handles


_ADMIN = "skift-reliability-admin"  # the test's own sessions, which _terminate spares


async def _sql(dsn: str, query: str, *params: Any) -> list[tuple[Any, ...]]:
    """The rows of one query, on a connection of its own outside every skift pool."""
    async with await psycopg.AsyncConnection.connect(
        dsn, autocommit=True, application_name=_ADMIN
    ) as conn:
        cur = await conn.execute(query.encode(), params or None)
        return await cur.fetchall() if cur.description else []


async def _counts(dsn: str) -> dict[str, int]:
    """Row counts of every table a write can touch."""
    tables = ("nodes", "edges", "leases", "events", "requests", "claim_cursors", "projects")
    rows = await _sql(dsn, "SELECT " + ", ".join(f"(SELECT count(*) FROM {t})" for t in tables))
    return dict(zip(tables, rows[0], strict=True))


async def _db_now(dsn: str) -> datetime:
    rows = await _sql(dsn, "SELECT now()")
    return rows[0][0]


def _set_offset(handles: list[skift.LocalSkift], offset: timedelta) -> None:
    """Move the clock of every handle: each has its own store, and each store its own offset."""
    for h in handles:
        store = h.store
        assert isinstance(store, PgStore)
        store.set_clock_offset(offset)


def _uuid(ulid: str) -> UUID:
    ident = skift.parse_node_ref(ulid).id
    assert ident is not None
    return ident


async def _events(sk: skift.LocalSkift) -> list[tuple[str, str]]:
    return [(e.id, e.op) for e in await sk.events(limit=100_000)]


async def _all_nodes(sk: skift.LocalSkift, **filters: Any) -> list[skift.NodeInfo]:
    out: list[skift.NodeInfo] = []
    page: str | None = None
    while True:
        got = await sk.list_nodes(limit=500, page=page, **filters)
        out.extend(got.nodes)
        page = got.next_page
        if page is None:
            return out


async def _snapshot(sk: skift.LocalSkift) -> dict[str, Any]:
    """Everything a user can see, to assert that a refused write changed nothing."""
    nodes = await _all_nodes(sk)
    return {
        "nodes": sorted(
            (n.ref, n.title, n.status, n.parent, n.priority, n.held, n.blocked, n.claimed, n.result)
            for n in nodes
        ),
        "ready": sorted(n.ref for n in (await sk.ready(limit=500)).nodes),
        "events": await _events(sk),
        "projects": sorted(
            (p.slug, p.node_count, p.held, p.archived)
            for p in await sk.list_projects(archived=True)
        ),
    }


async def _acyclic(sk: skift.LocalSkift) -> None:
    """The combined wait relation (blocks edges and containment) has no cycle."""
    ids = [_uuid(n.id) for n in await _all_nodes(sk)]
    org = sk._org_id  # pyright: ignore[reportPrivateUsage]
    assert org is not None
    async with sk.store.transaction(org) as tx:
        arcs = await tx.wait_arcs_from(ids)
    adj: dict[Any, list[Any]] = {}
    for waiter, waited in arcs:
        adj.setdefault(waiter, []).append(waited)
    assert _find_cycle(adj) is None


async def _outcomes(calls: list[Awaitable[Any]]) -> list[Any]:
    """Run calls concurrently; each result or the exception it raised."""
    return list(await asyncio.gather(*calls, return_exceptions=True))


@pytest.fixture
async def ada(pg_dsn: str) -> AsyncIterator[skift.LocalSkift]:
    """The user ``ada`` on this test's database, with a pool of her own."""
    async with skift.open(pg_dsn, principal=skift.User("ada")) as sk:
        yield sk


# ------------------------------------------------------------------ claim storm

STORM_NODES = int(os.environ.get("SKIFT_STORM_NODES", "10000"))  # RELIABILITY.md asks for 10k
STORM_PROJECTS = 4
STORM_CLAIMERS = 32


@pytest.mark.slow
async def test_claim_storm(pg_dsn: str, ada: skift.LocalSkift) -> None:
    """claim_storm: 10k ready nodes, 32 concurrent claimers (a pool each) calling ClaimNext
    then Complete until NothingReady: every node is claimed exactly once (lost = 0,
    duplicated = 0), every lease ends in complete, and every node ends done."""
    await claim_storm(pg_dsn, pg_dsn, ada, STORM_NODES, "claim_storm")


async def claim_storm(
    pg_dsn: str,
    claim_dsn: str,
    ada: skift.LocalSkift,
    nodes: int,
    label: str,
    *,
    pooler_prepares: bool = False,
) -> None:
    """The claim storm over ``nodes`` nodes, the claimers connecting to ``claim_dsn`` (the
    database at ``pg_dsn``, or the same through PgBouncer: tests/pg/test_pgbouncer.py,
    which says ``pooler_prepares`` of one that keeps prepared statements)."""
    per_project = nodes // STORM_PROJECTS
    t0 = time.monotonic()
    for i in range(STORM_PROJECTS):
        p = await ada.create_project(f"Storm {i}")
        for start in range(0, per_project, 5000):
            size = min(5000, per_project - start)
            await ada.patch(p.slug, [skift.CreateNode(title=f"t{start + j}") for j in range(size)])
    t_create = time.monotonic() - t0
    # statistics, as autovacuum would have them on a live database; without them the planner
    # guesses one row everywhere and ClaimNext's plan is several times slower
    await _sql(pg_dsn, "ANALYZE")
    node_ids = {r[0] for r in await _sql(pg_dsn, "SELECT id FROM nodes")}
    assert len(node_ids) == nodes

    claimed: list[UUID] = []
    per_claimer: collections.Counter[str] = collections.Counter()

    async def claimer(sk: skift.LocalSkift) -> None:
        while True:
            try:
                c = await sk.claim_next(ttl=30 * MIN)
            except skift.NothingReady:
                return
            claimed.append(_uuid(c.node.id))
            per_claimer[sk.spec.name] += 1
            await sk.complete(c.node.ref, lease=c.lease.id, result=sk.spec.name)

    names = [f"w{i}" for i in range(STORM_CLAIMERS)]
    async with _clients(claim_dsn, names, max_size=1, pooler_prepares=pooler_prepares) as claimers:
        t1 = time.monotonic()
        await asyncio.gather(*(claimer(h) for h in claimers))
        t_drain = time.monotonic() - t1
        with pytest.raises(skift.NothingReady):  # drained, not just given up on
            await claimers[0].claim_next()

    times = collections.Counter(claimed)
    duplicated = sorted(n for n, k in times.items() if k > 1)
    lost = node_ids - set(times)
    assert (len(lost), len(duplicated)) == (0, 0), (sorted(lost)[:5], duplicated[:5])
    assert dict(await _sql(pg_dsn, "SELECT status, count(*) FROM nodes GROUP BY 1")) == {
        "done": nodes
    }
    leases = await _sql(
        pg_dsn,
        "SELECT count(*), count(DISTINCT node_id),"
        " count(*) FILTER (WHERE release_reason = 'complete') FROM leases",
    )
    assert leases[0] == (nodes, nodes, nodes)
    ops = dict(await _sql(pg_dsn, "SELECT op, count(*) FROM events GROUP BY 1"))
    assert (ops.get("claim"), ops.get("complete_node")) == (nodes, nodes)
    print(
        f"\n{label}: created {nodes} nodes in {t_create:.1f}s; "
        f"{STORM_CLAIMERS} claimers drained them in {t_drain:.1f}s "
        f"({1000 * t_drain / nodes:.1f} ms per claim+complete overall, "
        f"{nodes / t_drain:.0f}/s); claims per claimer "
        f"{min(per_claimer.values())}..{max(per_claimer.values())}"
    )


# ---------------------------------------------------------------------- fencing


@pytest.mark.parametrize("reclaimer", ["another agent", "the same agent"])
async def test_stale_token_rejected(pg_dsn: str, ada: skift.LocalSkift, reclaimer: str) -> None:
    """stale_token_rejected: claim (L1), let it expire, reclaim (L2) — by another agent, or by
    the same principal as an orchestrator retrying would. Every write carrying L1 (heartbeat,
    complete, release, gate, and patches touching the node) fails with FencingError and changes
    nothing; a write with no lease is refused too; L2 works."""
    p = await ada.create_project("Fence")
    await ada.patch(p.slug, [skift.CreateNode(title="Work"), skift.CreateNode(title="Other")])
    ref, other = f"{p.slug}#1", f"{p.slug}#2"
    second = "a2" if reclaimer == "another agent" else "a1"
    async with _clients(pg_dsn, ["a1", second]) as (first, again):
        l1 = (await first.claim(ref, ttl=timedelta(seconds=30))).lease
        _set_offset([ada, first, again], timedelta(minutes=1))  # L1 is now past its TTL
        l2 = (await again.claim(ref, ttl=10 * MIN)).lease
        assert l2.id != l1.id
        before = await _snapshot(ada)
        rows_before = await _counts(pg_dsn)

        late: dict[str, Callable[[], Awaitable[Any]]] = {
            "heartbeat": lambda: first.heartbeat(ref, lease=l1.id),
            "heartbeat with ttl": lambda: first.heartbeat(ref, lease=l1.id, ttl=10 * MIN),
            "complete": lambda: first.complete(ref, lease=l1.id, result="late"),
            "release": lambda: first.release(ref, lease=l1.id),
            "gate": lambda: first.gate(ref, lease=l1.id, title="Ask a person"),
            "drop": lambda: first.drop(ref, reason="late", lease=l1.id),
            "patch update": lambda: first.patch(
                p.slug, [skift.UpdateNode(node=ref, title="late")], lease=l1.id
            ),
            "patch complete": lambda: first.patch(
                p.slug, [skift.CompleteNode(node=ref, result="late")], lease=l1.id
            ),
            "patch child": lambda: first.patch(
                p.slug, [skift.CreateNode(title="late child", parent=ref)], lease=l1.id
            ),
            "patch elsewhere": lambda: first.patch(
                p.slug, [skift.UpdateNode(node=other, title="late")], lease=l1.id
            ),
        }
        for what, call in late.items():
            with pytest.raises(skift.FencingError):
                await call()
            assert await _counts(pg_dsn) == rows_before, what
        # without any lease, the node is still someone else's
        with pytest.raises(skift.Conflict):
            await first.complete(ref, result="no lease")
        assert await _snapshot(ada) == before
        assert await _counts(pg_dsn) == rows_before
        history = await ada.leases(ref)
        assert [(x.id, x.release_reason) for x in history] == [
            (l1.id, skift.ReleaseReason.EXPIRED),
            (l2.id, None),
        ]

        renewed = await again.heartbeat(ref, lease=l2.id)
        assert renewed.id == l2.id
        done = await again.complete(ref, lease=l2.id, result="on time")
        assert done.nodes[0].status is skift.Status.DONE
        node = await ada.get(ref)
        assert (node.status, node.result, node.claimed) == (skift.Status.DONE, "on time", False)


async def test_late_complete_races_reclaim(pg_dsn: str, ada: skift.LocalSkift) -> None:
    """Fencing under a race: holders complete just as their leases expire while other agents
    reclaim the same nodes concurrently. Never do both succeed: a node is either completed
    under L1 (and the reclaim is refused) or reclaimed as L2 (and the late complete fenced)."""
    count = 12
    p = await ada.create_project("Race")
    await ada.patch(p.slug, [skift.CreateNode(title=f"n{i}") for i in range(count)])
    refs = [f"{p.slug}#{i + 1}" for i in range(count)]
    async with (
        _clients(pg_dsn, [f"h{i}" for i in range(count)], max_size=1) as holders,
        _clients(pg_dsn, [f"r{i}" for i in range(count)], max_size=1) as reclaimers,
    ):
        leases = [
            (await h.claim(ref, ttl=timedelta(seconds=1))).lease
            for h, ref in zip(holders, refs, strict=True)
        ]
        rng = random.Random(7)

        async def late_complete(h: skift.LocalSkift, ref: str, lease: skift.LeaseInfo) -> Any:
            await _sleep_until(pg_dsn, lease.expires_at + timedelta(seconds=rng.uniform(-0.1, 0.1)))
            return await h.complete(ref, lease=lease.id, result="late")

        async def reclaim(r: skift.LocalSkift, ref: str, lease: skift.LeaseInfo) -> Any:
            await _sleep_until(pg_dsn, lease.expires_at + timedelta(seconds=rng.uniform(-0.1, 0.1)))
            for _ in range(20):  # until the old lease has run out by the database's clock
                try:
                    return await r.claim(ref, ttl=10 * MIN)
                except skift.Refused as exc:
                    if "leased" not in exc.message:
                        return exc
                    await asyncio.sleep(0.05)
            return "still leased"

        results = await asyncio.gather(
            *(
                _outcomes([late_complete(h, ref, lease), reclaim(r, ref, lease)])
                for h, r, ref, lease in zip(holders, reclaimers, refs, leases, strict=True)
            )
        )
    tally: collections.Counter[str] = collections.Counter()
    for ref, (completed, reclaimed) in zip(refs, results, strict=True):
        node = await ada.get(ref)
        if isinstance(completed, skift.PatchResult):
            assert isinstance(reclaimed, skift.Refused), (ref, reclaimed)
            assert (node.status, node.result) == (skift.Status.DONE, "late")
            tally["completed by L1"] += 1
        else:
            assert isinstance(completed, skift.FencingError), (ref, completed)
            assert isinstance(reclaimed, skift.Claim), (ref, reclaimed)
            assert (node.status, node.claimed) == (skift.Status.OPEN, True)
            tally["reclaimed as L2"] += 1
    print(f"\nlate_complete_races_reclaim: {dict(tally)}")


async def _sleep_until(dsn: str, when: datetime) -> None:
    """Sleep until the database's clock reads ``when``."""
    delay = (when - await _db_now(dsn)).total_seconds()
    if delay > 0:
        await asyncio.sleep(delay)


async def test_renew_after_expiry_terminal(pg_dsn: str, ada: skift.LocalSkift) -> None:
    """renew_after_expiry_terminal: once a lease has expired by the database's clock, a
    heartbeat on it fails even though nobody reclaimed the node, and the failure renews
    nothing: the lease stays expired, the node ready, and later writes under it fail too."""
    p = await ada.create_project("Renew")
    await ada.patch(p.slug, [skift.CreateNode(title="Work")])
    ref = f"{p.slug}#1"
    async with _clients(pg_dsn, ["a1"]) as (holder,):
        lease = (await holder.claim(ref, ttl=timedelta(seconds=1))).lease
        assert (
            await holder.heartbeat(ref, lease=lease.id, ttl=timedelta(seconds=1))
        ).id == lease.id
        expires = (await ada.leases(ref))[0].expires_at
        await _sleep_until(pg_dsn, expires + timedelta(milliseconds=100))  # real time, no offset
        before = await _counts(pg_dsn)
        for ttl in (None, 10 * MIN):
            with pytest.raises(skift.FencingError) as ei:
                await holder.heartbeat(ref, lease=lease.id, ttl=ttl)
            assert "expired" in ei.value.message
        with pytest.raises(skift.FencingError):
            await holder.complete(ref, lease=lease.id)
        assert await _counts(pg_dsn) == before
        [row] = await ada.leases(ref)
        assert (row.expires_at, row.released_at) == (expires, None)
        node = await ada.get(ref)
        assert (node.status, node.claimed, node.ready) == (skift.Status.OPEN, False, True)
        # the sweeper records the expiry; the lease is still dead afterwards
        assert await ada.sweep_expired() == 1
        with pytest.raises(skift.FencingError):
            await holder.heartbeat(ref, lease=lease.id)
        again = await holder.claim(ref)
        assert again.lease.id != lease.id


@pytest.fixture
async def skewed_clock(pg_dsn: str) -> timedelta:
    """Make this database's ``now()`` run three days ahead of every client's clock.

    A ``now()`` in a schema searched before pg_catalog shadows the built-in for
    every session opened afterwards, so the store's queries see the skewed
    time while this process's clock does not.
    """
    skew = timedelta(days=3)
    [(db,)] = await _sql(pg_dsn, "SELECT current_database()")
    async with await psycopg.AsyncConnection.connect(pg_dsn, autocommit=True) as conn:
        await conn.execute("CREATE SCHEMA skew")
        await conn.execute(
            "CREATE FUNCTION skew.now() RETURNS timestamptz LANGUAGE sql STABLE"
            " AS $$ SELECT pg_catalog.now() + interval '3 days' $$"
        )
        await conn.execute(
            # public stays first (skift's tables, and where its migrations record themselves);
            # skew before pg_catalog is enough to shadow now()
            sql.SQL("ALTER DATABASE {} SET search_path = public, skew, pg_catalog").format(
                sql.Identifier(db)
            )
        )
    return skew


async def test_ttl_bounds(pg_dsn: str, skewed_clock: timedelta) -> None:
    """ttl_bounds: a TTL <= 0 is refused (Invalid) and writes nothing; one above the ceiling is
    clamped to it, on claim, ClaimNext and heartbeat; one below the floor is raised to it; and
    expires_at comes from the database's clock — here three days ahead of this process's."""
    ceiling = skift.DEFAULT_LIMITS.lease_ttl_ceiling
    floor = skift.DEFAULT_LIMITS.lease_ttl_floor
    async with skift.open(pg_dsn, principal=skift.User("ada")) as ada:
        p = await ada.create_project("Ttl")
        await ada.patch(p.slug, [skift.CreateNode(title=f"n{i}") for i in range(3)])
        async with _clients(pg_dsn, ["a1"]) as (agent,):
            before = await _counts(pg_dsn)
            for ttl in (timedelta(0), -MIN, timedelta(microseconds=-1)):
                with pytest.raises(skift.Invalid):
                    await agent.claim(f"{p.slug}#1", ttl=ttl)
                with pytest.raises(skift.Invalid):
                    await agent.claim_next(ttl=ttl)
            assert await _counts(pg_dsn) == before

            db_before = await _db_now(pg_dsn)
            huge = await agent.claim(f"{p.slug}#1", ttl=timedelta(days=365))
            nxt = await agent.claim_next(ttl=timedelta(weeks=5))
            tiny = await agent.claim(f"{p.slug}#3", ttl=timedelta(milliseconds=1))
            db_after = await _db_now(pg_dsn)
            assert huge.lease.expires_at - huge.lease.created_at == ceiling
            assert nxt.lease.expires_at - nxt.lease.created_at == ceiling
            assert tiny.lease.expires_at - tiny.lease.created_at == floor
            for claim in (huge, nxt, tiny):
                assert db_before <= claim.lease.created_at <= db_after
            # the database's clock, not this process's: they are three days apart here
            python_now = datetime.now(UTC)
            assert abs(db_before - python_now - skewed_clock) < timedelta(minutes=1)
            assert huge.lease.created_at - python_now > skewed_clock - timedelta(minutes=1)

            with pytest.raises(skift.Invalid):
                await agent.heartbeat(f"{p.slug}#1", lease=huge.lease.id, ttl=timedelta(0))
            beat = await agent.heartbeat(f"{p.slug}#1", lease=huge.lease.id, ttl=timedelta(days=9))
            db_beat = await _db_now(pg_dsn)
            assert db_before + ceiling <= beat.expires_at <= db_beat + ceiling
            [row] = await ada.leases(f"{p.slug}#1")
            assert row.expires_at == beat.expires_at


# ------------------------------------------------------------------- wake-ups


@pytest.mark.parametrize(
    ("listen", "bound"), [(True, 1.0), (False, 1.5)], ids=["notify", "polling"]
)
async def test_wait_wakes(
    pg_dsn: str,
    ada: skift.LocalSkift,
    monkeypatch: pytest.MonkeyPatch,
    listen: bool,
    bound: float,
) -> None:
    """wait_wakes: ClaimNext with a 10 s wait on a node blocked by another returns within a
    fraction of a second after a separate client (another pool) completes the blocker; with
    the LISTEN wake-up turned off (the notification lost) it still returns, by polling."""
    rounds = 3
    p = await ada.create_project("Wake")
    ops: list[skift.Op] = []
    for i in range(rounds):
        ops.append(skift.CreateNode(alias=f"b{i}", title=f"blocker {i}"))
        ops.append(skift.CreateNode(alias=f"x{i}", title=f"blocked {i}", blocked_by=(f"b{i}",)))
    created = (await ada.patch(p.slug, ops)).created
    latencies: list[float] = []
    woken: list[bool] = []
    async with (
        _clients(pg_dsn, ["doer"]) as (doer,),
        _clients(pg_dsn, ["waiter"], listen=listen) as (waiter,),
    ):
        # Watch the waiter's store: did each wait end early (woken) or run its full timeout?
        store = waiter.store
        assert isinstance(store, PgStore)
        waits: list[tuple[float, bool]] = []
        wait_for_change = store.wait_for_change

        async def watched(org_id: UUID, timeout: timedelta) -> None:
            start = time.monotonic()
            await wait_for_change(org_id, timeout)
            waits.append((start, time.monotonic() - start < timeout.total_seconds() - 0.05))

        monkeypatch.setattr(store, "wait_for_change", watched)
        blockers = [(await doer.claim(created[f"b{i}"])).lease for i in range(rounds)]
        for i, lease in enumerate(blockers):
            waiting = asyncio.create_task(
                waiter.claim_next(projects=[p.slug], wait=timedelta(seconds=10))
            )
            await asyncio.sleep(0.4)  # it found nothing and is waiting
            assert not waiting.done()
            await doer.complete(created[f"b{i}"], lease=lease.id)
            done_at = time.monotonic()
            claim = await asyncio.wait_for(waiting, 12)
            latencies.append(time.monotonic() - done_at)
            assert claim.node.ref == created[f"x{i}"]
            # the wait in progress when the blocker completed is the one that ended the round
            last = max(start for start, _ in waits if start < done_at)
            woken.append(next(early for start, early in waits if start == last))
    print(
        f"\nwait_wakes ({'LISTEN' if listen else 'polling only'}): latency after the blocker "
        f"completed {', '.join(f'{x * 1000:.0f} ms' for x in latencies)}; woken early {woken}"
    )
    assert max(latencies) < bound, latencies
    # with LISTEN the notification ends the wait; without it every wait runs to its poll
    assert woken == [listen] * rounds


# ------------------------------------------------------------------ graph races


async def test_concurrent_cycle_edges(pg_dsn: str, ada: skift.LocalSkift) -> None:
    """concurrent_cycle_edges: A->B and B->A as concurrent patches from two clients: exactly
    one commits, the other gets CycleError; likewise a parent link racing an edge that closes
    the loop through containment."""
    rounds = 8
    p = await ada.create_project("Cycles")
    await ada.patch(p.slug, [skift.CreateNode(title=f"n{i}") for i in range(4 * rounds)])
    ref = [f"{p.slug}#{i + 1}" for i in range(4 * rounds)]
    async with _clients(pg_dsn, ["u1", "u2"], user=True) as (u1, u2):
        for r in range(rounds):
            a, b, parent, child = ref[4 * r : 4 * r + 4]
            edges = await _outcomes(
                [
                    u1.patch(p.slug, [skift.AddEdge(from_=a, to=b)]),
                    u2.patch(p.slug, [skift.AddEdge(from_=b, to=a)]),
                ]
            )
            contain = await _outcomes(
                [
                    u1.patch(p.slug, [skift.UpdateNode(node=child, parent=parent)]),
                    u2.patch(p.slug, [skift.AddEdge(from_=parent, to=child)]),
                ]
            )
            for pair in (edges, contain):
                kinds = sorted(type(x).__name__ for x in pair)
                assert kinds == ["CycleError", "PatchResult"], pair
    await _acyclic(ada)
    edges_now = await _sql(pg_dsn, "SELECT count(*) FROM edges")
    parents = await _sql(pg_dsn, "SELECT count(*) FROM nodes WHERE parent_id IS NOT NULL")
    assert edges_now[0][0] + parents[0][0] == 2 * rounds


async def test_edge_storm_stays_acyclic(pg_dsn: str, ada: skift.LocalSkift) -> None:
    """concurrent_cycle_edges (storm): 8 clients x 30 random patches (edges, some parent links)
    over 20 nodes leave the wait relation acyclic; every committed edge is there and no edge
    exists that no committed patch added."""
    n_nodes, n_clients, n_patches = 20, 8, 30
    p = await ada.create_project("Storm edges")
    await ada.patch(p.slug, [skift.CreateNode(title=f"n{i}") for i in range(n_nodes)])
    ref = [f"{p.slug}#{i + 1}" for i in range(n_nodes)]
    committed: set[tuple[str, str]] = set()
    tally: collections.Counter[str] = collections.Counter()

    async def writer(sk: skift.LocalSkift, seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(n_patches):
            ops: list[skift.Op] = []
            edges: list[tuple[str, str]] = []
            for _ in range(rng.randint(1, 3)):
                a, b = rng.sample(ref, 2)
                if rng.random() < 0.15:
                    ops.append(skift.UpdateNode(node=b, parent=a))
                else:
                    ops.append(skift.AddEdge(from_=a, to=b))
                    edges.append((a, b))
            try:
                await sk.patch(p.slug, ops)
            except skift.CycleError:
                tally["cycle refused"] += 1
            else:
                tally["committed"] += 1
                committed.update(edges)

    async with _clients(pg_dsn, [f"u{i}" for i in range(n_clients)], user=True) as writers:
        await asyncio.gather(*(writer(sk, 1000 + i) for i, sk in enumerate(writers)))
    await _acyclic(ada)
    number = {r: i + 1 for i, r in enumerate(ref)}
    stored = {
        (f"{p.slug}#{a}", f"{p.slug}#{b}")
        for a, b in await _sql(
            pg_dsn,
            "SELECT s.number, t.number FROM edges e"
            " JOIN nodes s ON s.id = e.from_id JOIN nodes t ON t.id = e.to_id",
        )
    }
    assert stored == committed, (len(stored), len(committed))
    assert all(a in number and b in number for a, b in stored)
    assert tally["committed"] + tally["cycle refused"] == n_clients * n_patches
    assert tally["cycle refused"] > 0, "the storm never tried to close a cycle"
    print(f"\nedge storm: {dict(tally)}, {len(stored)} edges")


# ------------------------------------------------------------------ idempotency


@pytest.mark.parametrize("graph", [False, True], ids=["nodes only", "with an edge"])
async def test_idempotency_concurrent(pg_dsn: str, ada: skift.LocalSkift, graph: bool) -> None:
    """Idempotency: 20 concurrent patches with one request id, from 20 clients (a pool each):
    all get the same response (the same created refs), the patch applies exactly once (one set
    of nodes, one set of events, the node counter advanced once). With an edge the patches
    queue on the graph lock; without, they race on the request row itself."""
    p = await ada.create_project("Idem")
    ops: list[skift.Op] = [skift.CreateNode(alias="x", title="once")]
    if graph:
        ops.append(skift.CreateNode(alias="y", title="after", blocked_by=("x",)))
    rid = "req-20-at-once"
    async with _clients(pg_dsn, ["ada"] * 20, user=True, max_size=1) as clients:
        results = await asyncio.gather(*(c.patch(p.slug, ops, request_id=rid) for c in clients))
    first = results[0]
    assert first.created == (
        {"x": f"{p.slug}#1", "y": f"{p.slug}#2"} if graph else {"x": f"{p.slug}#1"}
    )
    for r in results:
        assert r.request_id == rid
        assert r.created == first.created
        assert [(n.ref, n.id) for n in r.nodes] == [(n.ref, n.id) for n in first.nodes]
    nodes = await _all_nodes(ada)
    assert sorted(n.ref for n in nodes) == sorted(first.created.values())
    mine = [e for e in await ada.events() if e.request_id == rid]
    assert sorted(e.op for e in mine) == (
        ["add_edge", "create_node", "create_node"] if graph else ["create_node"]
    )
    assert (await ada.get_project(p.slug)).node_count == len(ops)
    assert (await _counts(pg_dsn))["requests"] == 1


# ------------------------------------------------------------------- atomicity


async def test_patch_atomicity(pg_dsn: str, ada: skift.LocalSkift) -> None:
    """patch_atomicity: a patch whose 50th operation is refused leaves no trace of the first
    49 — in the rows (nodes, edges, leases, events, the request id) and in what a user sees —
    and node numbers continue as if it never happened; the same request id then applies the
    corrected patch."""
    p = await ada.create_project("Atomic")
    await ada.patch(
        p.slug,
        [
            skift.CreateNode(alias="a", title="Existing A"),
            skift.CreateNode(alias="b", title="Existing B", blocked_by=("a",)),
            skift.CreateNode(alias="c", title="Existing C"),
        ],
    )
    e1, e2, e3 = (f"{p.slug}#{i}" for i in (1, 2, 3))
    ops: list[skift.Op] = []
    for i in range(24):
        blocked = (f"n{i - 1}",) if i % 3 == 2 else ()
        parent = e3 if i % 5 == 0 else None
        ops.append(
            skift.CreateNode(alias=f"n{i}", title=f"new {i}", blocked_by=blocked, parent=parent)
        )
    ops += [skift.AddEdge(from_=f"n{i}", to=f"n{i + 12}") for i in range(0, 11)]
    ops += [skift.AddEdge(from_=e1, to="n23"), skift.AddEdge(from_="n23", to=e2)]
    ops += [
        skift.UpdateNode(node=e1, title="renamed"),
        skift.UpdateNode(node=e2, priority=skift.Priority.P0),
        skift.UpdateNode(node="n1", labels=("x",)),
        skift.HoldNode(node=e1, reason="parked"),
        skift.DropNode(node="n22", reason="not needed"),
        skift.ReopenNode(node="n22", reason="needed after all"),
        skift.CompleteNode(node="n21", result="done in passing"),
        skift.RemoveEdge(from_=e1, to=e2),
        skift.AddEdge(from_=e2, to="n3"),
        skift.UpdateNode(node=e3, body="more"),
        skift.CreateNode(alias="last", title="the 49th"),
        skift.UpdateNode(node="last", title="the 49th, renamed"),
    ]
    assert len(ops) == 49
    bad = skift.AddEdge(from_="n0", to=f"{p.slug}#999")
    before = await _snapshot(ada)
    rows = await _counts(pg_dsn)
    rid = "atomic-1"
    with pytest.raises(skift.NotFound) as ei:
        await ada.patch(p.slug, [*ops, bad], request_id=rid)
    assert ei.value.details["index"] == 49
    assert await _counts(pg_dsn) == rows
    assert await _snapshot(ada) == before
    assert (await ada.get_project(p.slug)).node_count == 3

    # the request id recorded nothing, so it is free for the corrected patch
    res = await ada.patch(p.slug, [*ops, skift.AddEdge(from_="n0", to=e2)], request_id=rid)
    assert res.created["n0"] == f"{p.slug}#4"
    assert res.created["last"] == f"{p.slug}#28"
    later = await ada.create(p.slug, "after")
    assert later.ref == f"{p.slug}#29"


# ------------------------------------------------------------------ reconnects


async def _terminate(dsn: str) -> int:
    """End every skift session on this test's database; returns how many."""
    rows = await _sql(
        dsn,
        "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity"
        " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        " AND application_name IS DISTINCT FROM %s",
        _ADMIN,
    )
    return int(rows[0][0])


async def test_pool_reconnect(pg_dsn: str) -> None:
    """Process faults: the pool's sessions are killed (idle, and mid-patch at random moments):
    each call either works or raises Unavailable, never anything else; the pool reconnects;
    a retry with the same request id applies exactly once, so nothing doubles."""
    async with skift.open(pg_dsn, principal=skift.User("ada")) as sk:
        p = await sk.create_project("Faults")
        await sk.create(p.slug, "warm the pool")
        unavailable = ambiguous = 0
        assert await _terminate(pg_dsn) >= 1
        # each call after the kill works or is Unavailable, until the pool has replaced every
        # session it held
        for _ in range(20):
            try:
                await sk.get_project(p.slug)
                break
            except skift.Unavailable:
                unavailable += 1
        else:
            raise AssertionError("the pool never reconnected")

        rng = random.Random(3)
        rounds = 25

        async def retry(rid: str, title: str) -> skift.PatchResult:
            """The patch, retried with the same request id for as long as it is Unavailable."""
            nonlocal unavailable, ambiguous
            for _ in range(50):
                try:
                    return await sk.patch(p.slug, [skift.CreateNode(title=title)], request_id=rid)
                except skift.Unavailable:
                    unavailable += 1
                    # committed, but the caller never heard: the retry must replay, not redo
                    ambiguous += bool(
                        await _sql(pg_dsn, "SELECT 1 FROM requests WHERE request_id = %s", rid)
                    )
                    await asyncio.sleep(0.02)
            raise AssertionError(f"{rid} never got through")

        async def killer(delay: float) -> None:
            await asyncio.sleep(delay)
            await _terminate(pg_dsn)

        results: list[skift.PatchResult] = []
        for i in range(rounds):
            patch, _ = await asyncio.gather(
                retry(f"fault-{i}", f"n{i}"), killer(rng.uniform(0, 0.03))
            )
            results.append(patch)
        # a repeat of an applied id returns the original response
        again = await retry("fault-0", "n0")
        assert again.nodes[0].ref == results[0].nodes[0].ref

    # every request id applied exactly once, whatever the kills interrupted (read afresh:
    # the old pool may still hold sessions the last kill ended)
    async with skift.open(pg_dsn, principal=skift.User("ada")) as fresh:
        refs = [r.nodes[0].ref for r in results]
        assert len(set(refs)) == rounds
        titles = collections.Counter(n.title for n in await _all_nodes(fresh))
        assert all(titles[f"n{i}"] == 1 for i in range(rounds)), titles
        created = sorted(
            e.request_id or ""
            for e in await fresh.events()
            if e.op == "create_node" and (e.request_id or "").startswith("fault-")
        )
        assert created == sorted(f"fault-{i}" for i in range(rounds))
    print(
        f"\npool_reconnect: {rounds} patches under kills, {unavailable} Unavailable retried, "
        f"{ambiguous} of them after the patch had committed"
    )
