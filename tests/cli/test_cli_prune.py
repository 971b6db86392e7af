"""``skift admin prune`` through a real process over a real PostgreSQL database."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest
from cli_harness import SKIFT

import skift

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.pg


def _prune(dsn: str, *flags: str) -> Any:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKIFT_")}
    proc = subprocess.run(
        [str(SKIFT), "admin", "prune", "--dsn", dsn, "--json", *flags],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


async def test_prune_removes_old_request_records_and_a_repeat_is_refused(pg_dsn: str) -> None:
    async with skift.open(pg_dsn) as sk:
        p = await sk.create_project("Old")
        sk.store.set_clock_offset(timedelta(days=-40))  # written forty days ago
        ops: list[skift.Op] = [skift.CreateNode(title="long ago")]
        await sk.patch(p.slug, ops, request_id="cli-1")
        sk.store.set_clock_offset(timedelta(0))

        dry = _prune(pg_dsn, "--dry-run")
        assert (dry["ran"], dry["dry_run"]) == (True, True)
        assert dry["requests"] >= 1
        assert await sk.patch(p.slug, ops, request_id="cli-1")  # still answered from its record

        done = _prune(pg_dsn)
        assert (done["dry_run"], done["requests"]) == (False, dry["requests"])
        assert _prune(pg_dsn)["requests"] == 0
        with pytest.raises(skift.IdempotencyMismatch):
            await sk.patch(p.slug, ops, request_id="cli-1")
        last = await sk.store.last_prune()
        assert last is not None
        assert last.requests == 0


def test_a_bad_window_is_a_usage_error(pg_dsn: str) -> None:
    proc = subprocess.run(
        [str(SKIFT), "admin", "prune", "--dsn", pg_dsn, "--requests-days", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "--requests-days" in proc.stderr


def _stats(dsn: str, *flags: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKIFT_")}
    proc = subprocess.run(
        [str(SKIFT), "admin", "stats", "--dsn", dsn, *flags],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


async def test_stats_names_tables_partitions_deliveries_and_the_last_prune(pg_dsn: str) -> None:
    async with skift.open(pg_dsn) as sk:
        await sk.create_project("Sized")
    _prune(pg_dsn)
    doc = json.loads(_stats(pg_dsn, "--json"))
    assert "events" in {t["name"] for t in doc["tables"]}
    parts = {t["name"] for t in doc["event_partitions"]}
    assert "events_default" in parts
    assert any(t["bound"].startswith("FOR VALUES FROM (MINVALUE)") for t in doc["event_partitions"])
    assert doc["deliveries"]["oldest_parked_at"] is None
    assert doc["last_prune"]["requests"] == 0
    text = _stats(pg_dsn)
    assert f"events: {len(parts)} partitions" in text
    assert "last prune: " in text


def _admin(*argv: str) -> Any:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKIFT_")}
    proc = subprocess.run(
        [str(SKIFT), "admin", *argv, "--json"], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


async def test_events_archive_and_attach_back(pg_empty_dsn: str, tmp_path: Path) -> None:
    """A database partitioned since two months ago: its first partition (every event before
    then) is archived to a file and attached back."""
    import psycopg

    from skift_pg import migrate

    dsn = pg_empty_dsn
    await migrate(dsn, skip=(12,))
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT date_trunc('month', now() - interval '40 days', 'UTC')::text"
        )
        row = await cur.fetchone()
        assert row is not None
        cutoff = row[0]
        await conn.execute(
            "ALTER TABLE events ADD CONSTRAINT events_partition_bound "
            f"CHECK (occurred_at < '{cutoff}')".encode()
        )
    await migrate(dsn)
    async with skift.open(dsn) as sk:
        p = await sk.create_project("Aged")
        sk.store.set_clock_offset(timedelta(days=-90))  # before the cut-off
        await sk.patch(p.slug, [skift.CreateNode(title="old")])
        sk.store.set_clock_offset(timedelta(0))
        await sk.patch(p.slug, [skift.CreateNode(title="new")])
        before = [e.id for e in await sk.events()]

        target = tmp_path / "old.skiftev"
        day = cutoff[:10]
        dry = _admin(
            "events", "archive", "--before", day, "--to", str(target), "--dsn", dsn, "--dry-run"
        )
        assert dry["dry_run"]
        [part] = dry["partitions"]
        assert part["name"] == f"events_before_{day.replace('-', '')}"
        assert part["events"] == 1  # the old node (the project came today)
        assert not target.exists()
        done = _admin("events", "archive", "--before", day, "--to", str(target), "--dsn", dsn)
        assert done["partitions"] == dry["partitions"]
        remaining = [e.id for e in await sk.events()]
        assert len(remaining) == len(before) - part["events"]

        back = _admin("events", "attach", str(target), "--dsn", dsn)
        assert back["partitions"] == dry["partitions"]
        assert [e.id for e in await sk.events()] == before
