"""Reads: one node, the ready queue, listings with filters and pages, and Explain.

Explain loads a node's upstream cone once (:class:`_Cone`) and says why it is
not ready: closed, archived, blocked (naming gates and the holds that stall
them), open children, a live lease, a hold (its own, an ancestor's, its
project's), or no path to readiness at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast
from uuid import UUID

import attrs

from ._context import Actor, Context
from ._errors import Invalid
from ._filter import NodeFilter
from ._models import AssigneeKind, Node, Priority, Project, Status
from ._refs import format_ref, ulid_str
from ._store import Derived, ReadyQuery, Tx
from ._views import Explanation, NodeInfo, ReadyPage, Reason


class Reads(Context):
    """The read side of the rules: get, ready, list, explain."""

    # ------------------------------------------------------------------- reads

    async def get(self, tx: Tx, ref: str, project_ref: str | None) -> NodeInfo:
        node = await self.node_in(tx, ref, project_ref)
        return (await self.attributed(tx, [node]))[0]

    async def resolve_filter(
        self, tx: Tx, actor: Actor, flt: NodeFilter, *, for_work: bool
    ) -> tuple[ReadyQuery, list[Project]]:
        if for_work and (flt.status is not None or flt.held is not None):
            raise Invalid(
                "status and held filter listings only",
                next="Leave status/held out of ready and claim; use 'skift list' to see closed or held nodes.",
            )
        projects = [await self.resolve_project(tx, p) for p in flt.projects]
        parent: UUID | None = None
        if flt.parent is not None:
            parent = (
                await self.resolve_node(tx, flt.parent, projects[0] if len(projects) == 1 else None)
            ).id
        q = ReadyQuery(
            projects=tuple(p.id for p in projects),
            kinds=flt.kinds,
            labels=flt.labels,
            any_labels=flt.any_labels,
            assignee_kind=flt.assignee_kind,
            agent_only=for_work and not actor.is_user,
            max_priority_rank=flt.min_priority.rank if flt.min_priority else 4,
            parent=parent,
            # the projects the caller may not read; a filter naming projects has
            # resolved each already (an unreadable one is not found)
            hidden=() if projects else tuple(await self.hidden(tx)),
        )
        return q, projects

    async def ready(
        self, tx: Tx, actor: Actor, flt: NodeFilter, *, limit: int | None, page: str | None
    ) -> ReadyPage:
        size = self.page_size(limit)
        offset = _decode_page(page)
        # the cursor first: the statement brings the clock and the restricted projects
        # along, which the filter's read decision needs (no round trip of its own)
        cursor = await tx.get_cursor(actor.id, flt.scope_hash())
        q, _ = await self.resolve_filter(tx, actor, flt, for_work=True)
        q = attrs.evolve(q, after_project=cursor, limit=size + 1, offset=offset)
        nodes = await tx.ready(q)
        more = len(nodes) > size
        nodes = nodes[:size]
        held, exact = await self.held_count(tx, q)
        return ReadyPage(
            nodes=tuple(await self.infos(tx, nodes)),
            held_count=held,
            next_page=_encode_page(offset + size) if more else None,
            held_count_exact=exact,
        )

    async def held_count(self, tx: Tx, q: ReadyQuery) -> tuple[int, bool]:
        """held_count up to Limits.held_count_bound, and whether it is exact: the
        store counts one past the bound, so a count that stops there says "at
        least" and the cost of a page follows the bound, not how much is held."""
        bound = self.limits.held_count_bound
        n = await tx.held_count(q, at_most=bound + 1)
        return (bound, False) if n > bound else (n, True)

    async def list_nodes(
        self,
        tx: Tx,
        actor: Actor,
        flt: NodeFilter,
        *,
        limit: int | None,
        page: str | None,
        attributed: bool = False,
    ) -> ReadyPage:
        size = self.page_size(limit)
        offset = _decode_page(page)
        q, _ = await self.resolve_filter(tx, actor, flt, for_work=False)
        q = attrs.evolve(q, limit=size + 1, offset=offset)
        nodes = await tx.list_nodes(q, status=flt.status, held=flt.held)
        more = len(nodes) > size
        nodes = nodes[:size]
        held, exact = await self.held_count(tx, attrs.evolve(q, offset=0))
        return ReadyPage(
            nodes=tuple(await (self.attributed if attributed else self.infos)(tx, nodes)),
            held_count=held,
            next_page=_encode_page(offset + size) if more else None,
            held_count_exact=exact,
        )

    # ----------------------------------------------------------------- explain

    async def explain(self, tx: Tx, ref: str, project_ref: str | None) -> Explanation:
        node = await self.node_in(tx, ref, project_ref)
        info = (await self.infos(tx, [node]))[0]
        reasons: list[Reason] = []
        own_project = await tx.project_by_id(node.project_id)
        assert own_project is not None
        if node.status is not Status.OPEN:
            reasons.append(Reason(kind="closed", detail={"status": node.status.value}))
        if own_project.archived_at is not None:
            reasons.append(
                Reason(
                    kind="archived",
                    detail={"project": own_project.slug, "at": own_project.archived_at.isoformat()},
                )
            )
        cone = await _Cone.load(self, tx, node, hidden=await self.hidden(tx))
        for blocker in cone.unsatisfied(node.id):
            if blocker.project_id in cone.hidden:
                # a blocker in a project the caller may not read: that it blocks is all
                # Explain says (where it is, what it is, and what stalls it stay unread)
                reasons.append(
                    Reason(
                        kind="blocked_by",
                        detail={"ref": "", "title": "", "status": "open", "unreadable": True},
                    )
                )
                continue
            detail: dict[str, Any] = {
                "ref": cone.ref(blocker),
                "title": blocker.title,
                "status": blocker.status.value,
            }
            if blocker.is_gate:
                detail["gate"] = True
            stall = cone.hold_upstream(blocker.id)
            if stall is not None:
                detail["held"] = stall
            reasons.append(Reason(kind="blocked_by", detail=detail))
            if blocker.is_gate and blocker.status is Status.OPEN:
                reasons.append(
                    Reason(
                        kind="waiting_on_person",
                        detail={
                            "ref": cone.ref(blocker),
                            "title": blocker.title,
                            "assignee": blocker.assignee,
                        },
                    )
                )
        kids = cone.open_children(node.id)
        if kids:
            reasons.append(
                Reason(
                    kind="open_children",
                    detail={"count": len(kids), "refs": [cone.ref(k) for k in kids]},
                )
            )
        live = (await tx.live_leases([node.id])).get(node.id)
        if live is not None:
            holder = (await tx.principals_by_id([live.holder])).get(live.holder)
            reasons.append(
                Reason(
                    kind="leased",
                    detail={
                        "holder": holder.name if holder else ulid_str(live.holder),
                        "until": live.expires_at.isoformat(),
                        "harness": live.harness,
                        "agent_ref": live.agent_ref,
                    },
                )
            )
        hold = cone.hold_of(node.id)
        if hold is not None:
            reasons.append(Reason(kind="held", detail=hold))
        if node.status is Status.OPEN:
            doom = cone.doom(node.id)
            if doom is not None:
                reasons.append(Reason(kind="no_path", detail=doom))
        reasons = [await self._name_principals(tx, r) for r in reasons]
        return Explanation(ref=info.ref, title=node.title, ready=info.ready, reasons=tuple(reasons))

    async def _name_principals(self, tx: Tx, reason: Reason) -> Reason:
        detail = dict(reason.detail)
        for key in ("by",):
            if isinstance(detail.get(key), UUID):
                pid: UUID = detail[key]
                p = (await tx.principals_by_id([pid])).get(pid)
                detail[key] = p.name if p else ulid_str(pid)
        held = detail.get("held")
        if isinstance(held, dict):
            inner = cast(dict[str, Any], held)
            detail["held"] = (
                await self._name_principals(tx, Reason(kind="held", detail=inner))
            ).detail
        return Reason(kind=reason.kind, detail=detail)


def _encode_page(offset: int) -> str:
    return f"o{offset}"


def _decode_page(page: str | None) -> int:
    if not page:
        return 0
    if page.startswith("o") and page[1:].isdigit():
        return int(page[1:])
    raise Invalid(
        f"{page!r} is not a page token",
        next="Pass next_page exactly as a previous page returned it.",
    )


class _Cone:
    """The upstream cone of one node, loaded once for Explain.

    It answers which blockers are unsatisfied, where a hold upstream stalls the
    node, and whether the node has any path to readiness at all.
    """

    def __init__(self, engine: Context, hidden: frozenset[UUID] = frozenset()) -> None:
        self.e = engine
        self.hidden = hidden
        self.nodes: dict[UUID, Node] = {}
        self.blockers: dict[UUID, list[UUID]] = {}
        self.children: dict[UUID, list[UUID]] = {}
        self.projects: dict[UUID, Project] = {}
        self.ancestors: dict[UUID, list[Node]] = {}

    @classmethod
    async def load(
        cls,
        engine: Context,
        tx: Tx,
        root: Node,
        bound: int = 5000,
        *,
        hidden: frozenset[UUID] = frozenset(),
    ) -> _Cone:
        cone = cls(engine, hidden)
        cone.nodes[root.id] = root
        frontier = [root.id]
        while frontier and len(cone.nodes) < bound:
            edges = await tx.edges_into(frontier)
            kids = await tx.children_of(frontier)
            for f in frontier:
                cone.blockers.setdefault(f, [])
                cone.children.setdefault(f, [])
            new_ids = {e.from_id for e in edges} - set(cone.nodes)
            loaded = await tx.nodes_by_id(new_ids) if new_ids else {}
            for e in edges:
                cone.blockers[e.to_id].append(e.from_id)
            for k in kids:
                assert k.parent_id is not None
                cone.children[k.parent_id].append(k.id)
                loaded.setdefault(k.id, k)
            for nid, n in loaded.items():
                if nid not in cone.nodes:
                    cone.nodes[nid] = n
            # only open nodes can hold anything up further; nothing upstream of a node
            # the caller may not read is walked
            frontier = [
                nid
                for nid in loaded
                if cone.nodes[nid].status is Status.OPEN
                and nid not in cone.blockers
                and cone.nodes[nid].project_id not in hidden
            ]
        cone.projects = await tx.projects_by_id({n.project_id for n in cone.nodes.values()})
        for nid, n in cone.nodes.items():
            if n.status is Status.OPEN:
                # a node without a parent has no ancestors: no query (a chain of 100 blockers
                # made 100 of them)
                cone.ancestors[nid] = await tx.ancestors(nid) if n.parent_id is not None else []
        return cone

    def ref(self, node: Node) -> str:
        return format_ref(self.projects[node.project_id].slug, node.number)

    def unsatisfied(self, nid: UUID) -> list[Node]:
        out = [
            self.nodes[b] for b in self.blockers.get(nid, []) if not self.nodes[b].satisfies_edge()
        ]
        return sorted(out, key=lambda n: (n.project_id, n.number))

    def open_children(self, nid: UUID) -> list[Node]:
        out = [
            self.nodes[c] for c in self.children.get(nid, []) if self.nodes[c].status is Status.OPEN
        ]
        return sorted(out, key=lambda n: n.number)

    def hold_of(self, nid: UUID) -> dict[str, Any] | None:
        """The hold that parks this node (its own, an ancestor's, or its project's)."""
        node = self.nodes[nid]
        for holder in [node, *self.ancestors.get(nid, [])]:
            if holder.hold is not None:
                return {
                    "on": self.ref(holder),
                    "by": holder.hold.by,
                    "reason": holder.hold.reason,
                    "at": holder.hold.at.isoformat(),
                    "group": ulid_str(holder.hold.group) if holder.hold.group else None,
                }
        project = self.projects[node.project_id]
        if project.hold is not None:
            return {
                "on": f"project {project.slug}",
                "by": project.hold.by,
                "reason": project.hold.reason,
                "at": project.hold.at.isoformat(),
                "group": ulid_str(project.hold.group) if project.hold.group else None,
            }
        return None

    def hold_upstream(self, nid: UUID) -> dict[str, Any] | None:
        """The first hold found walking up from an open blocker, so Explain traces a stall to it."""
        seen: set[UUID] = set()
        stack = [nid]
        while stack:
            cur = stack.pop(0)
            if cur in seen or cur not in self.nodes or self.nodes[cur].status is not Status.OPEN:
                continue
            if self.nodes[cur].project_id in self.hidden:
                continue
            seen.add(cur)
            found = self.hold_of(cur)
            if found is not None:
                return found
            stack.extend(b.id for b in self.unsatisfied(cur))
            stack.extend(c.id for c in self.open_children(cur))
        return None

    def doom(self, nid: UUID) -> dict[str, Any] | None:
        """Why a node can never become ready through ordinary work, or None if it can.

        A node is doomed when its project is archived, when a dropped gate blocks
        it (only completion satisfies a gate), or when something it waits on
        (an unsatisfied blocker or an open child) can never be completed.
        """
        memo: dict[UUID, dict[str, Any] | None] = {}

        def walk(cur: UUID, depth: int) -> dict[str, Any] | None:
            if cur in memo:
                return memo[cur]
            memo[cur] = None
            node = self.nodes[cur]
            if node.project_id in self.hidden:
                return None  # what is beyond a project the caller may not read stays unread
            result: dict[str, Any] | None = None
            project = self.projects[node.project_id]
            if project.archived_at is not None and node.status is Status.OPEN:
                result = {
                    "at": self.ref(node),
                    "why": f"{self.ref(node)} is open in archived project {project.slug}",
                }
            if result is None and cur in self.blockers:
                for b in self.unsatisfied(cur):
                    if b.status is Status.DROPPED:
                        result = {
                            "at": self.ref(b),
                            "why": f"{self.ref(b)} is a dropped gate; only completing it satisfies the edge",
                        }
                        break
                    inner = walk(b.id, depth + 1)
                    if inner is not None:
                        result = inner
                        break
                if result is None:
                    for c in self.open_children(cur):
                        inner = walk(c.id, depth + 1)
                        if inner is not None:
                            result = inner
                            break
            memo[cur] = result
            return result

        return walk(nid, 0)


def filter_from(
    projects: Sequence[str] = (),
    kinds: Sequence[str] = (),
    labels: Sequence[str] = (),
    any_labels: Sequence[str] = (),
    assignee_kind: AssigneeKind | str | None = None,
    min_priority: Priority | str | None = None,
    parent: str | None = None,
    status: Status | str | None = None,
    held: bool | None = None,
) -> NodeFilter:
    try:
        return NodeFilter(
            projects=tuple(projects),
            kinds=tuple(kinds),
            labels=tuple(labels),
            any_labels=tuple(any_labels),
            assignee_kind=AssigneeKind(assignee_kind) if assignee_kind else None,
            min_priority=Priority(min_priority) if min_priority else None,
            parent=parent,
            status=Status(status) if status else None,
            held=held,
        )
    except ValueError as exc:
        raise Invalid(
            str(exc),
            next="assignee_kind is agent|user; min_priority p0..p4; status open|done|dropped.",
        ) from None


def derived_ready(d: Derived, node: Node) -> bool:
    return d.ready and node.status is Status.OPEN
