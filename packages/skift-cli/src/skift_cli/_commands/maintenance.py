"""An operator's maintenance of the database itself: ``skift admin prune``.

These commands open the PostgreSQL database directly (like ``skift migrate``),
not a server: they act on every organization at once.
"""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any

import click

from .._base import Failure, app, global_options, group, usage_error


@group("Setup and admin")
@global_options
def admin() -> None:
    """An operator's maintenance of the database (every organization): prune."""


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
@global_options
def admin_prune(
    dsn: str | None,
    data_dir: str | None,
    dry_run: bool,
    requests_days: float,
    claim_cursors_days: float,
) -> None:
    """Remove what is not audit past its window: idempotency records and unused claim cursors.

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
    )
    try:
        report = asyncio.run(_with_store(dsn, data_dir, limits, dry_run))
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


async def _with_store(dsn: str | None, data_dir: str | None, limits: Any, dry_run: bool) -> Any:
    import skift

    try:
        import skift_pg
    except ImportError:
        usage_error("prune needs the skift-store-pg package")
    given = dsn or os.environ.get("SKIFT_DSN") or None
    cluster: Any = None
    if given is None:
        from pathlib import Path

        from skift_pg.embedded import EmbeddedCluster, default_data_dir

        cluster = EmbeddedCluster(Path(data_dir) if data_dir else default_data_dir())
        target: str = cluster.start()
    else:
        target = given
    try:
        store = skift_pg.PgStore(target, min_size=1, max_size=1, listen=False)
        try:
            return await skift.prune(store, limits=limits, dry_run=dry_run)
        finally:
            await store.close()
    finally:
        if cluster is not None:
            cluster.stop()
