"""Editing nodes in place: ``update`` (fields, labels, assignee) and ``link``/``unlink`` (a dependency)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from .._base import (
    ASSIGNEE_KINDS,
    PRIORITIES,
    Failure,
    app,
    command,
    complete_ref,
    global_options,
    patch_out,
    read_text,
    usage_error,
)

if TYPE_CHECKING:
    import skift
    from skift_server import RemoteSkift


@command("Graph")
@click.argument("ref", shell_complete=complete_ref)
@click.option("--title", help="A new title.")
@click.option("--body", help="A new body (markdown).")
@click.option("--body-file", metavar="FILE|-", help="Read the new body from a file (- for stdin).")
@click.option("--priority", type=click.Choice(PRIORITIES))
@click.option("--kind", help="A new kind (task, bug, spike…).")
@click.option("--label", "labels", multiple=True, metavar="L", help="Add this label (repeatable).")
@click.option(
    "--unlabel", "unlabels", multiple=True, metavar="L", help="Remove this label (repeatable)."
)
@click.option("--assignee-kind", type=click.Choice(ASSIGNEE_KINDS), help="user makes a gate.")
@click.option("--assignee", metavar="PRINCIPAL", help="Who it is for ('' clears it).")
@click.option("--lease", metavar="LEASE", help="Your lease, when the node is leased to you.")
@global_options
def update(
    ref: str,
    title: str | None,
    body: str | None,
    body_file: str | None,
    priority: str | None,
    kind: str | None,
    labels: tuple[str, ...],
    unlabels: tuple[str, ...],
    assignee_kind: str | None,
    assignee: str | None,
    lease: str | None,
) -> None:
    """Change a node's title, body, priority, kind, labels or assignee (one update_node patch).

    Example: skift update oauth-spike#3 --priority p1 --label security --unlabel later
    """
    import skift

    a = app()
    proj = a.project()
    if body is not None and body_file is not None:
        usage_error("give --body or --body-file, not both")
    if body_file is not None:
        body = read_text(body_file, "--body-file")
    fields: dict[str, Any] = {
        k: v
        for k, v in (
            ("title", title),
            ("body", body),
            ("priority", priority),
            ("kind", kind),
            ("assignee_kind", assignee_kind),
            ("assignee", assignee),
        )
        if v is not None
    }
    if not fields and not labels and not unlabels:
        usage_error("nothing to change: give --title, --body, --priority, --kind, --label…")

    async def go(sk: RemoteSkift) -> skift.PatchResult:
        n = await sk.get(ref, project=proj)
        doc: dict[str, Any] = {"op": "update_node", "node": n.ref, **fields}
        if labels or unlabels:
            kept = [x for x in n.labels if x not in unlabels]
            doc["labels"] = kept + [x for x in labels if x not in kept]
        try:
            op = skift.parse_op(doc)
        except skift.SkiftError as exc:
            raise Failure(exc) from None
        return await sk.patch(n.project, [op], lease=lease)

    patch_out(a, a.call(go), "updated")


def _edge(from_: str, to: str, *, add: bool) -> None:
    import skift

    a = app()
    proj = a.project()

    async def go(sk: RemoteSkift) -> skift.PatchResult:
        src = await sk.get(from_, project=proj)
        dst = await sk.get(to, project=proj)
        op: skift.Op = (
            skift.AddEdge(from_=src.ref, to=dst.ref)
            if add
            else skift.RemoveEdge(from_=src.ref, to=dst.ref)
        )
        return await sk.patch(dst.project, [op])

    patch_out(a, a.call(go), "linked" if add else "unlinked")


@command("Graph")
@click.argument("from_", metavar="FROM", shell_complete=complete_ref)
@click.argument("to", metavar="TO", shell_complete=complete_ref)
@global_options
def link(from_: str, to: str) -> None:
    """Make FROM block TO: TO is not ready until FROM is done (a cycle is refused).

    Example: skift -p oauth-spike link '#1' '#3'
    """
    _edge(from_, to, add=True)


@command("Graph")
@click.argument("from_", metavar="FROM", shell_complete=complete_ref)
@click.argument("to", metavar="TO", shell_complete=complete_ref)
@global_options
def unlink(from_: str, to: str) -> None:
    """Remove the dependency FROM blocks TO.

    Example: skift -p oauth-spike unlink '#1' '#3'
    """
    _edge(from_, to, add=False)
