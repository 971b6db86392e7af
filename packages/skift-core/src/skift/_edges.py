"""Reading the ``blocks`` edges around nodes: what each waits on and what waits on it.

A read for whoever draws the graph (the web board's project graph and a
node's blockers and inputs): the edges into and out of the given nodes, each
end named by its reference with its title and status. Nodes are given by
reference or by id (ids are looked up together, so a page of nodes costs a
fixed number of reads); an edge into another project of the organization is
returned like any other.
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

import attrs

from ._engine import Engine, ref_of
from ._errors import Invalid, NotFound
from ._models import Edge, Node, Status
from ._pages import Page, cut, read_position, scoped
from ._refs import parse_ulid, ulid_str
from ._store import Tx

MAX_NODES = 1000
"""How many nodes one call may ask about."""


@attrs.frozen(kw_only=True)
class EdgeEnd:
    ref: str
    title: str
    status: Status


@attrs.frozen(kw_only=True)
class EdgeInfo:
    """``source`` blocks ``target``: the target waits until the source is done (or dropped)."""

    source: EdgeEnd
    target: EdgeEnd
    kind: str = "blocks"


async def edges(
    e: Engine,
    tx: Tx,
    nodes: Sequence[str],
    project_ref: str | None,
    *,
    limit: int | None = None,
    page: str | None = None,
) -> Page[EdgeInfo]:
    """The edges around ``nodes``, by their ends' references (target, then source): every
    one when ``limit`` is None, else ``limit`` of them after ``page`` (keyset: an edge
    added or removed meanwhile moves no other). The nodes asked about are bounded
    (:data:`MAX_NODES`), so each page reads their edges and keeps the ones after it."""
    size = None if limit is None else e.page_size(limit)
    name = scoped("edges", tuple(nodes), project_ref)
    after = read_position(name, page, (str, int, str, int, str))
    if len(nodes) > MAX_NODES:
        raise Invalid(
            f"{len(nodes)} nodes asked about; at most {MAX_NODES} at a time",
            next="Ask about the nodes of one page at a time.",
            field="nodes",
        )
    ids: set[UUID] = set()
    by_id: dict[UUID, Node] = {}
    for i, ref in enumerate(nodes):
        ident = parse_ulid(ref.strip())
        if ident is not None:
            ids.add(ident)
            continue
        try:
            node = await e.node_in(tx, ref, project_ref)
        except Invalid as exc:
            if exc.details.get("field") == "ref":
                exc.details["field"] = f"nodes[{i}]"  # the argument at fault: which node
            raise
        by_id[node.id] = node
    hidden = await e.hidden(tx)
    if ids - by_id.keys():
        found = await tx.nodes_by_id(ids - by_id.keys())
        for ident in ids - by_id.keys():
            if ident not in found or found[ident].project_id in hidden:
                # another organization's node, or one in a project the caller may not
                # read, is exactly like no node
                raise NotFound(
                    f"no node {ulid_str(ident)}",
                    next="Listing a project's nodes shows the ones you can see.",
                    move={"do": "list_nodes"},
                )
        by_id.update(found)
    asked = list(by_id)
    found_edges = [*await tx.edges_into(asked), *await tx.edges_out_of(asked)]
    seen: set[tuple[UUID, UUID, str]] = set()
    unique: list[Edge] = []
    for edge in found_edges:
        key = (edge.from_id, edge.to_id, edge.kind.value)
        if key not in seen:
            seen.add(key)
            unique.append(edge)
    ends = {x for edge in unique for x in (edge.from_id, edge.to_id)}
    missing = ends - by_id.keys()
    if missing:
        by_id.update(await tx.nodes_by_id(missing))
    # an edge to or from a project the caller may not read is left out
    unique = [
        edge
        for edge in unique
        if by_id[edge.from_id].project_id not in hidden
        and by_id[edge.to_id].project_id not in hidden
    ]
    projects = await tx.projects_by_id({n.project_id for n in by_id.values()})

    def end(ident: UUID) -> EdgeEnd:
        n = by_id[ident]
        return EdgeEnd(ref=ref_of(n, projects[n.project_id]), title=n.title, status=n.status)

    out = [
        EdgeInfo(source=end(edge.from_id), target=end(edge.to_id), kind=edge.kind.value)
        for edge in unique
    ]
    out.sort(key=_sort_key)
    if after is not None:
        out = [x for x in out if _sort_key(x) > after]
    rows, ends, more = cut(name, out if size is None else out[: size + 1], size, _sort_key)
    return Page(rows, ends=ends, more=more)


def _sort_key(x: EdgeInfo) -> tuple[str, int, str, int, str]:
    return (*_key(x.target.ref), *_key(x.source.ref), x.kind)


def _key(ref: str) -> tuple[str, int]:
    slug, _, number = ref.rpartition("#")
    return slug, int(number) if number.isdigit() else 0
