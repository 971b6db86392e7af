"""skift behind PgBouncer in transaction mode (issue 33; docs/operations.md, "Behind
PgBouncer"). The contract suite's ``pgbouncer`` leg (tests/contract/conftest.py) proves
every rule through it; these tests prove the plumbing: a pooler found out on its own,
migrations serialized without a session lock, LISTEN on a direct connection, a real
``skift serve --dsn`` over it, and the claim storm with fewer server connections than
claimers.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from datetime import timedelta
from typing import TYPE_CHECKING

import psycopg
import pytest
from pgbouncer import PgBouncer
from test_reliability import claim_storm

import skift
import skift_pg
from skift_pg import PgStore

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

STORM_NODES = 1000
"""The storm through PgBouncer: enough for 32 claimers to queue on 8 server connections
for seconds; the 10k of tests/pg/test_reliability.py prove the rest directly."""


@pytest.fixture
def narrow(pg_server_dsn: str) -> Iterator[PgBouncer]:
    """A PgBouncer of the test's own with 8 server connections per database."""
    bouncer = PgBouncer(pool_size=8)
    bouncer.start(pg_server_dsn)
    try:
        yield bouncer
    finally:
        bouncer.stop()


@pytest.fixture
async def ada(pg_dsn: str) -> AsyncIterator[skift.LocalSkift]:
    async with skift.open(pg_dsn, principal=skift.User("ada")) as sk:
        yield sk


async def test_a_pooler_is_found_out(pg_dsn: str, pgbouncer: PgBouncer) -> None:
    """A store finds out, on its first connection, whether its DSN is PgBouncer (which
    refuses the startup parameter a direct connection carries its settings in)."""
    direct = PgStore(pg_dsn, listen=False)
    pooled = PgStore(pgbouncer.through(pg_dsn), listen=False)
    try:
        await direct.list_orgs()
        await pooled.list_orgs()
        assert (direct.pooled, pooled.pooled) == (False, True)
    finally:
        await direct.close()
        await pooled.close()


async def test_the_url_says_so_and_names_the_listen_dsn(pg_dsn: str, pgbouncer: PgBouncer) -> None:
    """``pooler=`` and ``listen_dsn=`` are skift's query parameters, not libpq's."""
    through = pgbouncer.through(pg_dsn)
    store = skift_pg.open_store(f"{through}?pooler=transaction&listen_dsn={pg_dsn}")
    try:
        assert (store.dsn, store.pooled, store.listen_dsn) == (through, True, pg_dsn)
    finally:
        await store.close()
    with pytest.raises(skift.Invalid, match="pooler"):
        skift_pg.open_store(f"{through}?pooler=session")


async def test_the_settings_hold_in_every_transaction(pg_dsn: str, pgbouncer: PgBouncer) -> None:
    """Behind the pooler the statement timeout a direct connection starts with is set
    in each transaction (a session SET would be left to whichever client comes next)."""
    limits = skift.Limits(statement_timeout=timedelta(milliseconds=1234))
    store = PgStore(pgbouncer.through(pg_dsn), listen=False, limits=limits)
    try:
        org = await store.ensure_org("default")
        for _ in range(3):
            async with store.transaction(org.id) as tx:
                await tx.now()
                conn = tx._conn  # pyright: ignore[reportPrivateUsage]
                cur = await conn.execute(b"SELECT current_setting('statement_timeout') AS t")
                row = await cur.fetchone()
                assert row is not None
                assert row["t"] == "1234ms"
        async with await psycopg.AsyncConnection.connect(
            pgbouncer.through(pg_dsn), autocommit=True, prepare_threshold=None
        ) as other:  # the next client of the same server connections
            cur = await other.execute("SELECT current_setting('statement_timeout')")
            row = await cur.fetchone()
            assert row is not None
            assert row[0] != "1234ms"
    finally:
        await store.close()


async def test_migrators_through_the_pooler_apply_each_migration_once(
    pg_empty_dsn: str, pgbouncer: PgBouncer
) -> None:
    """Four servers starting at once through PgBouncer: the migration lock is a
    transaction's, so each migration is applied once (a session lock would be taken
    on one server connection and released, or not, on another)."""
    through = pgbouncer.through(pg_empty_dsn)
    results = await asyncio.gather(*(skift_pg.migrate(through) for _ in range(4)))
    applied = [name for names in results for name in names]
    assert sorted(applied) == sorted(name for _, name, _ in skift_pg.migrations())
    async with await psycopg.AsyncConnection.connect(pg_empty_dsn) as conn:
        cur = await conn.execute("SELECT count(*), count(DISTINCT version) FROM skift_migrations")
        assert await cur.fetchone() == (len(applied), len(applied))


async def test_listen_goes_to_the_direct_connection(pg_dsn: str, pgbouncer: PgBouncer) -> None:
    """A waiting ClaimNext is woken by a NOTIFY sent through the pooler and received on
    ``listen_dsn``; without it a pooled store does not LISTEN (waits poll)."""
    through = pgbouncer.through(pg_dsn)
    waiting = PgStore(through, listen_dsn=pg_dsn)
    deaf = PgStore(through)
    try:
        async with skift.LocalSkift(PgStore(through), principal=skift.User("ada")) as ada:
            p = await ada.create_project("P")
            org = await waiting.ensure_org("default")
            await deaf.ensure_org("default")
            assert deaf._listen_target() is None  # pyright: ignore[reportPrivateUsage]
            await waiting.wait_for_change(org.id, timedelta(milliseconds=1))  # LISTEN now
            await asyncio.sleep(0.5)
            t0 = time.monotonic()
            wait = asyncio.create_task(waiting.wait_for_change(org.id, timedelta(seconds=20)))
            await asyncio.sleep(0.2)
            await ada.patch(p.slug, [skift.CreateNode(title="wake")])
            await wait
            assert time.monotonic() - t0 < 15, "woken by the timeout, not by NOTIFY"
    finally:
        await waiting.close()
        await deaf.close()


async def test_skift_serve_through_the_pooler(pg_dsn: str, pgbouncer: PgBouncer) -> None:
    """``skift serve --dsn`` pointing at PgBouncer, with ``--listen-dsn`` direct: it
    migrates, serves, and a ClaimNext with wait is handed work created meanwhile."""
    from serverproc import ServerProcess

    from skift_server import connect

    server = ServerProcess(
        "--dsn", pgbouncer.through(pg_dsn), "--listen-dsn", pg_dsn, "--test-hooks",
        "--sweep-every", "0", "--webhook-workers", "0",
    )  # fmt: skip
    try:
        await server.start()
        async with connect(server.url, principal=skift.User("ada")) as ada:
            p = await ada.create_project("P")
            bot = ada.acting_as(skift.Agent("bot"))
            claim = asyncio.create_task(bot.claim_next(wait=timedelta(seconds=20)))
            await asyncio.sleep(0.3)
            await ada.patch(p.slug, [skift.CreateNode(title="late")])
            got = await claim
            await bot.complete(got.node.ref, lease=got.lease.id, result="ok")
            assert (await ada.get(got.node.ref)).status == "done"
        assert await server.stop() == 0, server.log()
    finally:
        server.cleanup()


@pytest.mark.slow
async def test_claim_storm_through_pgbouncer(
    pg_dsn: str, ada: skift.LocalSkift, narrow: PgBouncer
) -> None:
    """The claim storm (tests/pg/test_reliability.py) with its 32 claimers connected
    through PgBouncer in transaction mode, which has 8 server connections for them: lost
    0, doubled 0, every lease completed."""
    await claim_storm(pg_dsn, narrow.through(pg_dsn), ada, STORM_NODES, "claim_storm_pgbouncer")


# ------------------------------------------------- a pooler that keeps prepared statements


async def test_prepared_statements_behind_a_pooler_that_keeps_them(
    pg_dsn: str, pgbouncer_prepared: PgBouncer
) -> None:
    """``pooler=transaction-prepared`` (PgBouncer 1.21+ with ``max_prepared_statements``):
    skift prepares its statements as on a direct connection, PgBouncer prepares each on
    the server connections it meets, and the settings a direct connection starts with
    (generic plans among them) hold in every transaction; the work is the same work."""
    through = pgbouncer_prepared.through(pg_dsn)
    url = f"{through}?pooler=transaction-prepared&listen_dsn={pg_dsn}"
    store = skift_pg.open_store(url, migrate=False)
    assert (store.pooled, store.pooler_prepares) == (True, True)
    async with skift.LocalSkift(store, principal=skift.User("ada")) as ada:
        p = await ada.create_project("Prepared")
        await ada.patch(p.slug, [skift.CreateNode(title=f"n{i}") for i in range(30)])
        agents = [ada.acting_as(skift.Agent(f"a{i}")) for i in range(3)]
        done = 0
        for _ in range(8):
            for agent in agents:
                c = await agent.claim_next()
                await agent.complete(c.node.ref, lease=c.lease.id, result="ok")
                done += 1
        assert done == 24
        org = await store.ensure_org("default")
        async with store.transaction(org.id) as tx:
            await tx.now()
            conn = tx._conn  # pyright: ignore[reportPrivateUsage]
            cur = await conn.execute(
                b"SELECT current_setting('plan_cache_mode') AS m, current_setting('jit') AS j"
            )
            assert await cur.fetchone() == {"m": "force_generic_plan", "j": "off"}
    async with await psycopg.AsyncConnection.connect(pg_dsn) as conn:
        cur = await conn.execute("SELECT status, count(*) FROM nodes GROUP BY 1 ORDER BY 1")
        assert await cur.fetchall() == [("done", 24), ("open", 6)]
    db = pg_dsn.rsplit("/", 1)[1]
    ours = [s for s in pgbouncer_prepared.servers() if s["database"] == db]
    assert ours
    assert sum(int(str(s["prepared_statements"])) for s in ours) >= 10, ours


async def test_without_the_word_a_pooler_that_keeps_them_gets_none(
    pg_dsn: str, pgbouncer_prepared: PgBouncer
) -> None:
    """A DSN that only says ``pooler=transaction`` prepares nothing, whatever the pooler
    could keep: skift does not guess that a pooler keeps prepared statements."""
    store = skift_pg.open_store(
        f"{pgbouncer_prepared.through(pg_dsn)}?pooler=transaction", migrate=False
    )
    async with skift.LocalSkift(store, principal=skift.User("ada")) as ada:
        p = await ada.create_project("Plain")
        await ada.patch(p.slug, [skift.CreateNode(title="n")])
        c = await ada.claim_next()
        await ada.complete(c.node.ref, lease=c.lease.id)
    db = pg_dsn.rsplit("/", 1)[1]
    ours = [s for s in pgbouncer_prepared.servers() if s["database"] == db]
    assert [int(str(s["prepared_statements"])) for s in ours] == [0] * len(ours)


@pytest.mark.slow
async def test_claim_storm_through_pgbouncer_keeping_prepared_statements(
    pg_dsn: str, ada: skift.LocalSkift, pgbouncer_prepared: PgBouncer
) -> None:
    """The claim storm's 32 claimers through a PgBouncer with 8 server connections that
    keeps prepared statements, each claimer's store told so: lost 0, doubled 0."""
    await claim_storm(
        pg_dsn,
        pgbouncer_prepared.through(pg_dsn),
        ada,
        STORM_NODES,
        "claim_storm_pgbouncer_prepared",
        pooler_prepares=True,
    )


async def test_told_prepared_behind_a_pooler_that_keeps_none_says_what_to_change(
    pg_dsn: str, pgbouncer: PgBouncer
) -> None:
    """``pooler=transaction-prepared`` in front of the distribution's PgBouncer 1.18, which
    keeps no prepared statement: a call that meets another server connection than the one
    its statement was prepared on is answered Unavailable, naming the setting to change,
    not an internal error."""
    through = pgbouncer.through(pg_dsn)
    store = skift_pg.open_store(f"{through}?pooler=transaction-prepared", migrate=False)
    async with contextlib.AsyncExitStack() as stack:
        ada = await stack.enter_async_context(skift.LocalSkift(store, principal=skift.User("ada")))
        p = await ada.create_project("Told")
        # other clients take turns on the pool's server connections meanwhile
        others = [
            await stack.enter_async_context(
                skift.LocalSkift(
                    PgStore(through, pooled=True, listen=False), principal=skift.User(f"o{i}")
                )
            )
            for i in range(4)
        ]

        async def calls() -> None:
            for i in range(50):
                await asyncio.gather(*(o.list_projects() for o in others))
                await ada.patch(p.slug, [skift.CreateNode(title=f"n{i}")])

        with pytest.raises(skift.Unavailable) as caught:
            await calls()
        assert "pooler=transaction" in (caught.value.next or "")
        assert "prepared statement" in str(caught.value)
