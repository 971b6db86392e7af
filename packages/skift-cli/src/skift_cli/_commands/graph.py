"""``skift graph``: a project (or a subtree) as Mermaid or Graphviz dot text.

Containment (parent → child) is drawn as a plain arrow; what an open node
waits on (FROM blocks TO, read with ``edges``: the ListEdges RPC) as a dashed
arrow labelled ``blocks``. Done blockers no longer constrain anything and are not
drawn as edges. Status shows as a node's class (Mermaid) or style (dot).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from .._base import app, command, complete_ref, global_options, usage_error

if TYPE_CHECKING:
    import skift
    from skift_server import RemoteSkift

MAX_NODES = 2000
EDGES_PER_CALL = 1000  # the most nodes one edges call asks about


async def _collect(
    sk: RemoteSkift, project: str | None, root: str | None
) -> tuple[list[skift.NodeInfo], list[tuple[str, str]]]:
    """The nodes (a project's, or root and its descendants) and the open blocks edges among them."""
    import asyncio  # here: `skift --help` imports this module and should not pay for asyncio

    nodes: list[skift.NodeInfo] = []
    if root is not None:
        top = await sk.get(root, project=project)
        nodes.append(top)
        frontier: list[str] = [top.ref]
        while frontier and len(nodes) < MAX_NODES:
            pages = await asyncio.gather(
                *(sk.list_nodes(parent=p, limit=500, projects=[top.project]) for p in frontier)
            )
            frontier: list[str] = []
            for pg in pages:
                nodes.extend(pg.nodes)
                frontier.extend(n.ref for n in pg.nodes)
    else:
        assert project is not None
        page: str | None = None
        while len(nodes) < MAX_NODES:
            pg = await sk.list_nodes(projects=[project], limit=500, page=page)
            nodes.extend(pg.nodes)
            page = pg.next_page
            if not page:
                break
    refs = {n.ref for n in nodes}
    blocked = [n.ref for n in nodes if n.blocked and str(n.status) == "open"]
    chunks = [blocked[i : i + EDGES_PER_CALL] for i in range(0, len(blocked), EDGES_PER_CALL)]
    found = await asyncio.gather(*(sk.edges(chunk) for chunk in chunks))
    waiting = set(blocked)
    edges: list[tuple[str, str]] = []
    for e in (e for got in found for e in got):
        # what an open node still waits on: an open blocker inside the drawing
        if e.target.ref in waiting and e.source.ref in refs and str(e.source.status) == "open":
            edges.append((e.source.ref, e.target.ref))
    return nodes, edges


def _id(ref: str) -> str:
    return "n_" + "".join(ch if ch.isalnum() else "_" for ch in ref)


def mermaid(nodes: list[skift.NodeInfo], edges: list[tuple[str, str]]) -> str:
    lines = ["flowchart TD"]
    for n in nodes:
        title = n.title.replace('"', "'")
        lines.append(f'    {_id(n.ref)}["{n.ref}: {title}"]:::{n.status}')
    refs = {n.ref for n in nodes}
    for n in nodes:
        if n.parent and n.parent in refs:
            lines.append(f"    {_id(n.parent)} --> {_id(n.ref)}")
    for src, dst in edges:
        lines.append(f"    {_id(src)} -. blocks .-> {_id(dst)}")
    lines.append("    classDef done fill:#d4edda,color:#155724")
    lines.append("    classDef dropped fill:#eeeeee,color:#777777,stroke-dasharray: 3 3")
    lines.append("    classDef open fill:#ffffff")
    return "\n".join(lines)


def dot(nodes: list[skift.NodeInfo], edges: list[tuple[str, str]]) -> str:
    style = {"done": 'style=filled fillcolor="#d4edda"', "dropped": "style=dashed color=gray"}
    lines = ["digraph skift {", "    rankdir=TB;", "    node [shape=box];"]
    for n in nodes:
        label = json.dumps(f"{n.ref}: {n.title}")
        lines.append(f"    {_id(n.ref)} [label={label} {style.get(str(n.status), '')}];")
    refs = {n.ref for n in nodes}
    for n in nodes:
        if n.parent and n.parent in refs:
            lines.append(f"    {_id(n.parent)} -> {_id(n.ref)};")
    for src, dst in edges:
        lines.append(f'    {_id(src)} -> {_id(dst)} [style=dashed label="blocks"];')
    lines.append("}")
    return "\n".join(lines)


@command("Graph")
@click.argument("ref", required=False, shell_complete=complete_ref)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(("mermaid", "dot")),
    default="mermaid",
    show_default=True,
    help="Mermaid (renders on GitHub) or Graphviz dot.",
)
@global_options
def graph(ref: str | None, fmt: str) -> None:
    """The project's graph (or REF's subtree) as text: containment, and what waits on what.

    Example: skift -p oauth-spike graph --format dot | dot -Tsvg > plan.svg
    """
    a = app()
    proj = a.project(required=ref is None)
    nodes, edges = a.call(lambda sk: _collect(sk, proj, ref))
    if a.json:
        a.emit(
            {
                "nodes": [{"ref": n.ref, "title": n.title, "status": n.status} for n in nodes],
                "contains": [[n.parent, n.ref] for n in nodes if n.parent],
                "blocks": [list(e) for e in edges],
            }
        )
        return
    if len(nodes) >= MAX_NODES:
        usage_error(f"more than {MAX_NODES} nodes: draw a subtree (skift graph REF)")
    click.echo(mermaid(nodes, edges) if fmt == "mermaid" else dot(nodes, edges))
