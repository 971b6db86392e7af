"""What each page of the board shows, read through the API as the signed-in person.

Each function takes the person's handle and returns the template's context:
no rule is decided here (what is ready, blocked, held or a person's to
answer is the API's answer), only how the answers are arranged on a page.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import attrs

import skift

PAGE = 50
"""Nodes per page of Ready."""

TREE_PAGE = 100
"""Nodes per page of a project's tree."""

GATES_PAGE = 10
"""Gates per page of Waiting on me (each with its inputs)."""

GRAPH_NODES = 120
"""The most nodes a project page draws in its graph (the rest are in the tree)."""


@attrs.frozen(kw_only=True)
class Input:
    """A result the gate's decision rests on: a predecessor, what it found, who found it."""

    node: skift.NodeInfo
    artifacts: tuple[skift.ArtifactInfo, ...]


@attrs.frozen(kw_only=True)
class Gate:
    node: skift.NodeInfo
    inputs: tuple[Input, ...]
    unblocks: tuple[skift.EdgeEnd, ...]


async def cursor(sk: skift.LocalSkift) -> str:
    """Where the change stream stands now: the live updates start after it."""
    newest = await sk.events(limit=1)
    return newest[-1].cursor if newest else ""


async def _inputs(sk: skift.LocalSkift, refs: Sequence[str]) -> tuple[Input, ...]:
    async def one(ref: str) -> Input:
        node, arts = await asyncio.gather(sk.get(ref), sk.artifacts(ref))
        return Input(node=node, artifacts=tuple(arts))

    return tuple(await asyncio.gather(*(one(r) for r in refs[:20])))


async def waiting(sk: skift.LocalSkift, me: str, page_token: str | None) -> dict[str, Any]:
    """Ready gates for this person: assigned to them, or to any person, with their inputs."""
    page = await sk.ready(assignee_kind="user", limit=GATES_PAGE, page=page_token)
    mine = [n for n in page.nodes if n.assignee in (None, me)]
    edges: list[skift.EdgeInfo] = await sk.edges([n.id for n in mine]) if mine else []

    async def gate(node: skift.NodeInfo) -> Gate:
        sources = [e.source.ref for e in edges if e.target.ref == node.ref]
        return Gate(
            node=node,
            inputs=await _inputs(sk, sources),
            unblocks=tuple(e.target for e in edges if e.source.ref == node.ref),
        )

    gates = await asyncio.gather(*(gate(n) for n in mine))
    others = len(page.nodes) - len(mine)
    return {"gates": gates, "others": others, "next_page": page.next_page}


FILTERS = ("project", "kind", "label", "min_priority", "assignee_kind")


def _split(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


async def ready(sk: skift.LocalSkift, query: dict[str, str]) -> dict[str, Any]:
    filters: dict[str, Any] = {
        "projects": _split(query.get("project")),
        "kinds": _split(query.get("kind")),
        "labels": _split(query.get("label")),
    }
    if query.get("min_priority"):
        filters["min_priority"] = query["min_priority"]
    if query.get("assignee_kind"):
        filters["assignee_kind"] = query["assignee_kind"]
    page = await sk.ready(limit=PAGE, page=query.get("page") or None, **filters)
    return {
        "page": page,
        "filters": {k: query.get(k, "") for k in FILTERS},
        "projects": await sk.list_projects(limit=100),
    }


@attrs.frozen(kw_only=True)
class TreeNode:
    node: skift.NodeInfo
    blockers: tuple[skift.EdgeEnd, ...]
    children: list[TreeNode] = attrs.field(factory=list["TreeNode"])


async def project(sk: skift.LocalSkift, slug: str, page_token: str | None) -> dict[str, Any]:
    proj, page = await asyncio.gather(
        sk.get_project(slug), sk.list_nodes(projects=[slug], limit=TREE_PAGE, page=page_token)
    )
    nodes = list(page.nodes)
    edges: list[skift.EdgeInfo] = await sk.edges([n.id for n in nodes]) if nodes else []
    open_blockers: dict[str, list[skift.EdgeEnd]] = {}
    for e in edges:
        if e.source.status is skift.Status.OPEN:
            open_blockers.setdefault(e.target.ref, []).append(e.source)
    items = {n.ref: TreeNode(node=n, blockers=tuple(open_blockers.get(n.ref, ()))) for n in nodes}
    roots: list[TreeNode] = []
    for item in items.values():
        parent = items.get(item.node.parent or "")
        (parent.children if parent is not None else roots).append(item)
    counts = {
        "ready": sum(n.ready for n in nodes),
        "blocked": sum(n.blocked and n.status is skift.Status.OPEN for n in nodes),
        "held": sum(n.held and n.status is skift.Status.OPEN for n in nodes),
        "claimed": sum(n.claimed for n in nodes),
        "done": sum(n.status is skift.Status.DONE for n in nodes),
    }
    return {
        "project": proj,
        "roots": roots,
        "page": page,
        "counts": counts,
        "graph": graph(nodes, edges),
    }


@attrs.frozen(kw_only=True)
class GraphBox:
    ref: str
    label: str
    state: str
    x: int
    y: int


@attrs.frozen(kw_only=True)
class GraphArrow:
    x1: int
    y1: int
    x2: int
    y2: int
    done: bool


@attrs.frozen(kw_only=True)
class Graph:
    boxes: tuple[GraphBox, ...]
    arrows: tuple[GraphArrow, ...]
    width: int
    height: int
    left_out: int


BOX_W, BOX_H, GAP_X, GAP_Y = 170, 44, 60, 18


def state_of(n: skift.NodeInfo) -> str:
    """The one word a badge shows for a node (from the API's derived facts)."""
    if n.status is not skift.Status.OPEN:
        return n.status.value
    if n.claimed:
        return "claimed"
    if n.held:
        return "held"
    if n.blocked:
        return "blocked"
    return "ready" if n.ready else "waiting"


def graph(nodes: Sequence[skift.NodeInfo], edges: Sequence[skift.EdgeInfo]) -> Graph:
    """A layered drawing of the blocks edges among these nodes: each node one column to the
    right of everything that blocks it, drawn as SVG by the template (no script, no network)."""
    by_ref = {n.ref: n for n in nodes}
    linked = [e for e in edges if e.source.ref in by_ref and e.target.ref in by_ref]
    refs: list[str] = []
    for e in linked:
        for r in (e.source.ref, e.target.ref):
            if r not in refs:
                refs.append(r)
    left_out = max(0, len(refs) - GRAPH_NODES)
    shown = set(refs[:GRAPH_NODES])
    linked = [e for e in linked if e.source.ref in shown and e.target.ref in shown]
    into: dict[str, list[str]] = {}
    for e in linked:
        into.setdefault(e.target.ref, []).append(e.source.ref)
    layer: dict[str, int] = {}

    def depth(ref: str, trail: frozenset[str] = frozenset()) -> int:
        if ref in layer:
            return layer[ref]
        if ref in trail:
            return 0
        d = 1 + max((depth(s, trail | {ref}) for s in into.get(ref, ())), default=-1)
        layer[ref] = d
        return d

    columns: dict[int, list[str]] = {}
    for ref in sorted(shown, key=lambda r: by_ref[r].number):
        columns.setdefault(depth(ref), []).append(ref)
    pos: dict[str, tuple[int, int]] = {}
    for col, members in columns.items():
        for row, ref in enumerate(members):
            pos[ref] = (10 + col * (BOX_W + GAP_X), 10 + row * (BOX_H + GAP_Y))
    boxes = tuple(
        GraphBox(
            ref=r,
            label=f"#{by_ref[r].number} {by_ref[r].title}",
            state=state_of(by_ref[r]),
            x=pos[r][0],
            y=pos[r][1],
        )
        for r in pos
    )
    arrows = tuple(
        GraphArrow(
            x1=pos[e.source.ref][0] + BOX_W,
            y1=pos[e.source.ref][1] + BOX_H // 2,
            x2=pos[e.target.ref][0],
            y2=pos[e.target.ref][1] + BOX_H // 2,
            done=e.source.status is not skift.Status.OPEN,
        )
        for e in linked
    )
    width = 20 + max((b.x + BOX_W for b in boxes), default=0)
    height = 20 + max((b.y + BOX_H for b in boxes), default=0)
    return Graph(boxes=boxes, arrows=arrows, width=width, height=height, left_out=left_out)


async def node(sk: skift.LocalSkift, ref: str) -> dict[str, Any]:
    got = await sk.get(ref)
    explain, edges, comments, artifacts, leases, events = await asyncio.gather(
        sk.explain(got.ref),
        sk.edges([got.id]),
        sk.comments(got.ref),
        sk.artifacts(got.ref),
        sk.leases(got.ref),
        sk.events(ref=got.ref, limit=50),
    )
    sources = [e.source.ref for e in edges if e.target.ref == got.ref]
    return {
        "node": got,
        "explain": explain,
        "blocked_by": [e.source for e in edges if e.target.ref == got.ref],
        "blocks": [e.target for e in edges if e.source.ref == got.ref],
        "inputs": await _inputs(sk, sources),
        "comments": comments,
        "artifacts": artifacts,
        "leases": list(reversed(leases)),
        "live_lease": next((x for x in leases if x.released_at is None), None),
        "events": list(reversed(events)),
    }


async def holds(sk: skift.LocalSkift) -> dict[str, Any]:
    page = await sk.list_nodes(held=True, status="open", limit=100)
    held_here = [n for n in page.nodes if n.held]
    explains = await asyncio.gather(*(sk.explain(n.ref) for n in held_here[:50]))
    reasons: dict[str, list[dict[str, Any]]] = {}
    for ex in explains:
        reasons[ex.ref] = [r.detail for r in ex.reasons if r.kind == "held"]
    projects = await sk.list_projects(limit=200)
    return {
        "nodes": held_here,
        "reasons": reasons,
        "projects": projects,
        "held_projects": [p for p in projects if p.held],
        "more": page.next_page is not None,
    }


async def activity(sk: skift.LocalSkift) -> dict[str, Any]:
    return {"events": list(reversed(await sk.events(limit=100)))}
