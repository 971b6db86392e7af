"""RELIABILITY.md's change stream on real PostgreSQL: the (xid, id) cursor below the snapshot xmin.

An event's id is a ULID minted before commit, so an id cursor would skip an
event whose transaction took a low id and committed late. These tests hold
transactions open and roll them back on connections of their own (plain
psycopg, outside every skift pool) while skift handles with pools of their
own write and watch, so what races is the database, not a lock here.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from datetime import timedelta
from typing import TYPE_CHECKING, Any
from uuid import UUID

import psycopg
import pytest

import skift
from skift._seal import SECRET_NAME, CursorSeal
from skift_pg import PgStore

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

pytestmark = pytest.mark.pg

# A read expecting events waits for them: a transaction open elsewhere on the server (another
# test's) holds the stream back until it ends. A read that finds them returns at once.
SOON = timedelta(seconds=10)

_INSERT = """
INSERT INTO events (id, org_id, principal_id, principal_kind, identity_scheme, op, occurred_at)
VALUES (%s, %s, %s, 'user', 'local', 'raw_note', now())
"""


@contextlib.asynccontextmanager
async def _handle(dsn: str, name: str) -> AsyncGenerator[skift.LocalSkift]:
    """A skift handle with a pool of its own, as a separate process would have."""
    async with skift.LocalSkift(
        PgStore(dsn, min_size=1, max_size=2), principal=skift.User(name)
    ) as sk:
        yield sk


async def _ids(dsn: str, name: str) -> tuple[UUID, UUID]:
    """(org id, principal id) of a principal, read outside skift."""
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        cur = await conn.execute("SELECT org_id, id FROM principals WHERE name = %s", (name,))
        row = await cur.fetchone()
        assert row is not None
        return row[0], row[1]


@contextlib.asynccontextmanager
async def _open_tx(dsn: str) -> AsyncGenerator[psycopg.AsyncConnection[Any]]:
    """A connection inside a transaction; the test commits or rolls it back."""
    async with await psycopg.AsyncConnection.connect(dsn) as conn:
        yield conn


async def _insert(conn: psycopg.AsyncConnection[Any], org: UUID, principal: UUID) -> UUID:
    event_id = skift.new_id()
    await conn.execute(_INSERT, (event_id, org, principal))
    return event_id


async def _seal(sk: skift.LocalSkift) -> CursorSeal:
    """The test's key to its organization's cursors (the store's secret; clients have none)."""
    org = await sk.store.ensure_org(sk.org_name)
    return CursorSeal(await sk.store.secret(SECRET_NAME), org.id)


def _pos(seal: CursorSeal, cursor: str) -> tuple[int, str]:
    """The (seq, id) a sealed cursor carries (docs/events.md), to check cursors never go back."""
    plain = seal.open(cursor, skift.Invalid(f"{cursor!r} does not open"))
    _, seq, ident, _ = plain.split(".")
    return int(seq), "" if ident == "0" else ident


async def _caught_up(sk: skift.LocalSkift) -> str:
    """A cursor past every event committed so far (read until the newest has arrived)."""
    newest = (await sk.events())[-1].id
    cursor: str | None = None
    while True:
        page = await sk.watch_events(after=cursor, wait=SOON, limit=500)
        assert page.events, "the stream stalled"
        cursor = page.cursor
        if newest in {e.id for e in page.events}:
            return cursor


async def _everything(sk: skift.LocalSkift) -> set[str]:
    """The ids of every event the stream delivers from the start, without waiting."""
    out: set[str] = set()
    cursor: str | None = None
    while True:
        page = await sk.watch_events(after=cursor, limit=500)
        out.update(e.id for e in page.events)
        cursor = page.cursor
        if not page.events:
            return out


async def test_cursor_holds_behind_inflight(pg_dsn: str) -> None:
    """T1 inserts an event and stays open, T2 commits: nothing past T1 is delivered; then both."""
    async with _handle(pg_dsn, "ada") as sk:
        p = await sk.create_project("Inflight")
        cursor = await _caught_up(sk)
        org, ada = await _ids(pg_dsn, "ada")
        async with _open_tx(pg_dsn) as t1:
            early = await _insert(t1, org, ada)  # T1 takes its xid first
            cur = await t1.execute("SELECT pg_current_xact_id()::text")
            row = await cur.fetchone()
            assert row is not None
            t1_xid = int(row[0])
            await sk.patch(p.slug, [skift.CreateNode(title="T2 commits first")])

            held = await sk.watch_events(after=cursor)
            assert held.events == ()
            assert _pos(await _seal(sk), held.cursor)[0] <= t1_xid, "the cursor stops before T1"
            # The plain listing shows T2's event already; its cursor must not pass T1.
            listed = (await sk.events())[-1]
            assert listed.node == "inflight#1"
            resumed = await sk.watch_events(after=listed.cursor)
            assert skift.ulid_str(early) not in {e.id for e in resumed.events}
            await t1.commit()

        page = await sk.watch_events(after=held.cursor, wait=SOON)
        assert [e.op for e in page.events] == ["raw_note", "create_node"]
        assert page.events[0].id == skift.ulid_str(early)
        # resuming from the listing's cursor delivers T2's event again rather than skipping T1's
        again = await sk.watch_events(after=listed.cursor, wait=SOON)
        assert [e.op for e in again.events] == ["raw_note", "create_node"]


async def test_rollback_gap_no_stall(pg_dsn: str) -> None:
    """A rolled-back event is never delivered and leaves nothing to wait on."""
    async with _handle(pg_dsn, "ada") as sk, _handle(pg_dsn, "bob") as bob:
        p = await sk.create_project("Gap")
        cursor = await _caught_up(sk)
        org, ada = await _ids(pg_dsn, "ada")
        async with _open_tx(pg_dsn) as t1:
            doomed = await _insert(t1, org, ada)
            watcher = asyncio.create_task(sk.watch_events(after=cursor, wait=timedelta(seconds=20)))
            await bob.patch(p.slug, [skift.CreateNode(title="committed")])
            await asyncio.sleep(0.3)
            assert not watcher.done(), "nothing is delivered past a transaction still open"
            await t1.rollback()
        page = await asyncio.wait_for(watcher, 10)
        assert [(e.op, e.node) for e in page.events] == [("create_node", "gap#1")]
        assert skift.ulid_str(doomed) not in await _everything(sk)


async def test_randomized_writers_and_watchers(pg_dsn: str) -> None:
    """Every committed event reaches every watcher at least once, no rolled-back one does,
    and no watcher's cursor ever goes back."""
    rng = random.Random(8)
    committed: set[str] = set()
    rolled_back: set[str] = set()
    done = asyncio.Event()

    async with contextlib.AsyncExitStack() as stack:
        ada = await stack.enter_async_context(_handle(pg_dsn, "ada"))
        p = await ada.create_project("Storm")
        start = await _caught_up(ada)
        org, ada_id = await _ids(pg_dsn, "ada")
        writers = [await stack.enter_async_context(_handle(pg_dsn, f"w{i}")) for i in range(2)]
        watchers = [await stack.enter_async_context(_handle(pg_dsn, f"v{i}")) for i in range(3)]

        async def api_writer(sk: skift.LocalSkift) -> None:
            for i in range(12):
                res = await sk.patch(p.slug, [skift.CreateNode(title=f"n{i}")])
                for e in await sk.events(ref=res.nodes[0].ref):
                    committed.add(e.id)
                await asyncio.sleep(rng.uniform(0, 0.05))

        async def raw_writer() -> None:
            for _ in range(12):
                async with _open_tx(pg_dsn) as conn:
                    ids = [await _insert(conn, org, ada_id) for _ in range(rng.randint(1, 3))]
                    await asyncio.sleep(rng.uniform(0, 0.15))  # in flight while others commit
                    if rng.random() < 0.4:
                        await conn.rollback()
                        rolled_back.update(skift.ulid_str(i) for i in ids)
                    else:
                        await conn.commit()
                        committed.update(skift.ulid_str(i) for i in ids)

        async def watcher(sk: skift.LocalSkift) -> list[skift.EventInfo]:
            seen: list[skift.EventInfo] = []
            cursor = start
            seal = await _seal(sk)
            while True:
                # Once the writers are done, read on until every committed event is in (a
                # transaction open elsewhere on the server may hold the stream back a while;
                # the gather's timeout bounds it).
                finishing = done.is_set() and committed <= {e.id for e in seen}
                page = await sk.watch_events(
                    after=cursor, limit=rng.randint(1, 7), wait=timedelta(seconds=0.2)
                )
                assert _pos(seal, page.cursor) >= _pos(seal, cursor), "a cursor never goes back"
                positions = [_pos(seal, e.cursor) for e in page.events]
                assert positions == sorted(positions), "a page is in commit order"
                seen.extend(page.events)
                cursor = page.cursor
                if finishing and not page.events:
                    return seen

        watching = [asyncio.create_task(watcher(w)) for w in watchers]
        await asyncio.gather(*(api_writer(w) for w in writers), raw_writer(), raw_writer())
        done.set()
        results = await asyncio.wait_for(asyncio.gather(*watching), 30)

    assert committed
    assert rolled_back
    for seen in results:
        ids = {e.id for e in seen}
        assert committed <= ids, f"missed {len(committed - ids)} committed events"
        assert not (rolled_back & ids), "a rolled-back event was delivered"


async def test_a_transaction_in_another_database_does_not_hold_the_stream(
    pg_dsn: str, pg_server_dsn: str
) -> None:
    """xids are cluster-wide, but a transaction open in another database (a bulk load, another
    application) can never write this database's events: watchers here are not held back by it."""
    async with _handle(pg_dsn, "ada") as sk:
        p = await sk.create_project("Elsewhere")
        cursor = await _caught_up(sk)
        async with _open_tx(pg_server_dsn) as other:
            await other.execute("SELECT pg_current_xact_id()")  # takes an xid, stays open
            await sk.patch(p.slug, [skift.CreateNode(title="written while it is open")])
            page = await sk.watch_events(after=cursor, wait=timedelta(seconds=5))
            assert [e.op for e in page.events] == ["create_node"]
            await other.rollback()
