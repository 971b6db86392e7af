"""The state of one patch while its operations apply, and the cycle check over the wait relation.

Aliases, the references it has resolved, the lease it writes under (fencing),
the write guard (a live lease on a node is someone else's unless the patch
carries it), batched inserts, the policy intents and events it collects, and
the check that the combined wait relation (blocks edges plus parent links: a
parent waits on its children) stays acyclic. The operations are in ``_patch``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

import attrs

from ._context import Actor, Context, node_facts
from ._errors import Conflict, CycleError
from ._intent import intent
from ._models import Edge, Event, Lease, Node, Project, ReleaseReason
from ._refs import format_ref, ulid_str
from ._store import Derived, Tx


class PatchState:
    """The state of one patch while its operations apply."""

    def __init__(
        self, engine: Context, tx: Tx, actor: Actor, project: Project, request_id: str
    ) -> None:
        self.e = engine
        self.tx = tx
        self.actor = actor
        self.project = project
        self.request_id = request_id
        self.aliases: dict[str, UUID] = {}
        self.nodes: dict[UUID, Node] = {}
        self.refs: dict[UUID, str] = {}
        self.touched: list[UUID] = []
        self.dropped: list[UUID] = []
        self.events: list[Event] = []
        self.arcs: list[tuple[UUID, UUID]] = []
        self.projects: dict[UUID, Project] = {project.id: project}
        self.lease: Lease | None = None
        self.next_number = 0
        self.parked: int = 0
        self.now: datetime | None = None
        self.created: set[UUID] = set()
        self.intents: list[dict[str, Any]] = []
        self.index = 0
        # Nodes and edges this patch creates are written in batches (one statement for a
        # 1,000-node decomposition instead of a thousand): flushed before anything reads
        # the store (any operation but create_node, a reference by number, an ancestor
        # walk) and before the cycle check.
        # A patch that is one complete_node reads its node's derived facts before its
        # writes (a store sends that read with the patch's first ones): see
        # _Patch.complete and Patching.patch.
        self.derived_before: dict[UUID, Derived] | None = None
        self.pending_nodes: list[Node] = []
        self.pending_edges: list[Edge] = []
        self.new_edges: set[tuple[UUID, UUID]] = set()

    async def flush(self) -> None:
        if self.pending_nodes:
            nodes, self.pending_nodes = self.pending_nodes, []
            await self.tx.insert_nodes(nodes)
        if self.pending_edges:
            edges, self.pending_edges = self.pending_edges, []
            await self.tx.insert_edges(edges)

    async def facts(self, node: Node) -> dict[str, Any]:
        """The policy's facts about a node as this request finds it."""
        in_lease = False
        if self.lease is not None:
            if node.id == self.lease.node_id:
                in_lease = True
            elif node.created_by == self.actor.id:
                await self.flush()
                for above in await self.tx.ancestors(node.id):
                    if above.id == self.lease.node_id:
                        in_lease = True
                        break
                    if above.created_by != self.actor.id:
                        break
        project = await self._project(node.project_id)
        ref = self.refs.get(node.id) or format_ref(project.slug, node.number)
        return node_facts(
            node, ref, project.slug, self.actor, new=node.id in self.created, in_my_lease=in_lease
        )

    def intend(self, action: str, **parts: Any) -> None:
        self.intents.append(intent(action, index=self.index, **parts))

    async def _project(self, project_id: UUID) -> Project:
        if project_id not in self.projects:
            p = await self.tx.project_by_id(project_id)
            assert p is not None
            self.projects[project_id] = p
        return self.projects[project_id]

    def _touch(self, node: Node) -> None:
        self.nodes[node.id] = node
        if node.id not in self.touched:
            self.touched.append(node.id)

    async def node(self, ref: str) -> Node:
        if ref in self.aliases:
            return self.nodes[self.aliases[ref]]
        await self.flush()
        node = await self.e.resolve_node(self.tx, ref, self.project, lock=True)
        if node.id in self.nodes:
            return self.nodes[node.id]
        self.nodes[node.id] = node
        project = await self._project(node.project_id)
        self.refs[node.id] = format_ref(project.slug, node.number)
        return node

    async def guard(self, node: Node, *, gate_lease: bool = True) -> None:
        """A write to ``node``: its project must be live, and a live lease on it must be ours."""
        project = await self._project(node.project_id)
        self.e._writable_project(project)  # pyright: ignore[reportPrivateUsage]
        if node.id in self.created:
            return  # created by this patch: nobody can hold a lease on it yet
        if self.lease is not None and self.lease.node_id == node.id:
            # fence checked (under the lease row's lock) that our lease is live, and a
            # node has at most one unreleased lease: the live lease on it is ours
            return
        leases = await self.tx.live_leases([node.id])
        live = leases.get(node.id)
        if live is None:
            return
        if self.lease is not None and live.id == self.lease.id:
            return
        holder = (await self.tx.principals_by_id([live.holder])).get(live.holder)
        raise Conflict(
            f"{self.refs[node.id]} is leased by {holder.name if holder else 'another principal'} "
            f"until {live.expires_at.isoformat()}",
            next="Writes that change a leased node carry its lease; wait for it to end, or ask its holder.",
        )

    async def event(self, op: str, node: Node | None, **kw: Any) -> None:
        self.events.append(
            await self.e._event(  # pyright: ignore[reportPrivateUsage]
                self.tx,
                self.actor,
                op,
                project_id=node.project_id if node else self.project.id,
                node_id=node.id if node else None,
                request_id=self.request_id,
                **kw,
            )
        )

    async def write(self, before: Node, after: Node) -> None:
        after = attrs.evolve(after, updated_at=await self.tx.now())
        await self.tx.update_node(after)
        self._touch(after)

    async def check_cycles(self) -> None:
        await self.flush()
        if not self.arcs:
            return
        # The store already holds this patch's writes, so walking it from the new arcs sees the
        # resulting graph; an arc added and then removed again in the patch is not in it.
        arcs = await self.tx.wait_arcs_from({waited for _, waited in self.arcs})
        adj: dict[UUID, list[UUID]] = {}
        for waiter, waited in arcs:
            adj.setdefault(waiter, []).append(waited)
        cycle = _find_cycle(adj)
        if cycle is None:
            return
        names = await self._names(cycle)
        chain = " waits on ".join(names[n] for n in [*cycle, cycle[0]])
        raise CycleError(
            f"this patch would make the work wait on itself: {chain}",
            next="Remove one of these edges or parent links; a parent waits on its children, so a child cannot also block its parent.",
            cycle=[names[n] for n in cycle],
        )

    async def _names(self, ids: Sequence[UUID]) -> dict[UUID, str]:
        missing = [i for i in ids if i not in self.refs]
        if missing:
            for nid, n in (await self.tx.nodes_by_id(missing)).items():
                project = await self._project(n.project_id)
                self.refs[nid] = format_ref(project.slug, n.number)
        return {i: self.refs.get(i, ulid_str(i)) for i in ids}

    async def finish(self, release_after: ReleaseReason | None) -> None:
        now = await self.tx.now()
        if self.lease is not None and self.lease.released_at is None:
            if release_after is not None:
                self.lease = attrs.evolve(self.lease, released_at=now, release_reason=release_after)
                await self.tx.update_lease(self.lease)
                node = (
                    self.nodes.get(self.lease.node_id)
                    or (await self.tx.nodes_by_id([self.lease.node_id]))[self.lease.node_id]
                )
                await self.event(
                    "release",
                    node,
                    reason=release_after.value,
                    before={"lease": ulid_str(self.lease.id)},
                )
            else:
                span = self.lease.ttl
                self.lease = attrs.evolve(
                    self.lease, expires_at=max(self.lease.expires_at, now + span)
                )
                await self.tx.update_lease(self.lease)
        await self.tx.append_events(self.events)


def _find_cycle(adj: dict[UUID, list[UUID]]) -> list[UUID] | None:
    """A cycle in the directed graph ``adj``, as a list of nodes, or None."""
    white, grey, black = 0, 1, 2
    color: dict[UUID, int] = {}
    parent: dict[UUID, UUID] = {}
    for succ in adj.values():
        succ.sort()
    for start in sorted(adj):
        if color.get(start, white) != white:
            continue
        stack: list[tuple[UUID, int]] = [(start, 0)]
        color[start] = grey
        while stack:
            node, i = stack[-1]
            succ = adj.get(node, [])
            if i < len(succ):
                stack[-1] = (node, i + 1)
                nxt = succ[i]
                c = color.get(nxt, white)
                if c == white:
                    color[nxt] = grey
                    parent[nxt] = node
                    stack.append((nxt, 0))
                elif c == grey:
                    cycle = [node]
                    while cycle[-1] != nxt:
                        cycle.append(parent[cycle[-1]])
                    cycle.reverse()
                    return cycle
            else:
                color[node] = black
                stack.pop()
    return None
