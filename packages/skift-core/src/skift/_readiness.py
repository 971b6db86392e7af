"""Readiness and the turn order, in Python: the reference the SQL must equal.

A node is ready when it is open, no ``blocks`` edge into it comes from a node
that has not satisfied it, it has no live lease, no open children, no hold on
it, an ancestor or its project, and its project is not archived. Readiness is
derived at read time and never stored.

The in-memory store computes readiness with these functions; the PostgreSQL
store computes the same thing in SQL, and the state machine in
``tests/contract/test_state_machine.py`` keeps the two equal.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from datetime import datetime
from uuid import UUID

from ._models import AssigneeKind, Node, Project, Status
from ._store import Derived, ReadyQuery


def held(node: Node, nodes: Mapping[UUID, Node], projects: Mapping[UUID, Project]) -> bool:
    """Held when the node, any ancestor through ``parent_id``, or its project carries a hold."""
    if projects[node.project_id].hold is not None:
        return True
    current: Node | None = node
    seen: set[UUID] = set()
    while current is not None and current.id not in seen:
        if current.hold is not None:
            return True
        seen.add(current.id)
        current = nodes.get(current.parent_id) if current.parent_id else None
    return False


def derive(
    node: Node,
    *,
    nodes: Mapping[UUID, Node],
    blockers: Iterable[UUID],
    children: Iterable[UUID],
    projects: Mapping[UUID, Project],
    leased: Set[UUID],
) -> Derived:
    return Derived(
        blocked=any(not nodes[b].satisfies_edge() for b in blockers),
        held=held(node, nodes, projects),
        claimed=node.id in leased,
        open_children=any(nodes[c].status is Status.OPEN for c in children),
        archived=projects[node.project_id].archived_at is not None,
    )


def matches(node: Node, q: ReadyQuery) -> bool:
    """Does a node pass the filter of a Ready or ClaimNext (readiness aside)?"""
    if q.projects and node.project_id not in q.projects:
        return False
    if q.hidden and node.project_id in q.hidden:
        return False
    if q.kinds and node.kind not in q.kinds:
        return False
    if q.labels and not set(q.labels) <= set(node.labels):
        return False
    if q.any_labels and not set(q.any_labels) & set(node.labels):
        return False
    if q.assignee_kind is not None and node.assignee_kind is not q.assignee_kind:
        return False
    if q.agent_only and node.assignee_kind is AssigneeKind.USER:
        return False
    if not q.bookkeeping and node.is_bookkeeping:
        return False
    if node.priority.rank > q.max_priority_rank:
        return False
    if q.exclude and node.id in q.exclude:
        return False
    return not (q.parent is not None and node.parent_id != q.parent)


ReadyKey = tuple[int, datetime, int]
"""A node's place in its project's order: priority rank, creation time, number."""


def project_order_key(node: Node) -> ReadyKey:
    """Within a project: priority, then age, then number."""
    return (node.priority.rank, node.created_at, node.number)


def still_to_come(ready: Iterable[Node], q: ReadyQuery) -> list[Node]:
    """The ready nodes a walk of Ready has not passed (``q.after_keys``): in a project it
    has sent nodes of, those after the last one sent in the project's order."""
    keys = {k[0]: k[1:] for k in q.after_keys}
    return [n for n in ready if (k := keys.get(n.project_id)) is None or project_order_key(n) > k]


def turn_order(ready: Iterable[Node], after_project: UUID | None) -> list[Node]:
    """Round-robin across projects, one node per project per pass.

    Projects take turns in ascending id order, starting with the first project
    after ``after_project`` (the caller's rotation cursor), wrapping around.

    A walk of Ready pages goes on with the nodes still to come (:func:`still_to_come`)
    in the turn order after the project of the last node sent: a round-robin is a
    cycle, so that is the order the first page's rotation would have gone on in.
    """
    by_project: dict[UUID, list[Node]] = {}
    for n in ready:
        by_project.setdefault(n.project_id, []).append(n)
    keyed: list[tuple[int, bool, UUID, Node]] = []
    for pid, members in by_project.items():
        members.sort(key=project_order_key)
        wrapped = after_project is not None and pid <= after_project
        keyed.extend((rank, wrapped, pid, n) for rank, n in enumerate(members))
    keyed.sort(key=lambda t: (t[0], t[1], t[2]))
    return [t[3] for t in keyed]
