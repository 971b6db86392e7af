"""``skift import`` and ``skift export``: a beads export in and out (docs/migrating-from-beads.md),
and a project moved whole as a skift archive (docs/archive.md): ``skift export -p SLUG -o FILE``
and ``skift import FILE`` are the ``archive`` subcommands.

A long import or export shows a progress bar on a terminal (stderr), never
with ``--json`` or when stderr is not a terminal.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Generator
from contextlib import contextmanager
from typing import Any

import click

from .._base import (
    App,
    DefaultGroup,
    app,
    global_options,
    group,
    read_text,
    to_json,
    usage_error,
)

SHOWN_NODES = 20
"""How many beads id -> node lines an import prints (``--json`` gives them all)."""


class _ArchiveByDefault(DefaultGroup):
    """``skift import FILE`` is ``skift import archive FILE`` (and so for export)."""

    default_command = "archive"


@group("Projects", name="import", cls=_ArchiveByDefault)
@global_options
def import_() -> None:
    """Bring a project in: `skift import FILE` (a skift archive), `skift import beads FILE -p SLUG`."""


@group("Projects", cls=_ArchiveByDefault)
@global_options
def export() -> None:
    """Write a project out: `skift export -p SLUG -o FILE` (a skift archive), `skift export beads`."""


@contextmanager
def progress_bar(a: App, what: str) -> Generator[Callable[[int, int], None] | None]:
    """A rich bar on stderr, told ``(done, total)``; None (no bar) with --json or no terminal."""
    if a.json or not sys.stderr.isatty():
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn

    from .. import _render

    bar = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=_render.err(),
        transient=True,
    )
    task = bar.add_task(what, total=None)

    def tell(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total)
        if done >= total:
            bar.update(task, description=f"{what}: the server is at work")

    with bar:
        yield tell


@import_.command("beads")
@click.argument("file", metavar="FILE|-")
@click.option("--dry-run", is_flag=True, help="Report what the import would do; write nothing.")
@click.option(
    "--break-cycles",
    is_flag=True,
    help="Drop the fewest blocks dependencies that make cycles (listed as warnings).",
)
@click.option(
    "--skip-dangling",
    is_flag=True,
    help="Skip dependencies on issues in neither the file nor the project (warnings).",
)
@global_options
def import_beads(file: str, dry_run: bool, break_cycles: bool, skip_dangling: bool) -> None:
    """Import a beads export (`bd export` JSONL; - reads stdin) into a project (-p, created
    when absent). One transaction; a second import of the same file changes nothing, a newer
    export updates what changed (matched by beads id).

    Example: bd export -o issues.jsonl && skift import beads issues.jsonl -p myproj
    """
    a = app()
    proj = a.project(required=True)
    assert proj is not None
    text = read_text(file, "FILE")
    with progress_bar(a, "uploading") as tell:
        res = a.call(
            lambda sk: sk.import_beads(
                text,
                project=proj,
                dry_run=dry_run,
                break_cycles=break_cycles,
                skip_dangling=skip_dangling,
                progress=tell,
            )
        )
    if a.json:
        a.emit(
            {
                "project": res.project,
                "created": res.created,
                "updated": res.updated,
                "unchanged": res.unchanged,
                "nodes": res.nodes,
                "edges": res.edges,
                "comments": res.comments,
                "warnings": list(res.warnings),
                "dry_run": res.dry_run,
            }
        )
        return
    for w in res.warnings:
        click.echo(f"warning: {w}", err=True)
    from .._render import plural

    verb = "would import" if dry_run else "imported"
    click.echo(
        f"{verb} {plural(len(res.nodes), 'issue')} into {res.project}: {res.created} created, "
        f"{res.updated} updated, {res.unchanged} unchanged; {plural(res.edges, 'edge')} and "
        f"{plural(res.comments, 'comment')} added"
    )
    shown = list(res.nodes.items())[:SHOWN_NODES]
    width = max((len(k) for k, _ in shown), default=0)
    for beads_id, ref in shown:
        click.echo(f"  {beads_id.ljust(width)}  {ref}")
    if len(res.nodes) > SHOWN_NODES:
        click.echo(
            f"  … and {len(res.nodes) - SHOWN_NODES} more (--json lists them all; "
            "`skift show BEADS_ID` finds any)"
        )
    if dry_run:
        click.echo("dry run: nothing was written")
    elif res.created:
        click.echo(f"next: skift ready -p {res.project}")


@export.command("beads")
@click.option(
    "-o", "--output", "output", metavar="FILE", help="Write to FILE (default: stdout; - too)."
)
@global_options
def export_beads(output: str | None) -> None:
    """Write a project (-p) as beads JSONL (`bd export`'s field names): beads ids kept for
    imported nodes and made (`slug-N`) for the rest.

    Example: skift export beads -p myproj -o issues.jsonl
    """
    a = app()
    proj = a.project(required=True)
    assert proj is not None
    to_stdout = output is None or output == "-"
    quiet = to_stdout and sys.stdout.isatty()
    with progress_bar(a, "exporting") as tell:
        text = a.call(lambda sk: sk.export_beads(proj, progress=None if quiet else tell))
    _write(a, text, output, count=text.count("\n"), project=proj)


def _write(a: App, text: str, output: str | None, **about: Any) -> None:
    if output is None or output == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        usage_error(f"-o {output}: {exc.strerror}")
    if a.json:
        a.emit({**about, "path": output})
    else:
        from .._render import plural

        click.echo(
            f"wrote {plural(int(about['count']), 'issue')} of {about['project']} to {output}",
            err=True,
        )


@import_.command("archive")
@click.argument("file", metavar="FILE|-")
@click.option(
    "--map-authors",
    is_flag=True,
    help="Map the archive's authors to this organization's principals of the same names "
    "(an admin's call: the lossless move between servers). Without it the history is yours, "
    "keeping the archive's authors as imported text.",
)
@global_options
def import_archive(file: str, map_authors: bool) -> None:
    """Import a skift archive (what `skift export` wrote; - reads stdin) as a new project of
    this organization, with everything it held; -p gives it another slug. Every id is new
    (`--json` maps the old ones to the new); node numbers stay. The import is your act: its
    history records you, with the archive's authors as imported text (--map-authors: an
    admin maps them to principals of the same names).

    Example: skift import oauth.skift.jsonl -p oauth-copy
    """
    a = app()
    slug = a.explicit_project()
    text = read_text(file, "FILE")
    with progress_bar(a, "uploading") as tell:
        res = a.call(
            lambda sk: sk.import_archive(text, project=slug, progress=tell, map_authors=map_authors)
        )
    if a.json:
        a.emit(to_json(res))
        return
    for w in res.warnings:
        click.echo(f"warning: {w}", err=True)
    from .._render import plural as n

    click.echo(
        f"imported project {res.project}: {n(res.nodes, 'node')}, {n(res.edges, 'edge')}, "
        f"{n(res.comments, 'comment')}, {n(res.artifacts, 'artifact')} "
        f"({n(res.blobs, 'blob')}), {n(res.leases, 'lease')}, "
        f"{n(res.usage, 'usage record')}, {n(res.events, 'event')}"
    )
    click.echo(f"next: skift ready -p {res.project}")


@export.command("archive")
@click.option(
    "-o", "--output", "output", metavar="FILE", help="Write to FILE (default: stdout; - too)."
)
@global_options
def export_archive(output: str | None) -> None:
    """Write a project (-p) as a skift archive: nodes, edges, comments with revisions,
    artifacts with their blobs' bytes, holds, leases, usage, events (docs/archive.md).

    Example: skift export -p oauth -o oauth.skift.jsonl
    """
    a = app()
    proj = a.project(required=True)
    assert proj is not None
    to_stdout = output is None or output == "-"
    quiet = to_stdout and sys.stdout.isatty()
    with progress_bar(a, "exporting") as tell:
        text = a.call(lambda sk: sk.export_archive(proj, progress=None if quiet else tell))
    if to_stdout:
        _write(a, text, output)
        return
    try:
        with open(str(output), "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        usage_error(f"-o {output}: {exc.strerror}")
    if a.json:
        a.emit({"project": proj, "bytes": len(text.encode("utf-8")), "path": output})
    else:
        click.echo(f"wrote the archive of {proj} to {output}", err=True)
