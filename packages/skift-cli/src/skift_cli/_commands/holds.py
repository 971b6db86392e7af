"""Parking work: ``hold``, ``unhold`` and ``focus``."""

from __future__ import annotations

import click

from .._base import app, command, complete_ref, global_options, patch_out, to_json, usage_error


def _hold(ref: str | None, reason: str, *, hold: bool) -> None:
    a = app()
    word = "held" if hold else "released"
    if ref is None:
        proj = a.explicit_project()
        if proj is None:
            usage_error("name a node (REF) or a project (--project P)")
        n = a.call(
            lambda sk: (
                sk.hold_project(proj, reason=reason)
                if hold
                else sk.unhold_project(proj, reason=reason)
            )
        )
        if a.json:
            a.emit({"project": proj, "parked" if hold else "unparked": n})
        else:
            click.echo(f"{word} project {proj} ({n} node(s) {'parked' if hold else 'unparked'})")
        return
    proj = a.project()
    res = a.call(
        lambda sk: (
            sk.hold(ref, reason=reason, project=proj)
            if hold
            else sk.unhold(ref, reason=reason, project=proj)
        )
    )
    patch_out(a, res, word)


@command("Graph")
@click.argument("ref", required=False, shell_complete=complete_ref)
@click.option(
    "--reason", required=True, help="Why: a hold nobody can explain is one nobody dares release."
)
@global_options
def hold(ref: str | None, reason: str) -> None:
    """Park a node (and its subtree), or a whole project with --project P.

    Example: skift hold oauth-spike#2 --reason "waiting for the vendor"
    """
    _hold(ref, reason, hold=True)


@command("Graph")
@click.argument("ref", required=False, shell_complete=complete_ref)
@click.option("--reason", required=True)
@global_options
def unhold(ref: str | None, reason: str) -> None:
    """Release a node's hold, or a project's with --project P.

    Example: skift unhold --project oauth-spike --reason "back on"
    """
    _hold(ref, reason, hold=False)


@command("Graph")
@click.argument("keep", nargs=-1)
@click.option("--clear", is_flag=True, help="Release what the scope's focus held.")
@click.option("--reason", required=True)
@global_options
def focus(keep: tuple[str, ...], clear: bool, reason: str) -> None:
    """Hold everything outside KEEP: projects, or with --project P that project's nodes.

    Example: skift focus oauth-spike billing --reason "this week"
    """
    a = app()
    proj = a.explicit_project()
    if clear and keep:
        usage_error("--clear takes no KEEP")
    if not clear and not keep:
        usage_error("name what to keep (projects, or nodes with --project P), or give --clear")
    if clear:
        res = a.call(lambda sk: sk.clear_focus(reason=reason, project=proj))
    else:
        res = a.call(lambda sk: sk.focus(list(keep), reason=reason, project=proj))
    if a.json:
        a.emit(to_json(res))
    else:
        from .. import _render

        _render.focus(res)
