"""``skift events``: the change stream, one node's history, and following it."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from .._base import app, command, complete_ref, global_options, to_json, usage_error

if TYPE_CHECKING:
    from skift_server import RemoteSkift


@command("Graph")
@click.option("--follow", "-f", is_flag=True, help="Keep printing events as they commit.")
@click.option(
    "--cursor", metavar="C", help="Only events after this cursor (default: the replay window)."
)
@click.option("--op", "ops", multiple=True, metavar="OP", help="Only these operations.")
@click.option(
    "--node",
    metavar="REF",
    shell_complete=complete_ref,
    help="One node's history instead of the stream (newest --limit).",
)
@click.option(
    "--limit", type=int, default=100, show_default=True, help="At most this many per read."
)
@click.option("--interval", type=float, default=None, hidden=True)  # before the stream long-polled
@global_options
def events(
    follow: bool,
    cursor: str | None,
    ops: tuple[str, ...],
    node: str | None,
    limit: int,
    interval: float | None,
) -> None:
    """The change stream: who changed what, and why, in commit order.

    Without --cursor it starts at the oldest event still in the replay window;
    each event carries its cursor, and a read ends with the cursor to pass next
    time. -p filters by project (repeatable), --op by operation. --follow keeps
    printing events as they commit (with --json, one object per line).

    Example: skift events --follow --op complete_node -p oauth-spike
    """
    import json
    from datetime import timedelta

    a = app()
    if node is not None:
        if follow or cursor or ops:
            usage_error(
                "--node reads one node's history; it does not combine with --follow, --cursor or --op"
            )
        proj = a.project()
        evs = a.call(lambda sk: sk.events(ref=node, project=proj, limit=limit))
        if a.json:
            a.emit({"events": [to_json(e) for e in evs]})
        else:
            from .. import _render

            _render.events(evs)
        return
    projects = a.projects()

    async def go(sk: RemoteSkift) -> None:
        from .. import _render

        after = cursor
        if not follow:
            page = await sk.watch_events(after=after, projects=projects, ops=ops, limit=limit)
            if a.json:
                a.emit({"events": [to_json(e) for e in page.events], "cursor": page.cursor})
            else:
                _render.events(page.events)
                more = " (there may be more)" if len(page.events) >= limit else ""
                _render.err().print(f"[dim]next: skift events --cursor {page.cursor}{more}[/dim]")
            return
        waiting_said = False
        while True:
            page = await sk.watch_events(
                after=after, projects=projects, ops=ops, limit=limit, wait=timedelta(seconds=30)
            )
            after = page.cursor
            if a.json:
                for e in page.events:
                    click.echo(json.dumps(to_json(e)))
            else:
                _render.events(page.events)
                if not page.events and not waiting_said:
                    _render.err().print("[dim]waiting for events… (Ctrl-C stops)[/dim]")
                    waiting_said = True
            sys.stdout.flush()

    a.call(go)
