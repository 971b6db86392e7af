"""An operator's maintenance of the database itself: ``skift admin prune`` and ``stats``.

These commands open the PostgreSQL database directly (like ``skift migrate``),
not a server: they act on every organization at once.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

import click

from .._base import Failure, app, global_options, group, usage_error

if TYPE_CHECKING:
    from skift import Store
    from skift_server.database import ArchivedPartition

T = TypeVar("T")


@group("Setup and admin")
@global_options
def admin() -> None:
    """An operator's maintenance of the database (every organization): prune, stats."""


@admin.command("prune")
@click.option(
    "--dsn",
    metavar="DSN",
    help="PostgreSQL to prune (default: SKIFT_DSN, else the embedded cluster).",
)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False),
    help="The embedded cluster's directory (without --dsn).",
)
@click.option("--dry-run", is_flag=True, help="Count what would be removed; remove nothing.")
@click.option(
    "--requests-days",
    type=click.FloatRange(min=1),
    default=30,
    show_default=True,
    help="Keep idempotency records (request ids' results) this many days.",
)
@click.option(
    "--claim-cursors-days",
    type=click.FloatRange(min=1),
    default=90,
    show_default=True,
    help="Keep claim cursors unused for this many days.",
)
@click.option(
    "--blob-grace-hours",
    type=click.FloatRange(min=1),
    default=24,
    show_default=True,
    help="Sweep blobs no artifact names once untouched (uploaded or attached) this many hours.",
)
@global_options
def admin_prune(
    dsn: str | None,
    data_dir: str | None,
    dry_run: bool,
    requests_days: float,
    claim_cursors_days: float,
    blob_grace_hours: float,
) -> None:
    """Remove what is not audit past its window: idempotency records, unused claim cursors, blobs.

    Events are never removed. A request id whose record is gone is refused if it
    comes again (never applied twice). `skift serve` runs this every hour too; two
    runs over one database never overlap.
    Example: skift admin prune --dsn postgresql:///skift --dry-run
    """
    import asyncio

    import skift

    a = app()
    limits = skift.Limits(
        request_retention=timedelta(days=requests_days),
        claim_cursor_retention=timedelta(days=claim_cursors_days),
        blob_grace=timedelta(hours=blob_grace_hours),
    )
    try:
        report = asyncio.run(
            _on_store(dsn, data_dir, lambda st: skift.prune(st, limits=limits, dry_run=dry_run))
        )
    except skift.SkiftError as exc:
        raise Failure(exc) from None
    except OSError as exc:
        raise Failure(skift.Unavailable(f"cannot prune: {exc}", next="Check the DSN.")) from None
    shown: dict[str, Any] = {
        "ran": report.ran,
        "dry_run": report.dry_run,
        "at": report.at.isoformat(),
        "requests": report.requests,
        "claim_cursors": report.claim_cursors,
        "requests_before": report.requests_before.isoformat(),
        "claim_cursors_before": report.claim_cursors_before.isoformat(),
        "partitions_created": report.partitions_created,
        "blobs": report.blobs,
        "blob_files": report.blob_files,
    }
    if a.json:
        a.emit(shown)
    elif not report.ran:
        click.echo("another prune is running over this database; nothing done")
    else:
        verb = "would remove" if dry_run else "removed"
        click.echo(
            f"{verb}: {report.requests} request records (before "
            f"{report.requests_before:%Y-%m-%d %H:%M}), {report.claim_cursors} claim cursors "
            f"(unused since before {report.claim_cursors_before:%Y-%m-%d %H:%M})"
        )
        click.echo(
            f"{verb}: {report.blobs} blobs no artifact names (untouched for "
            f"{blob_grace_hours:g} hours), {report.blob_files} files of their bytes"
        )
        if report.partitions_created:
            click.echo(f"created {report.partitions_created} event partitions ahead")


async def _on_store(
    dsn: str | None, data_dir: str | None, run: Callable[[Store], Awaitable[T]]
) -> T:
    """Run ``run`` over the database at ``dsn`` (else SKIFT_DSN, else the embedded cluster)."""
    from skift_server import database

    _need_store()
    return await database.on_store(dsn or os.environ.get("SKIFT_DSN") or None, data_dir, run)


async def _on_dsn(dsn: str | None, data_dir: str | None, run: Callable[[str], Awaitable[T]]) -> T:
    """Run ``run`` with the DSN of ``dsn`` (else SKIFT_DSN, else the embedded cluster's)."""
    from skift_server import database

    _need_store()
    return await database.on_database(dsn or os.environ.get("SKIFT_DSN") or None, data_dir, run)


def _need_store() -> None:
    from skift_server import database

    if not database.store_installed():
        usage_error("skift admin needs the skift-store-pg package")


_DSN = click.option(
    "--dsn",
    metavar="DSN",
    help="PostgreSQL to read (default: SKIFT_DSN, else the embedded cluster).",
)
_DATA_DIR = click.option(
    "--data-dir",
    type=click.Path(file_okay=False),
    help="The embedded cluster's directory (without --dsn).",
)


@admin.command("stats")
@_DSN
@_DATA_DIR
@global_options
def admin_stats(dsn: str | None, data_dir: str | None) -> None:
    """How big the database is and what waits in it: tables, event partitions, deliveries, last prune.

    Rows are PostgreSQL's estimates (as of the last ANALYZE); bytes include indexes.
    Example: skift admin stats --dsn postgresql:///skift --json
    """
    import asyncio

    import skift

    a = app()
    try:
        st: skift.StoreStats = asyncio.run(_on_store(dsn, data_dir, skift.store_stats))
    except skift.SkiftError as exc:
        raise Failure(exc) from None
    except OSError as exc:
        raise Failure(skift.Unavailable(f"cannot read: {exc}", next="Check the DSN.")) from None
    last = st.last_prune

    def when(at: Any) -> str | None:
        return at.isoformat() if at is not None else None

    doc: dict[str, Any] = {
        "tables": [{"name": t.name, "rows": t.rows, "bytes": t.bytes} for t in st.tables],
        "event_partitions": [
            {"name": t.name, "rows": t.rows, "bytes": t.bytes, "bound": t.bound}
            for t in st.event_partitions
        ],
        "deliveries": {
            "pending": st.deliveries.pending,
            "delivered": st.deliveries.delivered,
            "parked": st.deliveries.parked,
            "oldest_pending_at": when(st.deliveries.oldest_pending_at),
            "oldest_parked_at": when(st.oldest_parked_at),
        },
        "last_prune": None
        if last is None
        else {"at": when(last.at), "requests": last.requests, "claim_cursors": last.claim_cursors},
    }
    if a.json:
        a.emit(doc)
        return
    click.echo(f"{'table':<24} {'rows (est.)':>12} {'size':>10}")
    for t in st.tables:
        click.echo(f"{t.name:<24} {t.rows:>12,} {_size(t.bytes):>10}")
    if st.event_partitions:
        click.echo(f"events: {len(st.event_partitions)} partitions")
        for t in st.event_partitions:
            click.echo(f"  {t.name:<22} {t.rows:>12,} {_size(t.bytes):>10}  {t.bound}")
    else:
        click.echo("events: one table (not partitioned)")
    d = st.deliveries
    click.echo(
        f"webhook deliveries: {d.pending} pending (oldest {when(d.oldest_pending_at) or '-'}), "
        f"{d.parked} parked (oldest {when(st.oldest_parked_at) or '-'}), {d.delivered} delivered"
    )
    if last is None:
        click.echo("last prune: never")
    else:
        click.echo(
            f"last prune: {when(last.at)}: {last.requests} request records, "
            f"{last.claim_cursors} claim cursors"
        )


def _size(n: int | None) -> str:
    if n is None:
        return "-"
    size = float(n)
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TB"


@admin.group("events")
def admin_events() -> None:
    """Old event partitions: archive them to a file and attach them back."""


@admin_events.command("archive")
@click.option(
    "--before",
    required=True,
    type=click.DateTime(formats=["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S"]),
    help="Archive the partitions that end at or before this date (UTC).",
)
@click.option(
    "--to",
    "to",
    required=True,
    type=click.Path(dir_okay=False, writable=True),
    help="The archive file to write (never overwritten).",
)
@click.option("--dry-run", is_flag=True, help="Name the partitions and count their events only.")
@_DSN
@_DATA_DIR
@global_options
def admin_events_archive(
    before: datetime, to: str, dry_run: bool, dsn: str | None, data_dir: str | None
) -> None:
    """Move event partitions that ended before a date out of the database, into a file.

    Each partition is written to the file while attached, the file synced, then the
    partition is detached and dropped (a brief lock on events). The partition still
    receiving events and the default partition are never archived. Bring them back
    with `skift admin events attach FILE`.
    Example: skift admin events archive --before 2026-01-01 --to events-2025.skiftev
    """
    import asyncio
    from pathlib import Path

    import skift
    from skift_server import database

    a = app()
    when = before.replace(tzinfo=UTC)
    try:
        done = asyncio.run(
            _on_dsn(
                dsn,
                data_dir,
                lambda target: database.archive_events(target, when, Path(to), dry_run=dry_run),
            )
        )
    except skift.SkiftError as exc:
        raise Failure(exc) from None
    except OSError as exc:
        raise Failure(skift.Unavailable(f"cannot archive: {exc}", next="Check the DSN.")) from None
    _show_partitions(a, done, "would archive" if dry_run else f"archived to {to}", dry_run)


@admin_events.command("attach")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@_DSN
@_DATA_DIR
@global_options
def admin_events_attach(file: str, dsn: str | None, data_dir: str | None) -> None:
    """Attach the event partitions of an archive FILE back (`skift admin events archive`).

    Events keep their positions, so the change stream and a node's history read
    them where they were; events written meanwhile for those dates move in with them.
    Example: skift admin events attach events-2025.skiftev
    """
    import asyncio
    from pathlib import Path

    import skift
    from skift_server import database

    a = app()
    try:
        done = asyncio.run(
            _on_dsn(dsn, data_dir, lambda target: database.attach_events(target, Path(file)))
        )
    except skift.SkiftError as exc:
        raise Failure(exc) from None
    except OSError as exc:
        raise Failure(skift.Unavailable(f"cannot attach: {exc}", next="Check the DSN.")) from None
    _show_partitions(a, done, "attached", False)


def _show_partitions(a: Any, parts: list[ArchivedPartition], verb: str, dry_run: bool) -> None:
    rows: list[dict[str, Any]] = [
        {
            "name": p.name,
            "from": p.lo.isoformat() if p.lo else None,
            "to": p.hi.isoformat(),
            "events": p.rows,
        }
        for p in parts
    ]
    if a.json:
        a.emit({"dry_run": dry_run, "partitions": rows})
        return
    if not parts:
        click.echo("nothing to attach" if verb == "attached" else "no partition ends by then")
        return
    click.echo(f"{verb}: {len(parts)} partitions, {sum(p.rows for p in parts)} events")
    for p in parts:
        start = p.lo.isoformat() if p.lo else "the beginning"
        click.echo(f"  {p.name:<24} {start} .. {p.hi.isoformat()}  {p.rows:,}")
