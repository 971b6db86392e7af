"""Reads: one node, the ready queue, listings with filters and pages, and Explain.

Explain loads a node's upstream cone once (:class:`_Cone`) and says why it is
not ready: closed, archived, blocked (naming gates and the holds that stall
them), open children, a live lease, a hold (its own, an ancestor's, its
project's), or no path to readiness at all.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
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


_Step = tuple[Node, bool]  # Explain's doom walk: a node to walk, and whether it is a blocker


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
        self.up: dict[UUID, Node] = {}  # the cone's nodes and the parents above them
        self._holder: dict[UUID, Node | None] = {}  # the nearest held node at or above

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
        # one read for the whole cone (a chain 100 deep took 300 reads, one level at a time)
        found = await tx.upstream_cone(root.id, bound, hidden=hidden)
        for n, _ in found:
            cone.nodes.setdefault(n.id, n)
        for n, sources in found:
            # the root and open nodes are walked on (nothing upstream of a node the caller
            # may not read): their blockers and children are known
            if n.id == root.id or (n.status is Status.OPEN and n.project_id not in hidden):
                cone.blockers[n.id] = list(sources)
                cone.children.setdefault(n.id, [])
        for n, _ in found:
            if n.parent_id is not None and n.parent_id in cone.blockers:
                cone.children[n.parent_id].append(n.id)
        cone.projects = await tx.projects_by_id({n.project_id for n in cone.nodes.values()})
        # the parents above the cone's open nodes: most are in the cone; a chain that
        # leaves it is read once (tx.ancestors), and every node under it shares it
        cone.up = dict(cone.nodes)
        known: set[UUID] = set()  # nodes whose whole parent chain is in cone.up
        for n in list(cone.nodes.values()):
            if n.status is not Status.OPEN:
                continue
            path: set[UUID] = set()
            top = n
            while top.id not in known and top.id not in path:  # (never a parent cycle)
                path.add(top.id)
                if top.parent_id is None or top.parent_id not in cone.up:
                    break
                top = cone.up[top.parent_id]
            if top.id not in known and top.parent_id is not None and top.parent_id not in cone.up:
                for a in await tx.ancestors(top.id):
                    cone.up.setdefault(a.id, a)
                    known.add(a.id)
            known.update(path)
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
        # an open node's ancestors' holds park it too (a closed node's own only)
        holder = self._held_above(node) if node.status is Status.OPEN else node
        hold = holder.hold if holder is not None else None
        if holder is not None and hold is not None:
            return {
                "on": self.ref(holder),
                "by": hold.by,
                "reason": hold.reason,
                "at": hold.at.isoformat(),
                "group": ulid_str(hold.group) if hold.group else None,
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

    def _held_above(self, node: Node) -> Node | None:
        """The nearest node at or above ``node`` (itself, then its parents) with a hold;
        remembered for every node on the way, so walking a deep tree stays linear."""
        path: list[UUID] = []
        seen: set[UUID] = set()
        found: Node | None = None
        cur: Node | None = node
        while cur is not None:
            if cur.id in self._holder:
                found = self._holder[cur.id]
                break
            if cur.hold is not None:
                found = cur
                break
            if cur.id in seen:
                break  # a parent cycle
            path.append(cur.id)
            seen.add(cur.id)
            cur = self.up.get(cur.parent_id) if cur.parent_id is not None else None
        for p in path:
            self._holder[p] = found
        return found

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
        # A depth-first walk with its own stack (a chain of blockers thousands deep
        # would overflow Python's): each node's answer is its own (an open node in an
        # archived project), else the first of its unsatisfied blockers' (a dropped one
        # is the answer itself), else the first of its open children's. A node being
        # walked answers None to a cycle back to it.
        memo: dict[UUID, dict[str, Any] | None] = {}

        def begin(cur: UUID) -> dict[str, Any] | Iterator[_Step] | None:
            memo[cur] = None
            node = self.nodes[cur]
            if node.project_id in self.hidden:
                return None  # what is beyond a project the caller may not read stays unread
            project = self.projects[node.project_id]
            if project.archived_at is not None and node.status is Status.OPEN:
                return {
                    "at": self.ref(node),
                    "why": f"{self.ref(node)} is open in archived project {project.slug}",
                }
            if cur not in self.blockers:
                return None
            blockers: list[_Step] = [(b, True) for b in self.unsatisfied(cur)]
            children: list[_Step] = [(c, False) for c in self.open_children(cur)]
            return iter(blockers + children)

        stack: list[tuple[UUID, Iterator[_Step]]] = []
        found: dict[str, Any] | None = None
        first = begin(nid)
        if not isinstance(first, Iterator):
            return first
        stack.append((nid, first))
        while stack:
            cur, steps = stack[-1]
            if found is None:
                for step, is_blocker in steps:
                    if is_blocker and step.status is Status.DROPPED:
                        found = {
                            "at": self.ref(step),
                            "why": f"{self.ref(step)} is a dropped gate; only completing it satisfies the edge",
                        }
                        break
                    if step.id in memo:
                        found = memo[step.id]
                    else:
                        started = begin(step.id)
                        if isinstance(started, Iterator):
                            stack.append((step.id, started))
                            break
                        found = memo[step.id] = started
                    if found is not None:
                        break
                else:
                    stack.pop()  # every step answered None
                    continue
                if stack[-1][0] != cur:
                    continue  # walk the node just started
            memo[cur] = found
            stack.pop()
        return found


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
