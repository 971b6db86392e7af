"""Archiving old event partitions to a file and attaching them back (docs/operations.md).

Events are the audit record and are never deleted by skift; an operator may move
partitions that only the audit still reads out of the database and bring them back:

    skift admin events archive --before 2026-01-01 --to events-2025.skiftev
    skift admin events attach events-2025.skiftev

The archive is a gzip file: a JSON header line, then per partition a JSON line
naming it and its bounds, its rows in COPY text format (one line each, in stream
order) and COPY's end marker ``\\.``. A partition is written to the file while
attached, the file synced, and only then is it detached and dropped (one
transaction each, a brief ACCESS EXCLUSIVE lock on events); a failure on the way
leaves it attached. An event written later for an archived range lands in the
default partition and moves into the partition when it is attached back.
Positions (xid, id) are kept, so the change stream reads attached events where
they were.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from skift import Invalid, Unavailable

from ._queries import q

__all__ = ["ArchivedPartition", "archive_events", "attach_events", "event_partitions"]

_FORMAT = "skift-events-archive"
_END = b"\\.\n"


@dataclass(frozen=True)
class ArchivedPartition:
    """One partition written to (or read from) an archive; ``lo`` None: from the beginning."""

    name: str
    lo: datetime | None
    hi: datetime
    rows: int


Conn = psycopg.AsyncConnection[Any]


async def event_partitions(conn: Conn) -> list[tuple[str, datetime | None, datetime | None, bool]]:
    """(name, lo, hi, is_default) of every partition of events, oldest first."""
    cur = await conn.execute(q("event_partition_list"))
    return [(r[0], r[1], r[2], r[3]) for r in await cur.fetchall()]


async def _columns(conn: Conn) -> list[str]:
    cur = await conn.execute(q("event_columns"))
    return [r[0] for r in await cur.fetchall()]


async def archive_events(
    dsn: str, before: datetime, to: Path, *, dry_run: bool = False
) -> list[ArchivedPartition]:
    """Detach every event partition that ends at or before ``before`` (never the one
    receiving today's events, nor the default), write them to ``to`` and drop them.

    With ``dry_run`` nothing is detached or written; the partitions and their row
    counts are what would be archived. Refuses to overwrite an existing file. A
    database error is :class:`~skift.Unavailable` naming it.
    """
    try:
        return await _archive(dsn, before, to, dry_run=dry_run)
    except psycopg.Error as exc:
        raise _unavailable("archive", exc) from exc


def _unavailable(doing: str, exc: psycopg.Error) -> Unavailable:
    return Unavailable(
        f"cannot {doing} events: {exc}",
        next="Check the DSN and the database's log; nothing was dropped that is not in the file.",
    )


async def _archive(
    dsn: str, before: datetime, to: Path, *, dry_run: bool
) -> list[ArchivedPartition]:
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        cur = await conn.execute(q("database_now"))
        row = await cur.fetchone()
        assert row is not None
        now: datetime = row[0]
        chosen = [
            (name, lo, hi)
            for name, lo, hi, is_default in await event_partitions(conn)
            if not is_default and hi is not None and hi <= before and hi <= now
        ]
        if dry_run:
            out: list[ArchivedPartition] = []
            for name, lo, hi in chosen:
                cur = await conn.execute(
                    sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(name))
                )
                n = await cur.fetchone()
                out.append(ArchivedPartition(name, lo, hi, int(n[0]) if n else 0))
            return out
        if not chosen:
            return []
        if await asyncio.to_thread(to.exists):
            raise Invalid(
                f"{to} exists; an archive is never overwritten",
                next="Name a new file with --to.",
            )
        columns = await _columns(conn)
        done: list[ArchivedPartition] = []
        tmp = to.with_name(f".{to.name}.partial")
        with tmp.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb") as gz:
            gz.write(_line({"format": _FORMAT, "version": 1, "columns": columns}))
            for name, lo, hi in chosen:
                rows = await _write(conn, gz, name, lo, hi, columns)
                done.append(ArchivedPartition(name, lo, hi, rows))
            gz.close()
            raw.flush()
            os.fsync(raw.fileno())
        tmp.rename(to)
        _sync_dir(to.parent)
        # Only now that the file is durable: detach and drop each, unless it changed since
        # it was written (then it stays attached and the archive is refused).
        for p in done:
            async with conn.transaction():
                ident = sql.Identifier(p.name)
                await conn.execute(sql.SQL("ALTER TABLE events DETACH PARTITION {}").format(ident))
                cur = await conn.execute(sql.SQL("SELECT count(*) FROM {}").format(ident))
                n = await cur.fetchone()
                if n is None or int(n[0]) != p.rows:
                    raise Invalid(
                        f"partition {p.name} gained events while it was archived; it stays "
                        f"attached and {to} is incomplete",
                        next="Remove the file and archive again.",
                    )
                await conn.execute(sql.SQL("DROP TABLE {}").format(ident))
        return done


async def _write(
    conn: Conn, gz: gzip.GzipFile, name: str, lo: datetime | None, hi: datetime, columns: list[str]
) -> int:
    gz.write(_line({"partition": name, "lo": lo.isoformat() if lo else None, "hi": hi.isoformat()}))
    query = sql.SQL("COPY (SELECT {} FROM {} ORDER BY xid, id) TO STDOUT").format(
        sql.SQL(", ").join(sql.Identifier(c) for c in columns), sql.Identifier(name)
    )
    rows = 0
    async with conn.cursor() as cur, cur.copy(query) as copy:
        async for chunk in copy:
            data = bytes(chunk)
            rows += data.count(b"\n")
            gz.write(data)
    gz.write(_END)
    return rows


async def attach_events(dsn: str, source: Path) -> list[ArchivedPartition]:
    """Attach the partitions archived in ``source`` back to events, each in a transaction
    of its own (the default partition's events of its range move into it). A database
    error (a partition already there, say) is :class:`~skift.Unavailable` naming it."""
    try:
        return await _attach(dsn, source)
    except psycopg.Error as exc:
        raise _unavailable("attach", exc) from exc


async def _attach(dsn: str, source: Path) -> list[ArchivedPartition]:
    out: list[ArchivedPartition] = []
    with gzip.open(source, "rb") as gz:
        header = _read_json(gz, source)
        if header.get("format") != _FORMAT:
            raise Invalid(f"{source} is not a skift events archive", next="Name an archive file.")
        columns: list[str] = header["columns"]
        async with await psycopg.AsyncConnection.connect(dsn) as conn:
            if sorted(await _columns(conn)) != sorted(columns):
                raise Invalid(
                    f"{source}'s events have other columns than this database's",
                    next="Attach it to a database of the same skift version.",
                )
            while True:
                line = gz.readline()
                if not line:
                    break
                part = json.loads(line)
                name: str = part["partition"]
                lo = datetime.fromisoformat(part["lo"]) if part["lo"] else None
                hi = datetime.fromisoformat(part["hi"])
                async with conn.transaction():
                    await conn.execute(
                        sql.SQL(
                            "CREATE TABLE {} (LIKE events INCLUDING DEFAULTS INCLUDING CONSTRAINTS)"
                        ).format(sql.Identifier(name))
                    )
                    query = sql.SQL("COPY {} ({}) FROM STDIN").format(
                        sql.Identifier(name),
                        sql.SQL(", ").join(sql.Identifier(c) for c in columns),
                    )
                    rows = 0
                    async with conn.cursor() as cur, cur.copy(query) as copy:
                        while True:
                            data = gz.readline()
                            if not data:
                                raise Invalid(f"{source} ends inside partition {name}")
                            if data == _END:
                                break
                            rows += 1
                            await copy.write(data)
                    await conn.execute(
                        q("attach_event_partition"), {"name": name, "lo": lo, "hi": hi}
                    )
                out.append(ArchivedPartition(name, lo, hi, rows))
    return out


def _line(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, separators=(",", ":")).encode() + b"\n"


def _read_json(gz: gzip.GzipFile, source: Path) -> dict[str, Any]:
    line = gz.readline()
    try:
        doc = json.loads(line)
    except ValueError:
        doc = None
    if not isinstance(doc, dict):
        raise Invalid(f"{source} is not a skift events archive", next="Name an archive file.")
    return doc  # type: ignore[return-value]


def _sync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
