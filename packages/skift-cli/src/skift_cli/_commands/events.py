"""``skift events``: the change stream, one node's history, and following it."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

import click

from .._base import app, command, complete_ref, duration, global_options, to_json, usage_error

if TYPE_CHECKING:
    import skift
    from skift_server import RemoteSkift


@command("Graph")
@click.option("--follow", "-f", is_flag=True, help="Keep printing events as they commit.")
@click.option("--cursor", metavar="C", help="Only events after this cursor.")
@click.option(
    "--from-start", is_flag=True, help="From the oldest event still kept (the replay window)."
)
@click.option(
    "--since", metavar="DURATION", help="Events of the last DURATION (10m, 2h, 1d), then follow."
)
@click.option("--op", "ops", multiple=True, metavar="OP", help="Only these operations.")
@click.option(
    "--node",
    metavar="REF",
    shell_complete=complete_ref,
    help="One node's history instead of the stream (newest --limit).",
)
@click.option(
    "--limit",
    type=int,
    default=None,
    help="At most this many per read (default 100; with --follow, the recent lines shown: 10).",
)
@click.option("--interval", type=float, default=None, hidden=True)  # before the stream long-polled
@global_options
def events(
    follow: bool,
    cursor: str | None,
    from_start: bool,
    since: str | None,
    ops: tuple[str, ...],
    node: str | None,
    limit: int | None,
    interval: float | None,
) -> None:
    """The change stream: who changed what, and why, in commit order.

    Like tail: --follow prints the last few events, then new ones as they
    commit. --cursor starts after a cursor (a read ends with the cursor to
    pass next time), --from-start at the oldest event kept, --since at a
    time ago. -p filters by project (repeatable), --op by operation. With
    --json, --follow prints one object per line.

    A server restart does not end --follow: it waits for the server and
    resumes after the last event it printed (no gap, no repeat).

    Example: skift events --follow --op complete_node -p oauth-spike
    """
    import asyncio
    import json
    from datetime import UTC, datetime, timedelta

    import skift

    a = app()
    starts = [x for x in (cursor, from_start or None, since) if x]
    if len(starts) > 1:
        usage_error("give one of --cursor, --from-start and --since")
    since_d = duration(since, "--since")
    if node is not None:
        if follow or starts or ops:
            usage_error(
                "--node reads one node's history; it does not combine with --follow, "
                "--cursor, --from-start, --since or --op"
            )
        proj = a.project()
        evs = a.call(lambda sk: sk.events(ref=node, project=proj, limit=limit or 100))
        if a.json:
            a.emit({"events": [to_json(e) for e in evs]})
        else:
            from .. import _render

            _render.events(evs)
        return
    projects = a.projects()

    def show(evs: Sequence[skift.EventInfo]) -> None:
        from .. import _render

        if a.json:
            for e in evs:
                click.echo(json.dumps(to_json(e)))
        else:
            _render.events(evs)
        sys.stdout.flush()

    async def tail(sk: RemoteSkift) -> tuple[str | None, list[skift.EventInfo]]:
        """Read to the end of the stream; the cursor there and the events to show first."""
        keep = limit or 10
        after: str | None = None
        recent: list[skift.EventInfo] = []
        cutoff = datetime.now(UTC) - since_d if since_d is not None else None
        while True:
            page = await sk.watch_events(after=after, projects=projects, ops=ops, limit=500)
            after = page.cursor or after
            if cutoff is not None:
                recent += [e for e in page.events if e.occurred_at >= cutoff]
            else:
                recent = (recent + list(page.events))[-keep:]
            if len(page.events) < 500:
                return after, recent

    async def go(sk: RemoteSkift) -> None:
        from .. import _render

        if not follow:
            after = cursor
            if since_d is not None:
                after, evs = await tail(sk)
                page_events: Sequence[skift.EventInfo] = evs
            else:
                page = await sk.watch_events(
                    after=after, projects=projects, ops=ops, limit=limit or 100
                )
                page_events, after = page.events, page.cursor
            if a.json:
                a.emit({"events": [to_json(e) for e in page_events], "cursor": after})
            else:
                _render.events(page_events)
                more = " (there may be more)" if len(page_events) >= (limit or 100) else ""
                _render.err().print(f"[dim]next: skift events --cursor {after}{more}[/dim]")
            return
        if cursor or from_start:
            after = cursor
        else:
            after, recent = await tail(sk)
            show(recent)
        waiting_said = False
        outage = 0  # reads in a row the server did not answer
        while True:
            try:
                page = await sk.watch_events(
                    after=after, projects=projects, ops=ops, limit=100, wait=timedelta(seconds=30)
                )
            except skift.Unavailable as exc:
                # A restart (or an outage longer than the client's retry window): wait and
                # resume after the last cursor, so nothing is missed and nothing repeats.
                if outage == 0:
                    _render.err().print(
                        f"[dim]the server is unavailable ({exc.message}); waiting to resume "
                        f"after cursor {after or '(start)'}… (Ctrl-C stops)[/dim]"
                    )
                outage += 1
                await asyncio.sleep(min(0.5 * outage, 5.0))
                continue
            if outage:
                _render.err().print("[dim]the server is back; resuming[/dim]")
                outage = 0
            after = page.cursor or after
            show(page.events)
            if not page.events and not waiting_said and not a.json:
                _render.err().print("[dim]waiting for events… (Ctrl-C stops)[/dim]")
                waiting_said = True

    a.call(go)
