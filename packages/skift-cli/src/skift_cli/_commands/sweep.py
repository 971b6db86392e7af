"""``skift sweep`` in the command tree: the ce-sweep state engine (``skift_cli._sweep``).

``skift sweep …`` is normally routed by ``skift_cli.main`` straight to
``_sweep.main`` without loading this tree; this entry serves the calls that
put global options first (``skift --server URL sweep …``) and lists the
command in ``skift --help``.
"""

from __future__ import annotations

from typing import Any

import click

from .._base import app, command

_PASS: dict[str, Any] = {
    "ignore_unknown_options": True,
    "allow_extra_args": True,
    "help_option_names": [],
}


@command("Sweeps", context_settings=_PASS, add_help_option=False)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def sweep(args: tuple[str, ...]) -> None:
    """The ce-sweep state engine on a file or a project (see `skift sweep --help`).

    SUBCOMMAND --state FILE|skift:SLUG [flags of the skill's engine]
    """
    from .. import _sweep  # its argparse tree: not for `skift --help`

    try:
        a = app()
        code = _sweep.main(list(args), server=a.g.server, as_json=a.g.json)
    except SystemExit as exc:  # argparse: --help (0) or misuse (2)
        code = exc.code if isinstance(exc.code, int) else 2
    raise click.exceptions.Exit(code)
