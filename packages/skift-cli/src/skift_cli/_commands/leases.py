"""``skift leases``: the live leases, what is being worked on, by whom and until when
(a lease's id, the fencing token, is shown to its holder only)."""

from __future__ import annotations

import click

from .._base import app, command, global_options
from .._shown import lease_json


@command("Work")
@click.option("--mine", is_flag=True, help="Only the leases you hold.")
@global_options
def leases(mine: bool) -> None:
    """List live leases: what is being worked on, by whom, until when.

    A lease's id (the fencing token) is shown to its holder only, so an agent
    that lost its lease id finds it here. A person takes a stuck lease back
    with 'skift release REF --preempt --reason R'.

    Example: skift leases -p oauth-spike
    """
    a = app()
    projects = a.projects()
    got = a.call(lambda sk: sk.leases(projects=projects, mine=mine))
    if a.json:
        a.emit({"leases": [lease_json(x) for x in got]})
        return
    if not got:
        click.echo("no live leases")
        return
    from .. import _render

    _render.leases(got)
