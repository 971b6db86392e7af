"""Round trips to PostgreSQL of the claim path (issue 19), counted on the wire.

A TCP proxy between the store and PostgreSQL (bench._trace.round_trips) counts each
time the server answers after the client spoke: BEGIN, COMMIT, the wake-up and any
statement psycopg sends on its own count like every other exchange.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType

import pytest

import skift
from skift_pg import PgStore
from skift_pg._queries import queries  # pyright: ignore[reportPrivateUsage]
from skift_pg._tx import REPLAN_AT, replans_at  # pyright: ignore[reportPrivateUsage]


def _load_trace() -> ModuleType:
    """bench/_trace.py, by path: in the tests the name ``bench`` is tests/bench."""
    path = Path(__file__).resolve().parents[2] / "bench" / "_trace.py"
    spec = importlib.util.spec_from_file_location("bench_trace", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


_trace = _load_trace()
RoundTrips = _trace.RoundTrips
round_trips = _trace.round_trips

pytestmark = pytest.mark.pg

CLAIM_BUDGET = 2
"""ClaimNext of a node with no predecessors and no filter: BEGIN with the take (cursor, clock,
lock) and the claim's reads of the node behind it, then the writes with COMMIT and the
wake-up (13 before issue 19, 4 before issue 31)."""

PAIR_BUDGET = 4
"""ClaimNext + complete, BEGIN and COMMIT included: 27 before issue 19 (13 + 14), 11 before
issue 31; the issue's target is 4."""

NOTHING_READY_BUDGET = 5
"""A ClaimNext that finds nothing: its reads, and the rollback (7 before issue 19, and a
DEALLOCATE ALL that had every later statement parsed again)."""


@pytest.fixture
async def counted(pg_dsn: str) -> AsyncIterator[tuple[skift.LocalSkift, RoundTrips, PgStore]]:
    """An agent whose store goes through the counting proxy (one connection, no LISTEN),
    and a graph with work to claim."""
    async with skift.LocalSkift(PgStore(pg_dsn), principal=skift.User("person")) as person:
        proj = await person.create_project("Rt")
        await person.patch(proj.slug, [skift.CreateNode(title=f"n{i}") for i in range(12)])
    async with round_trips(pg_dsn) as (dsn, rt):
        store = PgStore(dsn, min_size=1, max_size=1, listen=False)
        async with skift.LocalSkift(store, principal=skift.Agent("agent")) as agent:
            # warm up: the first calls read the principal, prepare statements
            for _ in range(6):
                c = await agent.claim_next()
                await agent.complete(c.node.ref, lease=c.lease.id)
            yield agent, rt, store


async def _prepared(store: PgStore) -> int:
    async with store._connection() as conn:  # pyright: ignore[reportPrivateUsage]
        cur = await conn.execute("SELECT count(*) AS n FROM pg_prepared_statements")
        row = await cur.fetchone()
    assert row is not None
    return int(row["n"])


async def test_claim_and_complete_stay_within_their_round_trips(
    counted: tuple[skift.LocalSkift, RoundTrips, PgStore],
) -> None:
    agent, rt, _ = counted
    for _ in range(3):
        rt.count, rt.counting = 0, True
        c = await agent.claim_next()
        claim = rt.count
        await agent.complete(c.node.ref, lease=c.lease.id)
        rt.counting = False
        assert claim <= CLAIM_BUDGET, f"ClaimNext took {claim} round trips"
        assert rt.count <= PAIR_BUDGET, f"claim + complete took {rt.count} round trips"


async def test_nothing_ready_costs_its_reads_and_keeps_prepared_statements(
    counted: tuple[skift.LocalSkift, RoundTrips, PgStore],
) -> None:
    """A failed claim rolls back without psycopg's DEALLOCATE ALL: the statements the
    connection prepared are still prepared after it."""
    agent, rt, store = counted
    while True:
        try:
            c = await agent.claim_next()
        except skift.NothingReady:
            break
        await agent.complete(c.node.ref, lease=c.lease.id)
    before = await _prepared(store)
    assert before > 0
    for _ in range(3):
        rt.count, rt.counting = 0, True
        with pytest.raises(skift.NothingReady):
            await agent.claim_next()
        rt.counting = False
        assert rt.count <= NOTHING_READY_BUDGET, f"a failed claim took {rt.count} round trips"
    assert await _prepared(store) >= before


async def test_a_claim_of_any_work_is_planned_once_per_connection(
    counted: tuple[skift.LocalSkift, RoundTrips, PgStore],
) -> None:
    """ClaimNext of any work settles on a generic plan: with the assignee rule and the
    bookkeeping kind as parameters PostgreSQL judged its generic plan hundreds of times
    dearer than a plan for the values and planned it again on every claim (3.4 ms of
    planning a claim against 0.6 ms of execution; issue 31)."""
    agent, _, store = counted
    slug = (await agent.list_projects())[0].slug
    await agent.patch(slug, [skift.CreateNode(title=f"more {i}") for i in range(400)])
    async with store._connection() as conn:  # pyright: ignore[reportPrivateUsage]
        await conn.execute("ANALYZE")  # as autovacuum would: the plans weigh 400 nodes
    for _ in range(12):  # past PostgreSQL's plans for the values (five, again after ANALYZE)
        c = await agent.claim_next()
        await agent.complete(c.node.ref, lease=c.lease.id)
    # and clear of the connection's next re-plan (replans_at): one pair (the take prepared
    # again if a re-plan came just before), then the 5 below: its next 12 transactions
    while _replan_within(await _transactions(store), 12):
        c = await agent.claim_next()
        await agent.complete(c.node.ref, lease=c.lease.id)
    c = await agent.claim_next()
    await agent.complete(c.node.ref, lease=c.lease.id)
    before = await _take_plans(store)
    for _ in range(5):
        c = await agent.claim_next()
        await agent.complete(c.node.ref, lease=c.lease.id)
    generic, custom = (a - b for a, b in zip(await _take_plans(store), before, strict=True))
    assert (generic, custom) == (5, 0)


def _replan_within(done: int, more: int) -> bool:
    """Whether a connection that has counted ``done`` transactions re-plans in its next
    ``more``."""
    return any(replans_at(done + k) for k in range(1, more + 1))


async def _transactions(store: PgStore) -> int:
    """The transactions the store's one connection has counted (PgConn.count_transaction)."""
    async with store._connection() as conn:  # pyright: ignore[reportPrivateUsage]
        return conn._transactions  # pyright: ignore[reportPrivateUsage]


async def _take_plans(store: PgStore) -> tuple[int, int]:
    """How often the connection's prepared take_next_ready_any was planned generic, custom."""
    take = re.sub(r"%\(\w+\)s", "?", queries()["take_next_ready_any"])
    async with store._connection() as conn:  # pyright: ignore[reportPrivateUsage]
        cur = await conn.execute(
            "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements"
        )
        rows = await cur.fetchall()
    row = next((r for r in rows if re.sub(r"\$\d+", "?", r["statement"]) == take), None)
    assert row is not None, "take_next_ready_any is not prepared"
    return int(row["generic_plans"]), int(row["custom_plans"])


def test_the_take_of_any_work_leaves_out_the_bookkeeping_kind() -> None:
    """take_next_ready_any writes skift.BOOKKEEPING_KIND into its SQL (a parameter there
    spoiled its generic plan): the two say the same kind."""
    for name in ("take_next_ready_any", "take_next_ready_any_person"):
        assert f"n.kind <> '{skift.BOOKKEEPING_KIND}'" in queries()[name]


STATEMENT_BUDGET = 9
"""Statements of a ClaimNext + complete (BEGIN and COMMIT aside): the take, the claim's
reads of the node in one statement, its writes in one and the wake-up; the complete's
first reads in one (project, reservation, lease, node) with its node's derived facts
behind it, its writes in two (those before its policy decision, sent at once, and those
after) and the wake-up (21 before, 12 until complete_reads)."""


async def test_claim_and_complete_send_their_reads_and_writes_together(
    counted: tuple[skift.LocalSkift, RoundTrips, PgStore],
) -> None:
    """A claim's writes (cursor, lease, event) go as one statement, a lone complete's as
    two (node and lease; event and saved response); the claim's reads of the node it took
    as one, and the complete's first reads as one."""
    agent, _, _ = counted
    with _trace.trace() as t:
        c = await agent.claim_next()
        await agent.complete(c.node.ref, lease=c.lease.id)
    assert t.counts["claim_reads"] == 1, dict(t.counts)
    assert t.counts["claim_writes"] == 1, dict(t.counts)
    assert t.counts["complete_reads"] == 1, dict(t.counts)
    assert t.counts["complete_lease_writes"] == 1, dict(t.counts)
    assert t.counts["complete_answer_writes"] == 1, dict(t.counts)
    assert t.statements <= STATEMENT_BUDGET, dict(t.counts)


async def test_a_new_connection_plans_the_claim_once(pg_dsn: str) -> None:
    """A new connection runs its statements on generic plans from their first call
    (plan_cache_mode=force_generic_plan): PostgreSQL's default plans a prepared statement
    for its values five times before it weighs a generic plan, and a claimer that makes a
    dozen claims on a connection of its own spent most of its PostgreSQL CPU planning
    (issue 31)."""
    async with skift.LocalSkift(PgStore(pg_dsn), principal=skift.User("person")) as person:
        proj = await person.create_project("Cold")
        await person.patch(proj.slug, [skift.CreateNode(title=f"n{i}") for i in range(20)])
    store = PgStore(pg_dsn, min_size=1, max_size=1, listen=False)
    async with skift.LocalSkift(store, principal=skift.Agent("agent")) as agent:
        for rounds in (3, REPLAN_AT):  # before and after the statements are planned again
            for _ in range(rounds):
                c = await agent.claim_next()
                await agent.complete(c.node.ref, lease=c.lease.id)
            async with store._connection() as conn:  # pyright: ignore[reportPrivateUsage]
                cur = await conn.execute(
                    "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements"
                )
                rows = await cur.fetchall()
            assert rows, "nothing was prepared"
            planned_for_values = [r["statement"][:80] for r in rows if r["custom_plans"]]
            assert planned_for_values == []
            assert any(r["generic_plans"] for r in rows)


async def test_a_read_with_optional_filters_is_planned_for_its_values(pg_dsn: str) -> None:
    """The reads with optional filters (custom_planned) go with their values in their text,
    not as parameters: on a connection at force_generic_plan PostgreSQL still plans them
    for those values (a generic plan of Ready or of a filtered ClaimNext was measured 100x
    slower). Read off libpq's trace of the connection: each such statement's Parse."""
    async with skift.LocalSkift(PgStore(pg_dsn), principal=skift.User("person")) as person:
        proj = await person.create_project("Filtered")
        await person.patch(proj.slug, [skift.CreateNode(title=f"n{i}") for i in range(3)])
    store = PgStore(pg_dsn, min_size=1, max_size=1, listen=False)
    with tempfile.TemporaryFile() as log:
        async with skift.LocalSkift(store, principal=skift.Agent("agent")) as agent:
            async with store._connection() as conn:  # pyright: ignore[reportPrivateUsage]
                mode = await (await conn.execute("SHOW plan_cache_mode")).fetchone()
                assert mode is not None
                assert mode["plan_cache_mode"] == "force_generic_plan"
                conn.pgconn.trace(log.fileno())
            await agent.ready(projects=[proj.slug])
            c = await agent.claim_next(projects=[proj.slug])
            await agent.complete(c.node.ref, lease=c.lease.id)
            async with store._connection() as conn:  # pyright: ignore[reportPrivateUsage]
                conn.pgconn.untrace()
        log.seek(0)
        # one record a message, its SQL over several lines
        records = re.split(r"\n(?=\d{4}-\d\d-\d\d )", log.read().decode())
        parses = [r for r in records if "\tParse\t" in r]
    # an optional filter: "cardinality(<the projects given>) = 0 OR ..."
    filtered = [r for r in parses if re.search(r"cardinality\((\$\d|')", r)]
    assert len(filtered) >= 2, parses  # Ready's and the claim's reads
    for record in filtered:
        assert not re.search(r"\$\d", record), record[:300]
        assert record.rstrip().endswith(" 0"), record[-200:]  # no parameter types
    # and everything else went with parameters, prepared
    assert any(re.search(r"\$\d", ln) for ln in parses)


def test_a_connection_plans_again_at_each_doubling() -> None:
    """A connection's statements are planned again at its 12th transaction and each
    doubling (24th, 48th, ...): a generic plan made while the leases, events and requests
    tables were nearly empty scanned them whole as they grew, and a new database's claim
    slowed by half within seconds (issue 31)."""
    at = [n for n in range(1, 400) if replans_at(n)]
    assert at == [REPLAN_AT * 2**k for k in range(len(at))] == [12, 24, 48, 96, 192, 384]
