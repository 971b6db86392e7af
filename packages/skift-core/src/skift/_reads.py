"""Reads: one node, the ready queue, listings with filters and pages, and Explain.

Explain loads a node's upstream cone once (:class:`_Cone`) and says why it is
not ready: closed, archived, blocked (naming gates and the holds that stall
them), open children, a live lease, a hold (its own, an ancestor's, its
project's), or no path to readiness at all.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, cast, overload
from uuid import UUID

import attrs

from . import _readiness as readiness
from ._context import Actor, Context
from ._errors import Invalid
from ._filter import NodeFilter
from ._filter import filter_from as filter_from
from ._models import BOOKKEEPING_KIND, Node, Project, Status
from ._pages import bad_position, position, read_position, read_rows
from ._pages import cut as cut_page
from ._readiness import ReadyKey
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
        self, tx: Tx, actor: Actor, flt: NodeFilter, *, for_work: bool, hide: bool = True
    ) -> tuple[ReadyQuery, list[Project]]:
        """The store's query for ``flt``. ``hide=False`` leaves the projects hidden from
        the caller out of it (no read): for a store that takes the claim only where none
        can be (:meth:`Tx.take_next_ready`)."""
        if for_work and (flt.status is not None or flt.held is not None):
            raise Invalid(
                "status and held filter listings only",
                next="Leave status and held out of ready and claim; list the nodes to see closed or held ones.",
                field="filter.status" if flt.status is not None else "filter.held",
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
            agent_only=for_work and (not actor.is_user or flt.agent_work),
            # a tool's state is not work: Ready and ClaimNext leave it out unless asked for
            bookkeeping=not for_work or BOOKKEEPING_KIND in flt.kinds,
            max_priority_rank=flt.min_priority.rank if flt.min_priority else 4,
            parent=parent,
            # the projects the caller may not read; a filter naming projects has
            # resolved each already (an unreadable one is not found)
            hidden=() if projects or not hide else tuple(await self.hidden(tx)),
        )
        return q, projects

    async def ready(
        self, tx: Tx, actor: Actor, flt: NodeFilter, *, limit: int | None, page: str | None
    ) -> ReadyPage:
        """``limit`` ready nodes in turn order, from ``page`` on (keyset: see
        :class:`ReadyEnds`: a walk whose list changes between pages sends no node twice
        and skips none that is ready throughout; a page of another filter is refused)."""
        size = self.page_size(limit)
        digest = flt.scope_hash()
        at = read_rows("ready", page, (str, UUID), (UUID, int, datetime, int))
        # the cursor first: the statement brings the clock and the restricted projects
        # along, which the filter's read decision needs (no round trip of its own)
        turn = await tx.get_cursor(actor.id, digest)
        sent: dict[UUID, ReadyKey] = {}
        if at is not None:
            (made_for, turn), rows = at
            if made_for != digest:
                raise bad_position(cast(str, page), "was made for Ready with another filter")
            sent = {r[0]: (r[1], r[2], r[3]) for r in rows}
        q, _ = await self.resolve_filter(tx, actor, flt, for_work=True)
        keys = tuple((pid, *k) for pid, k in sent.items())
        q = attrs.evolve(q, after_project=turn, limit=size + 1, after_keys=keys)
        nodes = await tx.ready(q)
        more = len(nodes) > size
        nodes = nodes[:size]
        held, exact = await self.held_count(tx, attrs.evolve(q, after_keys=()))
        ends = ReadyEnds(digest, sent, nodes)
        return ReadyPage(
            nodes=tuple(await self.infos(tx, nodes)),
            held_count=held,
            next_page=ends[-1] if more and nodes else None,
            held_count_exact=exact,
            ends=ends,
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
        """Nodes by project, then number: ``limit`` of them after ``page`` (keyset: the
        (project, number) of the last node sent, so nodes created or changed meanwhile
        move no other node; one that stops matching the filter is simply not sent)."""
        size = self.page_size(limit)
        after = read_position("nodes", page, (UUID, int))
        q, _ = await self.resolve_filter(tx, actor, flt, for_work=False)
        q = attrs.evolve(
            q, limit=size + 1, after_node=None if after is None else (after[0], after[1])
        )
        got = await tx.list_nodes(q, status=flt.status, held=flt.held)
        nodes, ends, more = cut_page("nodes", got, size, lambda n: (n.project_id, n.number))
        held, exact = await self.held_count(tx, attrs.evolve(q, after_node=None))
        return ReadyPage(
            nodes=tuple(await (self.attributed if attributed else self.infos)(tx, nodes)),
            held_count=held,
            next_page=ends[-1] if more else None,
            held_count_exact=exact,
            ends=tuple(ends),
        )

    # ----------------------------------------------------------------- explain

    async def explain(self, tx: Tx, ref: str, project_ref: str | None) -> Explanation:
        node = await self.node_in(tx, ref, project_ref)
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
        for b in cone.waits(0)[0]:
            blocker = cone.nodes[b]
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
            stall = cone.hold_upstream(b)
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
        kids = cone.open_children(0)
        if kids:
            reasons.append(
                Reason(
                    kind="open_children",
                    detail={"count": len(kids), "refs": [cone.ref(k) for k in kids]},
                )
            )
        live = (await tx.live_leases([node.id])).get(node.id) if cone.leased else None
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
        hold = cone.hold_of(0)
        if hold is not None:
            reasons.append(Reason(kind="held", detail=hold))
        if node.status is Status.OPEN:
            doom = cone.doom(0)
            if doom is not None:
                reasons.append(Reason(kind="no_path", detail=doom))
        reasons = [await self._name_principals(tx, r) for r in reasons]
        # ready by the same rule every read derives it with, over the cone just read
        # (a cone cut at its bound asks the store)
        derived = cone.derived(leased=live is not None)
        if derived is None:
            derived = (await tx.derive([node.id]))[node.id]
        return Explanation(
            ref=cone.ref(node),
            title=node.title,
            ready=derived_ready(derived, node),
            reasons=tuple(reasons),
        )

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


class ReadyEnds(Sequence[str]):
    """The position after each node of a Ready page, made when asked for (a page of 50 in
    a walk that has reached many projects would otherwise build 50 long texts to send one).

    Ready is a merge of every project's ready nodes (each by priority, age and number)
    in turn order, so a position in it is a position in each: the filter's digest, the
    project of the last node sent (the next page's turn goes on after it), and for each
    project the walk has sent nodes of, the (priority, age, number) of the last one. The
    next page reads, in each project, only the nodes after its own; so a node that is
    ready throughout is sent once: never again (it is behind its project's position),
    never skipped (every node of a project ahead of the position is still to come). A
    node whose priority changes moves within its project's order like any sort key.
    """

    def __init__(self, digest: str, sent: Mapping[UUID, ReadyKey], nodes: Sequence[Node]):
        self._digest, self._sent, self._nodes = digest, sent, nodes
        self._made: dict[int, str] = {}  # the positions made: the page's last is asked twice

    def __len__(self) -> int:
        return len(self._nodes)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[str]: ...
    def __getitem__(self, i: int | slice) -> str | Sequence[str]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        i = range(len(self))[i]
        made = self._made.get(i)
        if made is None:
            keys = dict(self._sent)
            for n in self._nodes[: i + 1]:
                keys[n.project_id] = readiness.project_order_key(n)
            flat = [part for pid in sorted(keys) for part in (pid, *keys[pid])]
            made = self._made[i] = position("ready", self._digest, self._nodes[i].project_id, *flat)
        return made


_Step = tuple[int, bool]  # Explain's doom walk: a node to walk, and whether it is a blocker
_UNKNOWN = -2  # _Cone._holder: not walked yet (-1: no hold at or above)
_ON_PATH = -3  # _Cone._holder: on the path being walked


class _Cone:
    """The upstream cone of one node, loaded once for Explain.

    It answers which blockers are unsatisfied, where a hold upstream stalls the
    node, and whether the node has any path to readiness at all. The cone's
    nodes are numbered as they are loaded (the root is 0, the parents above the
    cone come after the cone's own nodes) and every walk goes by number: a walk
    looks each node's neighbours up in lists, never in a dict keyed by UUID,
    which costs a Python call per lookup.
    """

    def __init__(self, engine: Context, hidden: frozenset[UUID] = frozenset()) -> None:
        self.e = engine
        self.hidden = hidden
        self.nodes: list[Node] = []  # the cone's nodes (the root first), then those above
        self.at: dict[UUID, int] = {}  # a node's number
        self.size = 0  # how many of nodes are the cone's own
        self.complete = True  # the cone was not cut at its bound
        self.leased = False  # the root holds a live lease
        self.walked: list[bool] = []  # the root and open nodes outside hidden projects
        self.sources: list[list[int]] = []  # a walked node's blockers (edge sources)
        self.children: list[list[int]] = []  # a walked node's children
        self.parent: list[int] = []  # -1: none, or not loaded (a node not walked from)
        self.projects: dict[UUID, Project] = {}
        self._waits: list[tuple[list[int], list[int]] | None] = []
        self._holder: list[int] = []  # the nearest held node at or above (-1 none)

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
        # one read for the whole cone and the parents above it (a chain 100 deep took
        # 300 reads one level at a time; the parents above came in a read of their own)
        got = await tx.upstream_cone(root.id, bound, hidden=hidden)
        nodes, at = cone.nodes, cone.at
        nodes.append(root)
        at[root.id] = 0
        found: list[Sequence[UUID]] = [()]
        for n, srcs in got.nodes:
            i = at.setdefault(n.id, len(nodes))
            if i == len(nodes):
                nodes.append(n)
                found.append(srcs)
            elif i == 0:
                found[0] = srcs
        cone.leased = got.leased
        cone.size = size = len(nodes)
        cone.complete = size < bound
        for n in got.above:
            if at.setdefault(n.id, len(nodes)) == len(nodes):
                nodes.append(n)
        open_ = Status.OPEN
        walked = [
            i == 0 or (n.status is open_ and not (hidden and n.project_id in hidden))
            for i, n in enumerate(nodes)
        ]
        for i in range(size, len(nodes)):
            walked[i] = False  # above the cone: read for its holds, never walked from
        sources: list[list[int]] = [[] for _ in nodes]
        children: list[list[int]] = [[] for _ in nodes]
        parent = [-1] * len(nodes)
        get = at.get
        for i, n in enumerate(nodes):
            if i < size and walked[i] and found[i]:
                # an edge from past the bound is left out
                sources[i] = [j for s in found[i] if (j := get(s, size)) < size]
            if n.parent_id is not None:
                p = get(n.parent_id, -1)
                parent[i] = p
                if 0 <= p < size and i < size and walked[p]:
                    children[p].append(i)
        cone.walked, cone.sources, cone.children, cone.parent = walked, sources, children, parent
        cone._waits = [None] * len(nodes)
        cone._holder = [_UNKNOWN] * len(nodes)
        cone.projects = await tx.projects_by_id({n.project_id for n in nodes})
        return cone

    def ref(self, node: Node) -> str:
        return format_ref(self.projects[node.project_id].slug, node.number)

    def waits(self, i: int) -> tuple[list[int], list[int]]:
        """What node ``i`` waits on: its unsatisfied blockers (by project, then number)
        and its open children (by number); worked out once per node."""
        got = self._waits[i]
        if got is None:
            nodes = self.nodes
            blockers = [b for b in self.sources[i] if not nodes[b].satisfies_edge()]
            if len(blockers) > 1:
                blockers.sort(key=lambda b: (nodes[b].project_id, nodes[b].number))
            kids = [c for c in self.children[i] if nodes[c].status is Status.OPEN]
            if len(kids) > 1:
                kids.sort(key=lambda c: nodes[c].number)
            got = self._waits[i] = (blockers, kids)
        return got

    def unsatisfied(self, i: int) -> list[Node]:
        return [self.nodes[b] for b in self.waits(i)[0]]

    def open_children(self, i: int) -> list[Node]:
        return [self.nodes[c] for c in self.waits(i)[1]]

    def derived(self, leased: bool) -> Derived | None:
        """The root's derived facts, by the reference rule (``_readiness.derive``) over the
        cone, or None when the cone was cut at its bound (its edges may be missing)."""
        if not self.complete:
            return None
        # the root's blockers and children, and its parents up to the nearest held one
        # (the rule walks up no further than the first hold; with none above, not at all)
        near = [*self.sources[0], *self.children[0]]
        holder = self._held_above(0)
        j = self.parent[0] if holder > 0 else -1
        while j >= 0:
            near.append(j)
            j = self.parent[j] if j != holder else -1
        root = self.nodes[0]
        return readiness.derive(
            root,
            nodes={self.nodes[k].id: self.nodes[k] for k in near},
            blockers=[self.nodes[b].id for b in self.sources[0]],
            children=[self.nodes[c].id for c in self.children[0]],
            projects=self.projects,
            leased={root.id} if leased else set[UUID](),
        )

    def hold_of(self, i: int) -> dict[str, Any] | None:
        """The hold that parks node ``i`` (its own, an ancestor's, or its project's)."""
        node = self.nodes[i]
        # an open node's ancestors' holds park it too (a closed node's own only)
        if node.status is Status.OPEN:
            holder = self._held_above(i)
        else:
            holder = i if node.hold is not None else -1
        hold = self.nodes[holder].hold if holder >= 0 else None
        if hold is not None:
            return {
                "on": self.ref(self.nodes[holder]),
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

    def _held_above(self, i: int) -> int:
        """The nearest node at or above node ``i`` (itself, then its parents) with a hold,
        or -1; remembered for every node on the way, so walking a deep tree stays linear."""
        holder, nodes, parent = self._holder, self.nodes, self.parent
        path: list[int] = []
        found = -1
        cur = i
        while cur >= 0:
            known = holder[cur]
            if known == _ON_PATH:
                break  # a parent cycle
            if known != _UNKNOWN:
                found = known
                break
            if nodes[cur].hold is not None:
                found = cur
                break
            holder[cur] = _ON_PATH
            path.append(cur)
            cur = parent[cur]
        for p in path:
            holder[p] = found
        return found

    def hold_upstream(self, i: int) -> dict[str, Any] | None:
        """The first hold found walking up from an open blocker, so Explain traces a stall to it."""
        if all(n.hold is None for n in self.nodes) and all(
            p.hold is None for p in self.projects.values()
        ):
            return None  # nothing in the cone, above it or in its projects is held
        seen: set[int] = set()
        queue = [i]
        for cur in queue:  # breadth first: the queue grows as it is read
            node = self.nodes[cur]
            if cur in seen or node.status is not Status.OPEN:
                continue
            if self.hidden and node.project_id in self.hidden:
                continue
            seen.add(cur)
            found = self.hold_of(cur)
            if found is not None:
                return found
            blockers, kids = self.waits(cur)
            queue.extend(blockers)
            queue.extend(kids)
        return None

    def doom(self, nid: int) -> dict[str, Any] | None:
        """Why a node can never become ready through ordinary work, or None if it can.

        A node is doomed when its project is archived, when a dropped gate blocks
        it (only completion satisfies a gate), or when something it waits on
        (an unsatisfied blocker or an open child) can never be completed.
        """
        nodes = self.nodes
        if all(p.archived_at is None for p in self.projects.values()) and all(
            nodes[i].status is not Status.DROPPED for i in range(self.size)
        ):
            return None  # no archived project and no dropped gate to be doomed by
        # A depth-first walk with its own stack (a chain of blockers thousands deep
        # would overflow Python's): each node's answer is its own (an open node in an
        # archived project), else the first of its unsatisfied blockers' (a dropped one
        # is the answer itself), else the first of its open children's. A node being
        # walked answers None to a cycle back to it.
        memo: dict[int, dict[str, Any] | None] = {}

        def begin(cur: int) -> dict[str, Any] | Iterator[_Step] | None:
            memo[cur] = None
            node = nodes[cur]
            if self.hidden and node.project_id in self.hidden:
                return None  # what is beyond a project the caller may not read stays unread
            project = self.projects[node.project_id]
            if project.archived_at is not None and node.status is Status.OPEN:
                return {
                    "at": self.ref(node),
                    "why": f"{self.ref(node)} is open in archived project {project.slug}",
                }
            if not self.walked[cur]:
                return None
            blockers, kids = self.waits(cur)
            return iter([(b, True) for b in blockers] + [(c, False) for c in kids])

        stack: list[tuple[int, Iterator[_Step]]] = []
        found: dict[str, Any] | None = None
        first = begin(nid)
        if not isinstance(first, Iterator):
            return first
        stack.append((nid, first))
        while stack:
            cur, steps = stack[-1]
            if found is None:
                for step, is_blocker in steps:
                    if is_blocker and nodes[step].status is Status.DROPPED:
                        ref = self.ref(nodes[step])
                        found = {
                            "at": ref,
                            "why": f"{ref} is a dropped gate; only completing it satisfies the edge",
                        }
                        break
                    if step in memo:
                        found = memo[step]
                    else:
                        started = begin(step)
                        if isinstance(started, Iterator):
                            stack.append((step, started))
                            break
                        found = memo[step] = started
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


def derived_ready(d: Derived, node: Node) -> bool:
    return d.ready and node.status is Status.OPEN
