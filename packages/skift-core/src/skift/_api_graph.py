"""The API for projects and the graph: projects, patches, reads, drop and reopen."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any
from uuid import UUID

import attrs

from . import _leasing
from ._edges import EdgeInfo
from ._edges import edges as edges_around
from ._engine import Actor, filter_from
from ._errors import Invalid
from ._models import Priority, ReleaseReason
from ._ops import Cascade, CompleteNode, CreateNode, DropNode, Op, OpLike, ReopenNode, parse_op
from ._pages import Page, read_position
from ._pages import cut as cut_page
from ._refs import new_id, ulid_str
from ._session import Session, no_delegation
from ._store import EventPosition, Tx
from ._views import Explanation, NodeInfo, PatchResult, ProjectInfo, ReadyPage, Resolved


def request_id_or_new(request_id: str | None) -> str:
    """The caller's request id, or a fresh one; an empty one is Invalid."""
    if request_id is None:
        return ulid_str(new_id())
    if not request_id.strip():
        raise Invalid(
            "request_id is empty",
            next="Leave it out to have one made, or give a non-empty id.",
            field="request_id",
        )
    return request_id


def _ops(ops: Sequence[OpLike]) -> list[Op]:
    """Operations given as objects or as their JSON form (dicts)."""
    return [parse_op(op, i) if isinstance(op, dict) else op for i, op in enumerate(ops)]


class GraphApi(Session):
    """Projects, patches and the reads (get, resolve, ready, list, explain)."""

    # ---------------------------------------------------------------- projects

    async def create_project(
        self,
        title: str,
        *,
        slug: str | None = None,
        priority: Priority | str = Priority.P2,
        vcs_url: str = "",
    ) -> ProjectInfo:
        prio = _priority(priority)

        async def go(tx: Tx, a: Actor) -> ProjectInfo:
            p = await self.engine.create_project(
                tx, a, title, slug=slug, priority=prio, vcs_url=vcs_url
            )
            return (await self.engine.project_infos(tx, [p]))[0]

        return await self._run(go)

    async def get_project(self, ref: str) -> ProjectInfo:
        async def go(tx: Tx, a: Actor) -> ProjectInfo:
            p = await self.engine.resolve_project(tx, ref)
            return (await self.engine.project_infos(tx, [p]))[0]

        return await self._run(go)

    async def list_projects(
        self, *, archived: bool = False, limit: int | None = None, page: str | None = None
    ) -> Page[ProjectInfo]:
        """The org's projects, most recently active first: ``limit`` of them, from ``page``
        (a previous page's ``next_page``) on.

        A walk orders by each project's activity as of its first page (the change
        stream's horizon then; the position travels in the page token): a project that
        becomes active during the walk keeps its place, so no project that exists
        throughout is sent twice or skipped. Its ``active_at`` shows its latest activity;
        the next walk orders by it."""
        size = self.engine.page_size(limit)
        key = read_position("projects", page, (int, datetime, UUID))

        async def go(tx: Tx, a: Actor) -> Page[ProjectInfo]:
            got = await tx.project_page(
                archived=archived,
                limit=size + 1,
                hidden=await self.engine.hidden(tx),
                asof=None if key is None else EventPosition(seq=key[0]),
                after=None if key is None else (key[1], key[2]),
            )
            rows, ends, more = cut_page(
                "projects", got.projects, size, lambda r: (got.asof.seq, r[1], r[0].id)
            )
            infos = await self.engine.project_infos(tx, [p for p, _ in rows])
            return Page(infos, ends=ends, more=more)

        return await self._run(go)

    async def update_project(
        self,
        ref: str,
        *,
        title: str | None = None,
        slug: str | None = None,
        priority: Priority | str | None = None,
        vcs_url: str | None = None,
        budget: Decimal | int | str | None = None,
    ) -> ProjectInfo:
        """Change a project; ``budget`` (an amount, "" to clear) is reported beside its usage."""
        prio = _priority(priority) if priority is not None else None

        async def go(tx: Tx, a: Actor) -> ProjectInfo:
            p = await self.engine.update_project(
                tx, a, ref, title=title, slug=slug, priority=prio, vcs_url=vcs_url, budget=budget
            )
            return (await self.engine.project_infos(tx, [p]))[0]

        return await self._run(go)

    async def rename_project(self, ref: str, title: str, *, slug: str | None = None) -> ProjectInfo:
        return await self.update_project(ref, title=title, slug=slug)

    async def archive_project(self, ref: str, *, reason: str = "archived") -> ProjectInfo:
        async def go(tx: Tx, a: Actor) -> ProjectInfo:
            p = await self.engine.archive_project(tx, a, ref, reason)
            return (await self.engine.project_infos(tx, [p]))[0]

        return await self._run(go)

    async def restrict_project(
        self, ref: str, *, readers: Sequence[str], reason: str
    ) -> ProjectInfo:
        """Make a project readable and writable only by ``readers`` (principal names) and
        the caller; to everyone else it does not exist. A person's call."""
        names = [readers] if isinstance(readers, str) else list(readers)

        async def go(tx: Tx, a: Actor) -> ProjectInfo:
            p = await self.engine.restrict_project(tx, a, ref, names, reason)
            return (await self.engine.project_infos(tx, [p]))[0]

        return await self._run(go)

    async def unrestrict_project(self, ref: str, *, reason: str) -> ProjectInfo:
        """Make a restricted project readable by the whole organization again."""

        async def go(tx: Tx, a: Actor) -> ProjectInfo:
            p = await self.engine.unrestrict_project(tx, a, ref, reason)
            return (await self.engine.project_infos(tx, [p]))[0]

        return await self._run(go)

    async def hold_project(self, ref: str, *, reason: str, request_id: str | None = None) -> int:
        """Park a whole project. Returns how many nodes the hold parks (a retry with the
        same ``request_id`` returns the first answer)."""
        rid = request_id_or_new(request_id)
        return await self._run(
            lambda tx, a: self.engine.hold_project(tx, a, ref, reason, hold=True, request_id=rid)
        )

    async def unhold_project(self, ref: str, *, reason: str, request_id: str | None = None) -> int:
        """Release a project's hold. Returns how many nodes became ready."""
        rid = request_id_or_new(request_id)
        return await self._run(
            lambda tx, a: self.engine.hold_project(tx, a, ref, reason, hold=False, request_id=rid)
        )

    # ------------------------------------------------------------------- graph

    async def patch(
        self,
        project: str,
        ops: Sequence[OpLike],
        *,
        request_id: str | None = None,
        lease: str | None = None,
        on_behalf_of: str | None = None,
    ) -> PatchResult:
        no_delegation(on_behalf_of)
        self.engine.check_ops_count(len(ops))  # before a single operation is parsed
        parsed = _ops(ops)
        rid = request_id_or_new(request_id)
        self.engine.check_patch_limits(parsed)
        return await self._run(
            lambda tx, a: self.engine.patch(tx, a, project, parsed, request_id=rid, lease=lease),
            graph_lock=self.engine.needs_graph_lock(parsed),
        )

    async def create(self, project: str, title: str, **fields: Any) -> NodeInfo:
        """Create one node (a one-operation patch) and return it."""
        res = await self.patch(project, [CreateNode(title=title, **fields)])
        return res.nodes[0]

    async def get(self, ref: str, *, project: str | None = None) -> NodeInfo:
        """One node, attributed, with its live lease while it is claimed (``lease``)."""

        async def go(tx: Tx, a: Actor) -> NodeInfo:
            node = await self.engine.node_in(tx, ref, project)
            info = (await self.engine.attributed(tx, [node]))[0]
            if not info.claimed:
                return info
            lease = await _leasing.live_lease_of(self.engine, tx, a, node.id, info.ref)
            return attrs.evolve(info, lease=lease)

        return await self._run(go)

    async def resolve(self, ref: str, *, project: str | None = None) -> Resolved:
        return await self._run(lambda tx, a: self.engine.resolve(tx, ref, project))

    async def ready(
        self, *, limit: int | None = None, page: str | None = None, **filters: Any
    ) -> ReadyPage:
        flt = filter_from(**filters)
        return await self._run(lambda tx, a: self.engine.ready(tx, a, flt, limit=limit, page=page))

    async def list_nodes(
        self,
        *,
        limit: int | None = None,
        page: str | None = None,
        attributed: bool = False,
        **filters: Any,
    ) -> ReadyPage:
        """Nodes in any state; ``attributed`` fills each one's body and result authors."""
        flt = filter_from(**filters)
        return await self._run(
            lambda tx, a: self.engine.list_nodes(
                tx, a, flt, limit=limit, page=page, attributed=attributed
            )
        )

    async def edges(
        self,
        nodes: Sequence[str],
        *,
        project: str | None = None,
        limit: int | None = None,
        page: str | None = None,
    ) -> Page[EdgeInfo]:
        """The ``blocks`` edges into and out of these nodes (references or ids), both ends
        named, by target then source reference: every one, or ``limit`` of them from
        ``page`` (a previous page's ``next_page``) on."""
        return await self._run(
            lambda tx, a: edges_around(self.engine, tx, nodes, project, limit=limit, page=page)
        )

    async def explain(self, ref: str, *, project: str | None = None) -> Explanation:
        return await self._run(lambda tx, a: self.engine.explain(tx, ref, project))

    async def drop(
        self,
        ref: str,
        *,
        reason: str,
        cascade: int | None = None,
        project: str | None = None,
        lease: str | None = None,
        request_id: str | None = None,
    ) -> PatchResult:
        op = DropNode(
            node=ref,
            reason=reason,
            cascade=Cascade(max_nodes=cascade) if cascade is not None else None,
        )
        return await self._node_patch(ref, project, [op], lease=lease, request_id=request_id)

    async def reopen(
        self,
        ref: str,
        *,
        reason: str,
        project: str | None = None,
        lease: str | None = None,
        request_id: str | None = None,
    ) -> PatchResult:
        return await self._node_patch(
            ref, project, [ReopenNode(node=ref, reason=reason)], lease=lease, request_id=request_id
        )

    async def _node_patch(
        self,
        ref: str,
        project: str | None,
        ops: list[Op],
        *,
        lease: str | None,
        request_id: str | None,
        release_after: ReleaseReason | None = None,
    ) -> PatchResult:
        rid = request_id_or_new(request_id)

        async def go(tx: Tx, a: Actor) -> PatchResult:
            if project is None and len(ops) == 1 and isinstance(ops[0], CompleteNode):
                tx.expect_complete(
                    ref, lease=lease, principal_id=a.id, request_id=rid, sized=bool(ops[0].result)
                )
            proj = await self.engine.resolve_project(tx, project) if project else None
            node = await self.engine.resolve_node(tx, ref, proj)
            fixed = [
                attrs.evolve(op, node=ulid_str(node.id)) if hasattr(op, "node") else op
                for op in ops
            ]  # pyright: ignore[reportArgumentType]
            return await self.engine.patch(
                tx,
                a,
                ulid_str(node.project_id),
                fixed,
                request_id=rid,
                lease=lease,
                release_after=release_after,
            )

        return await self._run(go, graph_lock=self.engine.needs_graph_lock(ops))


def _priority(value: Priority | str) -> Priority:
    try:
        return Priority(value)
    except ValueError:
        raise Invalid(
            f"priority {value!r} is not p0..p4",
            next="Use p0 (most urgent) to p4; p2 is the default.",
            field="priority",
        ) from None
