"""The graph's nodes: ``create``, ``patch``, ``show``, ``list``, ``drop``, ``reopen``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from .._base import (
    ASSIGNEE_KINDS,
    PRIORITIES,
    STATUSES,
    Failure,
    app,
    command,
    complete_ref,
    filter_options,
    filters,
    global_options,
    patch_out,
    read_text,
    to_json,
    usage_error,
)

if TYPE_CHECKING:
    import skift
    from skift_server import RemoteSkift


@command("Graph")
@click.argument("title")
@click.option("--kind", help="A label skift never interprets (task, bug, spike, chore…).")
@click.option("--priority", type=click.Choice(PRIORITIES))
@click.option("--parent", metavar="REF", shell_complete=complete_ref)
@click.option(
    "--blocked-by", "blocked_by", multiple=True, metavar="REF", shell_complete=complete_ref
)
@click.option("--label", "labels", multiple=True)
@click.option("--assignee-kind", type=click.Choice(ASSIGNEE_KINDS), help="user makes a gate.")
@click.option("--assignee", metavar="PRINCIPAL")
@click.option("--body", help="Markdown: the prompt an agent receives.")
@click.option("--body-file", metavar="FILE|-", help="Read the body from a file (- for stdin).")
@global_options
def create(
    title: str,
    kind: str | None,
    priority: str | None,
    parent: str | None,
    blocked_by: tuple[str, ...],
    labels: tuple[str, ...],
    assignee_kind: str | None,
    assignee: str | None,
    body: str | None,
    body_file: str | None,
) -> None:
    """Create one node in the current project (a one-operation patch).

    Example: skift -p oauth-spike create "Write the callback" --blocked-by '#1'
    """
    import skift

    a = app()
    proj = a.project(required=True)
    assert proj is not None
    if body is not None and body_file is not None:
        usage_error("give --body or --body-file, not both")
    if body_file is not None:
        body = read_text(body_file, "--body-file")
    doc: dict[str, Any] = {"op": "create_node", "title": title}
    for key, value in (
        ("kind", kind),
        ("priority", priority),
        ("parent", parent),
        ("assignee_kind", assignee_kind),
        ("assignee", assignee),
        ("body", body),
    ):
        if value is not None:
            doc[key] = value
    if blocked_by:
        doc["blocked_by"] = list(blocked_by)
    if labels:
        doc["labels"] = list(labels)
    try:
        op = skift.parse_op(doc)
    except skift.SkiftError as exc:
        raise Failure(exc) from None
    res = a.call(lambda sk: sk.patch(proj, [op]))
    if a.json:
        a.emit(to_json(res))
    else:
        n = res.nodes[0]
        click.echo(f"created {n.ref} {n.title}")


@command("Graph")
@click.argument("file", metavar="FILE|-")
@click.option(
    "--lease", metavar="LEASE", help="Write under this lease (sets or overrides the document's)."
)
@global_options
def patch(file: str, lease: str | None) -> None:
    """Apply a patch document (YAML or JSON) in one transaction.

    The document is checked before it is sent: an error names the operation
    index and the field. A request id is made when the document has none and
    printed, so a retry can reuse it.

    Example: skift patch plan.yaml
    """
    import skift

    from .. import _patchdoc

    a = app()
    text = read_text(file, "FILE")
    source = "stdin" if file == "-" else file

    def check_count(count: int) -> None:
        a.call(lambda sk: sk.check_ops_count(count))

    try:
        doc = _patchdoc.load(text, source, check_count=check_count)
    except skift.SkiftError as exc:
        raise Failure(exc) from None
    proj = doc.project or a.project()
    if proj is None:
        usage_error("the document names no project: add 'project:' to it or give -p PROJECT")
    rid = doc.request_id or skift.ulid_str(skift.new_id())
    if doc.request_id is None and not a.json:
        from .. import _render

        _render.err().print(
            f"[dim]request id {rid} (put it in the document as request_id to retry safely)[/dim]"
        )

    async def go(sk: RemoteSkift) -> skift.PatchResult:
        if len(doc.ops) >= 200 and not a.json:
            from .. import _render

            c = _render.err()
            if c.is_terminal:
                with c.status(f"applying {len(doc.ops)} operations…"):
                    return await sk.patch(proj, doc.ops, request_id=rid, lease=lease or doc.lease)
        return await sk.patch(proj, doc.ops, request_id=rid, lease=lease or doc.lease)

    res = a.call(go, request_id=rid)
    patch_out(a, res, "applied")


@command("Graph")
@click.argument("ref", shell_complete=complete_ref)
@global_options
def show(ref: str) -> None:
    """Show a node: its fields, derived state, body, result, blockers, artifacts and comments.

    Example: skift show oauth-spike#3
    """
    import asyncio

    a = app()
    proj = a.project()

    async def go(
        sk: RemoteSkift,
    ) -> tuple[skift.NodeInfo, list[skift.ArtifactInfo], list[str], list[skift.CommentInfo]]:
        n = await sk.get(ref, project=proj)
        arts, cs = await asyncio.gather(sk.artifacts(n.ref), sk.comments(n.ref))
        blockers: list[str] = []
        if n.blocked and n.status == "open":  # Status is a StrEnum
            ex = await sk.explain(n.ref)
            blockers = [str(r.detail.get("ref")) for r in ex.reasons if r.kind == "blocked_by"]
        return n, arts, blockers, cs

    n, arts, blockers, cs = a.call(go)
    from .. import _shown

    _shown.show(n, arts, blockers, cs, as_json=a.json, emit=a.emit)


@command("Graph", "list")
@filter_options
@click.option("--status", type=click.Choice(STATUSES), help="Only this status.")
@click.option("--all", "all_", is_flag=True, help="Dropped nodes too (hidden by default).")
@click.option("--held/--not-held", default=None, help="Only held (or only not held) nodes.")
@click.option("--limit", type=int)
@click.option("--page", metavar="TOKEN", help="The next page (from the previous page).")
@global_options
def list_(
    kinds: tuple[str, ...],
    labels: tuple[str, ...],
    any_labels: tuple[str, ...],
    assignee_kind: str | None,
    min_priority: str | None,
    parent: str | None,
    status: str | None,
    all_: bool,
    held: bool | None,
    limit: int | None,
    page: str | None,
) -> None:
    """List nodes as each project's containment tree: state, readiness, blockers.

    Dropped nodes are left out unless --all or --status dropped.
    Example: skift -p oauth-spike list --status open
    """
    import asyncio

    import attrs

    a = app()
    flt = filters(a, kinds, labels, any_labels, assignee_kind, min_priority, parent)

    from .. import _render

    hidden = [0]

    async def go(sk: RemoteSkift) -> tuple[skift.ReadyPage, dict[str, list[str]]]:
        pg = await sk.list_nodes(limit=limit, page=page, status=status, held=held, **flt)
        if status is None and not all_:
            kept = tuple(n for n in pg.nodes if n.status != "dropped")
            hidden[0] = len(pg.nodes) - len(kept)
            pg = attrs.evolve(pg, nodes=kept)  # a view of the page: what this listing shows
        if a.json:
            return pg, {}
        blocked = [n for n in pg.nodes if n.blocked and n.status == "open"]
        exs = await asyncio.gather(*(sk.explain(n.ref) for n in blocked[:40]))
        by: dict[str, list[str]] = {}
        for n, ex in zip(blocked, exs, strict=False):
            refs = [str(r.detail.get("ref")) for r in ex.reasons if r.kind == "blocked_by"]
            by[n.ref] = [_render.short_ref(r, n.project) for r in refs]
        return pg, by

    pg, blockers = a.call(go)
    if a.json:
        a.emit(to_json(pg))
        return
    if pg.nodes:
        _render.out().print(_render.node_tree(pg.nodes, blockers))
    if hidden[0]:
        _render.err().print(f"[dim]{hidden[0]} dropped node(s) hidden: --all shows them[/dim]")
    _render.page_footer(pg, what="nodes")


@command("Graph")
@click.argument("ref", shell_complete=complete_ref)
@click.option(
    "--reason", required=True, help="superseded, not viable, no longer relevant, or free text."
)
@click.option(
    "--cascade",
    is_flag=True,
    help="Also drop REF's children and what it blocks (the functionality is gone).",
)
@click.option(
    "--max-nodes", type=int, metavar="N", help="With --cascade: refuse if more would drop."
)
@click.option("--lease", metavar="LEASE")
@global_options
def drop(ref: str, reason: str, cascade: bool, max_nodes: int | None, lease: str | None) -> None:
    """Drop a node (reversible with reopen); with --cascade its blocked subtree too.

    Example: skift drop oauth-spike#4 --reason superseded --cascade --max-nodes 5
    """
    a = app()
    proj = a.project()
    if cascade != (max_nodes is not None):
        usage_error("--cascade and --max-nodes N go together: a cascade states its blast radius")

    async def go(sk: RemoteSkift) -> tuple[skift.PatchResult, list[str]]:
        res = await sk.drop(ref, reason=reason, cascade=max_nodes, project=proj, lease=lease)
        left: list[str] = []
        if max_nodes is None and res.nodes:
            kids = await sk.list_nodes(parent=res.nodes[0].ref, status="open", limit=50)
            left = [n.ref for n in kids.nodes]
        return res, left

    res, left = a.call(go)
    patch_out(a, res, "dropped")
    if left and not a.json:
        from .. import _render

        _render.err().print(
            f"[yellow]warning:[/yellow] {len(left)} open child(ren) of {res.nodes[0].ref} "
            f"stay open, and ready, under a dropped parent ({', '.join(left[:5])}"
            f"{' …' if len(left) > 5 else ''}); drop them too with 'skift drop "
            f"{res.nodes[0].ref} --reason … --cascade --max-nodes N'"
        )


@command("Graph")
@click.argument("ref", shell_complete=complete_ref)
@click.option("--reason", required=True)
@click.option("--lease", metavar="LEASE")
@global_options
def reopen(ref: str, reason: str, lease: str | None) -> None:
    """Move a done or dropped node back to open.

    Example: skift reopen oauth-spike#3 --reason "review: handle the error path"
    """
    a = app()
    proj = a.project()
    res = a.call(lambda sk: sk.reopen(ref, reason=reason, project=proj, lease=lease))
    patch_out(a, res, "reopened")
