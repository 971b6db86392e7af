"""Events partitioned by time (migration 0012, docs/operations.md): what partitioning
costs an append and a change-stream page, and what migrating a large table locks.

Per size (1M and 10M events by default), events are bulk-loaded with
``generate_series`` into a scratch database migrated up to 0011 (one table),
spread over the last two years, 200 per writing transaction (synthetic xids below
the server's, so the stream delivers them all). Measured:

- append: one event INSERT committed on its own (the statement a patch runs);
- page: ``watch_events`` of 100 from a cursor at a random position;
each on the table as it was, then after 0012 (it becomes the first partition),
then in a database partitioned by month from the start holding the same events
(24 monthly partitions). Target: partitioned within 10% of one table.

The migration is run twice on copies of the loaded database: as shipped (it builds
the unique index and checks the bound under its ACCESS EXCLUSIVE lock) and after the
documented preparation (CREATE INDEX CONCURRENTLY, NOT VALID + VALIDATE, which
block no write). A writer appending an event every 20 ms meanwhile records the
longest wait. The stream is read at five cursors before and after, and the whole
table's (xid, id) checksum compared.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import time
from collections.abc import AsyncGenerator
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql

import skift
from skift._seal import SECRET_NAME, CursorSeal
from skift._store import EventPosition
from skift._stream import encode

from ._env import Server, _admin, drop_database, with_dbname  # pyright: ignore[reportPrivateUsage]
from ._stats import Result, summary

PER_XID = 200
SPAN_DAYS = 730
LIMITS = skift.Limits(event_replay_window=timedelta(days=3650))

_LOAD = """
INSERT INTO events (id, org_id, project_id, node_id, principal_id, principal_kind,
                    identity_scheme, op, after, occurred_at, xid)
SELECT lpad(to_hex(g), 32, '0')::uuid, %(org)s, %(project)s,
       lpad(to_hex(1000000000 + g %% 10000), 32, '0')::uuid, %(principal)s, 'agent', 'token',
       'update_node', '{"title": "a title of some length"}'::jsonb,
       %(start)s::timestamptz + (g::float8 / %(n)s) * interval '730 days',
       (3 + g / 200)::text::xid8
FROM generate_series(%(lo)s::bigint, %(hi)s::bigint) AS g
"""

_APPEND = """
INSERT INTO events (id, org_id, project_id, principal_id, principal_kind, identity_scheme, op,
                    occurred_at)
VALUES (%s, %s, %s, %s, 'agent', 'token', 'raw_note', now())
"""

# the loaded events only (their synthetic xids are below every real one)
_CHECKSUM = (
    "SELECT count(*), sum(hashtextextended(xid::text || id::text, 0)) FROM events "
    "WHERE xid <= %s::text::xid8"
)


@contextlib.asynccontextmanager
async def _db(srv: Server, name: str, template: str | None = None) -> AsyncGenerator[str]:
    db = f"bench_ev_{name}_{os.getpid()}"
    drop_database(srv, db)
    with _admin(srv.dsn) as conn:
        q = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(db))
        if template:
            q = sql.SQL("{} TEMPLATE {}").format(q, sql.Identifier(template))
        conn.execute(q)
    try:
        yield with_dbname(srv.dsn, db)
    finally:
        drop_database(srv, db)


def _handle(dsn: str) -> skift.LocalSkift:
    from skift_pg import PgStore

    return skift.LocalSkift(
        PgStore(dsn, min_size=1, max_size=2, limits=LIMITS, listen=False),
        principal=skift.User("loader"),
        limits=LIMITS,
    )


async def _ids(dsn: str) -> dict[str, Any]:
    async with _handle(dsn) as sk:
        p = await sk.create_project("Events")
        org = await sk.store.ensure_org(sk.org_name)
        secret = await sk.store.secret(SECRET_NAME)
    async with await psycopg.AsyncConnection.connect(dsn) as conn:
        cur = await conn.execute("SELECT id FROM principals WHERE name = 'loader'")
        row = await cur.fetchone()
        assert row is not None
        cur = await conn.execute("SELECT id FROM projects WHERE slug = %s", (p.slug,))
        prow = await cur.fetchone()
        assert prow is not None
    return {"org": org.id, "principal": row[0], "project": prow[0], "secret": secret}


# events' secondary indexes (0001, 0005, 0011) on the table as it was before 0012; a large
# load drops them first and builds them after (a sort each, faster than row by row)
_INDEXES = {
    "events_cursor": "CREATE INDEX events_cursor ON events (org_id, xid, id)",
    "events_node": "CREATE INDEX events_node ON events (node_id, id) WHERE node_id IS NOT NULL",
    "events_project_time": "CREATE INDEX events_project_time ON events (project_id, occurred_at) "
    "WHERE project_id IS NOT NULL",
    "events_org_time": "CREATE INDEX events_org_time ON events (org_id, occurred_at) INCLUDE (xid)",
    "events_request": "CREATE INDEX events_request ON events (org_id, request_id) "
    "WHERE request_id IS NOT NULL",
}


async def _load(dsn: str, ids: dict[str, Any], n: int, *, rebuild: bool = False) -> float:
    t0 = time.perf_counter()
    chunk = 1_000_000
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        await conn.execute("SET synchronous_commit = off")
        await conn.execute("SET maintenance_work_mem = '256MB'")
        if rebuild:
            for name in _INDEXES:
                await conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(name)))
        cur = await conn.execute("SELECT now() - interval '730 days'")
        row = await cur.fetchone()
        assert row is not None
        for lo in range(1, n + 1, chunk):
            await conn.execute(
                _LOAD,
                {
                    **ids,
                    "start": row[0],
                    "n": n,
                    "lo": lo,
                    "hi": min(n, lo + chunk - 1),
                },
            )
        if rebuild:
            for ddl in _INDEXES.values():
                await conn.execute(ddl.encode())
        await conn.execute("VACUUM ANALYZE events")
    return time.perf_counter() - t0


async def _measure(
    variants: dict[str, str], ids: dict[str, dict[str, Any]], n: int, iters: int
) -> list[Result]:
    """Append and page timings for each database, interleaved (one of each in turn), so the
    machine's noise falls on all alike."""
    rng = random.Random(20)
    top = 3 + n // PER_XID
    nil = UUID(int=0)
    seqs = [rng.randint(3, top - 1) for _ in range(iters + 2)]
    pages: dict[str, list[float]] = {k: [] for k in variants}
    appends: dict[str, list[float]] = {k: [] for k in variants}
    async with contextlib.AsyncExitStack() as stack:
        handles = {k: await stack.enter_async_context(_handle(d)) for k, d in variants.items()}
        conns = {
            k: await stack.enter_async_context(
                await psycopg.AsyncConnection.connect(d, autocommit=True)
            )
            for k, d in variants.items()
        }
        for i, seq in enumerate(seqs):
            for k, sk in handles.items():
                own = ids[k]
                seal = CursorSeal(own["secret"], own["org"])
                cursor = encode(EventPosition(seq=seq, id=nil), datetime.now(UTC), seal)
                t0 = time.perf_counter()
                got = await sk.watch_events(after=cursor, limit=100)
                t1 = time.perf_counter()
                assert len(got.events) == 100
                await conns[k].execute(
                    _APPEND, (skift.new_id(), own["org"], own["project"], own["principal"])
                )
                t2 = time.perf_counter()
                if i >= 2:  # warm-up
                    pages[k].append(t1 - t0)
                    appends[k].append(t2 - t1)
    size = f"{n // 1_000_000}M" if n >= 1_000_000 else f"{n // 1000}k"
    out: list[Result] = []
    for k in variants:
        out.append(
            Result("events", f"append, {size}, {k}", summary(appends[k]), "one INSERT, committed")
        )
        out.append(Result("events", f"page of 100, {size}, {k}", summary(pages[k]), "watch_events"))
    base_page = summary(pages[next(iter(variants))])["p50_ms"]
    base_append = summary(appends[next(iter(variants))])["p50_ms"]
    for k in list(variants)[1:]:
        out.append(
            Result(
                "ratio",
                f"events {size}: {k} / one table",
                {
                    "page_p50": round(summary(pages[k])["p50_ms"] / base_page, 3),
                    "append_p50": round(summary(appends[k])["p50_ms"] / base_append, 3),
                },
                "target within 1.10",
            )
        )
    return out


async def _sample(dsn: str, ids: dict[str, Any], n: int) -> list[list[str]]:
    """The first 500 events the stream delivers from five fixed cursors."""
    seal = CursorSeal(ids["secret"], ids["org"])
    out: list[list[str]] = []
    async with _handle(dsn) as sk:
        for k in range(5):
            seq = 3 + (n // PER_XID) * k // 5
            cursor = encode(EventPosition(seq=seq, id=UUID(int=0)), datetime.now(UTC), seal)
            got: list[str] = []
            while len(got) < 500:
                page = await sk.watch_events(after=cursor, limit=100)
                if not page.events:
                    break
                got += [e.id for e in page.events]
                cursor = page.cursor
            out.append(got)
    return out


async def _checksum(dsn: str, n: int) -> tuple[int, int]:
    async with await psycopg.AsyncConnection.connect(dsn) as conn:
        cur = await conn.execute(_CHECKSUM, (str(3 + n // PER_XID),))
        row = await cur.fetchone()
        assert row is not None
        return int(row[0]), int(row[1])


async def _writer(dsn: str, ids: dict[str, Any], stop: asyncio.Event) -> float:
    """Append an event every 20 ms until stopped; the longest an append waited (s)."""
    worst = 0.0
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        while not stop.is_set():
            t0 = time.perf_counter()
            await conn.execute(
                _APPEND, (skift.new_id(), ids["org"], ids["project"], ids["principal"])
            )
            worst = max(worst, time.perf_counter() - t0)
            await asyncio.sleep(0.02)
    return worst


async def _migrate(dsn: str, ids: dict[str, Any], *, prepare: bool) -> dict[str, Any]:
    import skift_pg

    out: dict[str, Any] = {}
    stop = asyncio.Event()
    writer = asyncio.create_task(_writer(dsn, ids, stop))
    await asyncio.sleep(0.2)
    if prepare:
        t0 = time.perf_counter()
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
            await conn.execute(
                "CREATE UNIQUE INDEX CONCURRENTLY events_id_time ON events (id, occurred_at)"
            )
            out["prepare_index_s"] = round(time.perf_counter() - t0, 2)
            t1 = time.perf_counter()
            await conn.execute(
                sql.SQL(
                    "ALTER TABLE events ADD CONSTRAINT events_partition_bound "
                    "CHECK (occurred_at < {}) NOT VALID"
                ).format(sql.Literal(await _next_month(conn)))
            )
            await conn.execute("ALTER TABLE events VALIDATE CONSTRAINT events_partition_bound")
            out["prepare_bound_s"] = round(time.perf_counter() - t1, 2)
    t0 = time.perf_counter()
    applied = await skift_pg.migrate(dsn)
    out["migration_s"] = round(time.perf_counter() - t0, 3)
    assert applied == ["0012_event_partitions.sql"], applied
    await asyncio.sleep(0.2)
    stop.set()
    out["writer_longest_wait_s"] = round(await writer, 3)
    return out


async def _next_month(conn: psycopg.AsyncConnection[Any]) -> Any:
    cur = await conn.execute("SELECT date_trunc('month', now(), 'UTC') + interval '1 month'")
    row = await cur.fetchone()
    assert row is not None
    return row[0]


@contextlib.asynccontextmanager
async def _native(
    srv: Server, n: int, every: str
) -> AsyncGenerator[tuple[str, dict[str, Any], int]]:
    """The same events in a database partitioned by ``every`` from the start."""
    import skift_pg

    async with _db(srv, "native_" + every.replace(" ", "")) as dsn:
        await skift_pg.migrate(dsn, skip=(12,))
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
            cur = await conn.execute(
                "SELECT date_trunc('month', now() - interval '730 days', 'UTC'), now()"
            )
            row = await cur.fetchone()
            assert row is not None
            start: datetime = row[0]
            now: datetime = row[1]
            await conn.execute(
                sql.SQL(
                    "ALTER TABLE events ADD CONSTRAINT events_partition_bound CHECK (occurred_at < {})"
                ).format(sql.Literal(start))
            )
        await skift_pg.migrate(dsn)
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
            await conn.execute("UPDATE event_partitioning SET every = %s::interval", (every,))
            cur = await conn.execute(
                "SELECT name FROM skift_event_partitions() WHERE lo IS NOT NULL"
            )
            for (name,) in await cur.fetchall():
                await conn.execute(sql.SQL("DROP TABLE {}").format(sql.Identifier(name)))
            lo = start
            while lo <= now:
                cur = await conn.execute("SELECT %s::timestamptz + %s::interval", (lo, every))
                row = await cur.fetchone()
                assert row is not None
                hi: datetime = row[0]
                name = f"events_{lo:%Y%m%d}"
                await conn.execute(
                    sql.SQL(
                        "CREATE TABLE {} (LIKE events INCLUDING DEFAULTS INCLUDING CONSTRAINTS)"
                    ).format(sql.Identifier(name))
                )
                await conn.execute(
                    "SELECT skift_attach_event_partition(%s, %s, %s)", (name, lo, hi)
                )
                lo = hi
            await conn.execute("SELECT skift_extend_event_partitions(now())")
            cur = await conn.execute("SELECT count(*) FROM skift_event_partitions()")
            row = await cur.fetchone()
            parts = int(row[0]) if row else 0
        ids = await _ids(dsn)
        await _load(dsn, ids, n)
        yield dsn, ids, parts


async def scenarios(
    srv: Server,
    sizes: tuple[int, ...],
    iters: int,
    *,
    native: tuple[str, ...] = ("1 month", "1 year"),
    native_upto: int = 2_000_000,
) -> list[Result]:
    import skift_pg

    out: list[Result] = []
    for n in sizes:
        size = f"{n // 1_000_000}M" if n >= 1_000_000 else f"{n // 1000}k"
        async with contextlib.AsyncExitStack() as stack:
            flat = await stack.enter_async_context(_db(srv, "flat"))
            await skift_pg.migrate(flat, skip=(12,))
            ids = await _ids(flat)
            loaded = await _load(flat, ids, n, rebuild=True)
            out.append(Result("events", f"load {size}", {"seconds": round(loaded, 1)}, "bench"))
            before = await _sample(flat, ids, n)
            summed = await _checksum(flat, n)
            template = flat.rsplit("/", 1)[1]
            async with _db(srv, "shipped", template=template) as copy:
                m = await _migrate(copy, ids, prepare=False)
                same = await _sample(copy, ids, n) == before
                m["stream_same"] = same and await _checksum(copy, n) == summed
                out.append(Result("events", f"migrate 0012, {size}, as shipped", m, "locks"))
            prepared = await stack.enter_async_context(_db(srv, "prepared", template=template))
            m = await _migrate(prepared, ids, prepare=True)
            same = await _sample(prepared, ids, n) == before
            m["stream_same"] = same and await _checksum(prepared, n) == summed
            out.append(Result("events", f"migrate 0012, {size}, prepared", m, "locks"))
            variants = {"one table": flat, "after 0012 (one partition)": prepared}
            all_ids = {"one table": ids, "after 0012 (one partition)": ids}
            for every in native if n <= native_upto else ():  # more loads: smaller sizes only
                got, got_ids, parts = await stack.enter_async_context(_native(srv, n, every))
                label = f"by {every.split()[1]} ({parts} partitions)"
                variants[label] = got
                all_ids[label] = got_ids
            out += await _measure(variants, all_ids, n, iters)
    return out
