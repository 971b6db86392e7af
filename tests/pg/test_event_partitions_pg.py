"""Events partitioned by time (migrations/0012, docs/operations.md) on real PostgreSQL: the
change stream, a node's history and authorship read across partition boundaries; the
default partition takes what no partition covers and hands it over when one is created;
old partitions archived to a file and attached back read as before; and the migration
from an unpartitioned table keeps every event where the stream had it."""

from __future__ import annotations

import contextlib
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import psycopg
import pytest

import skift
from skift_pg import PgStore, archive_events, attach_events, migrate

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator
    from pathlib import Path

pytestmark = pytest.mark.pg

# long enough that moving the test clock by months never expires a cursor here
_LIMITS = skift.Limits(event_replay_window=timedelta(days=3650))


@contextlib.asynccontextmanager
async def _handle(dsn: str) -> AsyncGenerator[skift.LocalSkift]:
    async with skift.LocalSkift(
        PgStore(dsn, min_size=1, max_size=2, limits=_LIMITS),
        principal=skift.User("ada"),
        limits=_LIMITS,
    ) as sk:
        yield sk


async def _sql(dsn: str, query: str, *args: Any) -> list[tuple[Any, ...]]:
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        cur = await conn.execute(query.encode(), args or None)
        return await cur.fetchall() if cur.description else []


async def _now(dsn: str) -> datetime:
    return (await _sql(dsn, "SELECT now()"))[0][0]


async def _ranges(dsn: str) -> list[tuple[str, datetime | None, datetime]]:
    rows = await _sql(
        dsn, "SELECT name, lo, hi FROM skift_event_partitions() WHERE NOT is_default ORDER BY hi"
    )
    return [(r[0], r[1], r[2]) for r in rows]


async def _where(dsn: str) -> dict[str, str]:
    """Each event's partition, by event id (the stream's spelling)."""
    rows = await _sql(dsn, "SELECT id, tableoid::regclass::text FROM events")
    return {skift.ulid_str(r[0]): r[1] for r in rows}


async def _stream(sk: skift.LocalSkift, *, limit: int) -> list[tuple[str, str]]:
    """(id, op) of every event from the start, in stream order, read in pages of ``limit``."""
    out: list[tuple[str, str]] = []
    cursor: str | None = None
    while True:
        page = await sk.watch_events(after=cursor, limit=limit)
        out.extend((e.id, e.op) for e in page.events)
        cursor = page.cursor
        if not page.events:
            return out


async def _write_across(dsn: str, sk: skift.LocalSkift) -> tuple[str, list[str]]:
    """One node updated inside each of the first three month partitions (and before them);
    returns the project slug and the partitions written to, in time order."""
    # monthly partitions (a year by default): the empty ones ahead are cut again
    await _sql(dsn, "UPDATE event_partitioning SET every = '1 month'")
    for name, lo, _ in await _ranges(dsn):
        if lo is not None:
            await _sql(dsn, f"DROP TABLE {name}")
    await _sql(dsn, "SELECT skift_extend_event_partitions(now())")
    now = await _now(dsn)
    months = [(name, lo) for name, lo, _ in await _ranges(dsn) if lo is not None][:3]
    assert len(months) == 3, "three months ahead"
    p = await sk.create_project("Across")
    res = await sk.patch(p.slug, [skift.CreateNode(title="spans", body="v0")])
    ref = res.nodes[0].ref
    for i, (_, lo) in enumerate(months):
        sk.store.set_clock_offset(lo + timedelta(days=2) - now)
        await sk.patch(p.slug, [skift.UpdateNode(node=ref, body=f"v{i + 1}")])
        await sk.patch(p.slug, [skift.CreateNode(title=f"in month {i + 1}")])
    sk.store.set_clock_offset(timedelta())
    return p.slug, [name for name, _ in months]


async def test_stream_history_and_authors_across_three_partitions(pg_dsn: str) -> None:
    async with _handle(pg_dsn) as sk:
        slug, months = await _write_across(pg_dsn, sk)
        where = await _where(pg_dsn)
        assert set(months) <= set(where.values())
        everything = await _stream(sk, limit=500)
        # small pages: cursors that fall inside one partition and resume in the next
        paged = await _stream(sk, limit=2)
        assert paged == everything
        assert len(everything) == len(where)
        assert {where[i] for i, _ in everything} >= {*months, next(iter(where.values()))}
        # a cursor taken in the first partition reads on through the other three
        first = await sk.watch_events(limit=3)
        rest = await _stream_after(sk, first.cursor)
        assert [e.id for e in first.events] + [i for i, _ in rest] == [i for i, _ in everything]

        # a node's history (Explain's) and who wrote its body, from the newest partition
        history = await sk.events(ref=f"{slug}#1")
        assert [e.op for e in history] == ["create_node"] + ["update_node"] * 3
        assert len({where[e.id] for e in history}) == 4
        node = await sk.get(f"{slug}#1")
        assert node.body == "v3"
        assert node.human_written
        assert (await sk.explain(f"{slug}#1")).ref == f"{slug}#1"

        # human_written: an agent's node a person touched in a later partition
        bot = sk.acting_as(skift.Agent("bot"))
        made = await bot.patch(
            slug, [skift.CreateNode(title="by bot"), skift.CreateNode(title="b")]
        )
        touched, untouched = (n.ref for n in made.nodes)
        now = await _now(pg_dsn)
        lo = (await _ranges(pg_dsn))[2][1]
        assert lo is not None
        sk.store.set_clock_offset(lo + timedelta(days=1) - now)
        await sk.patch(slug, [skift.UpdateNode(node=touched, title="touched")])
        sk.store.set_clock_offset(timedelta())
        assert (await sk.get(touched)).human_written
        assert not (await sk.get(untouched)).human_written


async def _stream_after(sk: skift.LocalSkift, cursor: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    while True:
        page = await sk.watch_events(after=cursor, limit=2)
        out.extend((e.id, e.op) for e in page.events)
        cursor = page.cursor
        if not page.events:
            return out


async def test_an_event_no_partition_covers_lands_in_the_default_then_moves(
    pg_dsn: str,
) -> None:
    async with _handle(pg_dsn) as sk:
        p = await sk.create_project("Far")
        before = await _stream(sk, limit=100)
        sk.store.set_clock_offset(timedelta(days=3 * 365))  # far past every partition
        res = await sk.patch(p.slug, [skift.CreateNode(title="from the future")])
        far = (await sk.events(ref=res.nodes[0].ref))[0].id
        assert (await _where(pg_dsn))[far] == "events_default"
        sk.store.set_clock_offset(timedelta())
        everything = await _stream(sk, limit=100)
        assert everything[: len(before)] == before

        # the schedule's prune creates the partition (and those ahead): the event moves in
        sk.store.set_clock_offset(timedelta(days=3 * 365))
        report = await skift.prune(sk.store)
        sk.store.set_clock_offset(timedelta())
        assert report.partitions_created >= 1
        moved = (await _where(pg_dsn))[far]
        assert moved.startswith("events_2")
        assert moved != "events_default"
        assert await _stream(sk, limit=100) == everything
        sk.store.set_clock_offset(timedelta(days=3 * 365))
        again = await skift.prune(sk.store)
        assert again.partitions_created == 0  # nothing more to create until time passes


async def test_partitions_archived_to_a_file_and_attached_back_read_as_before(
    pg_empty_dsn: str, tmp_path: Path
) -> None:
    """A database partitioned four months ago (an operator's prepared bound): the table
    before it and two past months are archived, then attached back."""
    dsn = pg_empty_dsn
    await migrate(dsn, skip=(12,))
    now = await _now(dsn)
    cutoff = (now - timedelta(days=120)).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    await _sql(
        dsn,
        "ALTER TABLE events ADD CONSTRAINT events_partition_bound "
        f"CHECK (occurred_at < '{cutoff.isoformat()}')",
    )
    assert await migrate(dsn) == ["0012_event_partitions.sql"]
    # monthly partitions from the cut-off on (a year by default: the empty ones are cut again)
    await _sql(dsn, "UPDATE event_partitioning SET every = '1 month'")
    for name, lo, _ in await _ranges(dsn):
        if lo is not None:
            await _sql(dsn, f"DROP TABLE {name}")
    lo, present = cutoff, now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    while lo < present:
        hi = (lo + timedelta(days=32)).replace(day=1)
        name = f"events_{lo:%Y%m%d}"
        await _sql(
            dsn, f"CREATE TABLE {name} (LIKE events INCLUDING DEFAULTS INCLUDING CONSTRAINTS)"
        )
        await _sql(dsn, "SELECT skift_attach_event_partition(%s, %s, %s)", name, lo, hi)
        lo = hi
    await _sql(dsn, "SELECT skift_extend_event_partitions(now())")
    ranges = await _ranges(dsn)
    assert ranges[0][1] is None
    assert ranges[0][2] == cutoff
    months = ranges[1:4]
    assert all(hi <= now for _, _, hi in months)
    async with _handle(dsn) as sk:
        p = await sk.create_project("Old")
        sk.store.set_clock_offset(cutoff - timedelta(days=10) - now)
        res = await sk.patch(p.slug, [skift.CreateNode(title="before partitions")])
        ref = res.nodes[0].ref
        for i, (_, lo, _) in enumerate(months):
            assert lo is not None
            sk.store.set_clock_offset(lo + timedelta(days=3) - now)
            await sk.patch(p.slug, [skift.UpdateNode(node=ref, body=f"month {i}")])
        sk.store.set_clock_offset(timedelta())
        await sk.patch(p.slug, [skift.UpdateNode(node=ref, body="today")])
        everything = await _stream(sk, limit=2)
        history = [e.id for e in await sk.events(ref=ref)]
        where = await _where(dsn)
        assert len({where[i] for i in history}) == 5

        before = months[1][2]  # the end of the second month: the first three partitions go
        target = tmp_path / "old.skiftev"
        dry = await archive_events(dsn, before, target, dry_run=True)
        assert [a.name for a in dry] == [r[0] for r in ranges[:3]]
        assert not target.exists()
        done = await archive_events(dsn, before, target)
        assert [(a.name, a.rows) for a in done] == [(a.name, a.rows) for a in dry]
        assert target.exists()
        gone = {i for i, part in where.items() if part in {a.name for a in done}}
        assert len(gone) == sum(a.rows for a in done) > 0
        assert await _stream(sk, limit=2) == [e for e in everything if e[0] not in gone]
        with pytest.raises(skift.Invalid):  # an archive is never overwritten
            await archive_events(dsn, months[2][2], target)

        # an event written meanwhile for an archived range waits in the default partition
        sk.store.set_clock_offset(months[0][1] + timedelta(days=5) - now)  # type: ignore[operator]
        await sk.patch(p.slug, [skift.UpdateNode(node=ref, body="late")])
        sk.store.set_clock_offset(timedelta())
        late = (await sk.events(ref=ref))[-1].id
        assert (await _where(dsn))[late] == "events_default"

        back = await attach_events(dsn, target)
        assert [(a.name, a.rows) for a in back] == [(a.name, a.rows) for a in done]
        now_where = await _where(dsn)
        assert all(now_where[i] == where[i] for i in where)
        assert now_where[late] == months[0][0]  # moved in when its partition came back
        streamed = await _stream(sk, limit=2)
        assert [e for e in streamed if e[0] != late] == everything
        assert [e.id for e in await sk.events(ref=ref)] == [*history, late]


async def test_migration_from_an_unpartitioned_table_keeps_the_stream(pg_empty_dsn: str) -> None:
    """The stream reads the same events, in the same order, before and after 0012."""
    dsn = pg_empty_dsn
    await migrate(dsn, skip=(12,))
    async with _handle(dsn) as sk:
        p = await sk.create_project("Before")
        for i in range(5):
            await sk.patch(p.slug, [skift.CreateNode(title=f"n{i}")])
        sk.store.set_clock_offset(timedelta(days=-400))  # an old event too
        await sk.patch(p.slug, [skift.CreateNode(title="old")])
        sk.store.set_clock_offset(timedelta())
        before = await _stream(sk, limit=3)
        cursor = (await sk.watch_events(limit=4)).cursor
        after_cursor = await _stream_after(sk, cursor)
    kind = "SELECT relkind::text FROM pg_class WHERE relname = 'events'"
    assert await _sql(dsn, kind) == [("r",)]
    assert await migrate(dsn) == ["0012_event_partitions.sql"]
    assert await _sql(dsn, kind) == [("p",)]
    async with _handle(dsn) as sk:
        assert await _stream(sk, limit=3) == before
        assert await _stream_after(sk, cursor) == after_cursor  # an old cursor still reads
        p2 = await sk.create_project("After")
        await sk.patch(p2.slug, [skift.CreateNode(title="new")])
        assert len(await _stream(sk, limit=100)) == len(before) + 2
    assert await migrate(dsn) == []
