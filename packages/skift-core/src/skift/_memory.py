"""The in-memory reference store: small, obviously right, and public.

Transactions are serialized by one lock and undone from a log on failure, so a
refused patch leaves no trace. Embedders use it to test against skift without
a database (``skift.open("memory:")``).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncGenerator, Collection, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import attrs

from . import _memory_webhooks as webhooks
from . import _readiness as readiness
from ._blobs import BlobStore, MemoryBlobStore
from ._memory_base import MemoryState
from ._memory_content import keyset
from ._memory_people import MemoryPeopleTx
from ._models import (
    Edge,
    Event,
    IdentityInvite,
    Lease,
    Node,
    Org,
    Principal,
    PrincipalKind,
    Project,
    Status,
)
from ._parts import BlobPart
from ._refs import new_id
from ._signin import MemorySignins
from ._store import (
    NOT_SIMPLE,
    Derived,
    EventBatch,
    EventPosition,
    NotSimple,
    ReadyQuery,
    Restriction,
    StoredRequest,
    UpstreamCone,
)
from ._store_records import PruneReport, StoreStats, TableStat
from ._webhook_records import Delivery, DeliveryStats, DueDelivery


class MemoryStore:
    """A :class:`~skift.Store` kept in this process's memory. Nothing survives it."""

    def __init__(self, *, blobs: BlobStore | None = None) -> None:
        """``blobs``: where blob bytes go (default: this process's memory)."""
        self.blobs: BlobStore = blobs if blobs is not None else MemoryBlobStore()
        self._state = MemoryState()
        self._lock = asyncio.Lock()
        # a fresh Event per change, set when the change commits: waiting on it takes no lock,
        # so a waiter cancelled twice (its timeout, then a server's drain) leaves nothing
        # held (Condition.wait re-acquires its lock and can fail there on Python 3.11)
        self._changed = asyncio.Event()
        self._offset = timedelta()
        self.signins = MemorySignins(self._now, self._identity_live)

    def _identity_live(self, identity_id: UUID) -> bool:
        found = self._state.identities.get(identity_id)
        return found is not None and found.revoked_at is None

    def set_clock_offset(self, offset: timedelta) -> None:
        self._offset = offset

    async def secret(self, name: str) -> bytes:
        return self._state.secrets.setdefault(name, secrets.token_bytes(32))

    def _now(self) -> datetime:
        return datetime.now(UTC) + self._offset

    @asynccontextmanager
    async def transaction(
        self, org_id: UUID, *, graph_lock: bool = False
    ) -> AsyncGenerator[MemoryTx]:
        async with self._lock:
            tx = MemoryTx(self._state, org_id, self._now())
            try:
                yield tx
            except BaseException:
                tx.rollback()
                raise
        if tx.wrote:
            changed, self._changed = self._changed, asyncio.Event()
            changed.set()

    async def ensure_org(self, name: str) -> Org:
        async with self._lock:
            for org in self._state.orgs.values():
                if org.name == name:
                    return org
            org = Org(id=new_id(), name=name, created_at=self._now())
            self._state.orgs[org.id] = org
            return org

    async def org_by_id(self, org_id: UUID) -> Org | None:
        return self._state.orgs.get(org_id)

    async def list_orgs(self) -> list[Org]:
        return sorted(self._state.orgs.values(), key=lambda o: (o.created_at, o.id))

    async def org_page(self, *, after: tuple[datetime, str] | None, limit: int | None) -> list[Org]:
        return keyset(self._state.orgs.values(), lambda o: (o.created_at, o.name), after, limit)

    async def principal_by_identity(self, scheme: str, value: str) -> Principal | None:
        for ident in self._state.identities.values():
            if ident.scheme == scheme and ident.value == value and ident.revoked_at is None:
                return self._state.principals.get(ident.principal_id)
        return None

    async def invites_for_identity(self, scheme: str, value: str) -> list[IdentityInvite]:
        found = [i for i in self._state.invites.values() if i.scheme == scheme and i.value == value]
        return sorted(found, key=lambda i: (i.created_at, i.id))

    async def ensure_principal(self, org_id: UUID, name: str, kind: PrincipalKind) -> Principal:
        async with self._lock:
            first_person = kind is PrincipalKind.USER
            for p in self._state.principals.values():
                if p.org_id == org_id and p.name == name:
                    return p
                if p.org_id == org_id and p.kind is PrincipalKind.USER:
                    first_person = False
            p = Principal(
                id=new_id(),
                org_id=org_id,
                name=name,
                kind=kind,
                created_at=self._now(),
                admin=first_person,
            )
            self._state.principals[p.id] = p
            return p

    async def wait_for_change(self, org_id: UUID, timeout: timedelta) -> None:
        changed = self._changed
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(changed.wait(), timeout.total_seconds())

    async def close(self) -> None:
        return None

    # the webhook delivery worker (skift._memory_webhooks)
    async def claim_deliveries(self, *, limit: int, lease: timedelta) -> list[DueDelivery]:
        async with self._lock:
            return webhooks.claim(self._state, self._now(), limit=limit, lease=lease)

    async def settle_delivery(
        self,
        delivery: Delivery,
        *,
        delivered: bool,
        status: int | None,
        error: str | None,
        retry_in: timedelta | None,
    ) -> bool:
        async with self._lock:
            return webhooks.settle(
                self._state,
                self._now(),
                delivery,
                delivered=delivered,
                status=status,
                error=error,
                retry_in=retry_in,
            )

    async def delivery_stats(self) -> DeliveryStats:
        return webhooks.stats(self._state)

    async def prune(
        self, *, request_retention: timedelta, claim_cursor_retention: timedelta, dry_run: bool
    ) -> PruneReport:
        async with self._lock:
            s = self._state
            now = self._now()
            req_cut, cur_cut = now - request_retention, now - claim_cursor_retention
            old_requests = [k for k, at in s.request_times.items() if at < req_cut]
            old_cursors = [k for k, at in s.cursor_times.items() if at < cur_cut]
            if not dry_run:
                for k in old_requests:
                    s.requests.pop(k, None)
                    s.request_times.pop(k, None)
                for k in old_cursors:
                    s.cursors.pop(k, None)
                    s.cursor_times.pop(k, None)
            report = PruneReport(
                at=now,
                dry_run=dry_run,
                ran=True,
                requests=len(old_requests),
                claim_cursors=len(old_cursors),
                requests_before=req_cut,
                claim_cursors_before=cur_cut,
            )
            if not dry_run:
                s.last_prune = report
            return report

    async def last_prune(self) -> PruneReport | None:
        return self._state.last_prune

    async def sweep_blobs(
        self, *, grace: timedelta, dry_run: bool, run_at: datetime | None = None
    ) -> tuple[int, int]:
        # Under the store's lock, which every transaction (an upload writing its bytes and
        # recording its row, an attach touching a row) holds throughout.
        async with self._lock:
            s = self._state
            cut = self._now() - grace
            named = {
                (a.org_id, p.digest)
                for a in s.artifacts.values()
                for p in a.parts
                if isinstance(p, BlobPart)
            }
            stale = [
                k
                for k, b in s.blobs.items()
                if (b.touched_at or b.created_at) < cut and k not in named
            ]
            digests = {k[1] for k in stale}
            if dry_run:
                left = {k[1] for k in s.blobs if k not in set(stale)}
                return len(stale), len(digests - left)
            for k in stale:
                del s.blobs[k]
            files = 0
            recorded = {k[1] for k in s.blobs}
            for digest in sorted(digests - recorded):  # only bytes whose rows went now
                if await self.blobs.delete(digest):
                    files += 1
            if run_at is not None and s.last_prune is not None and s.last_prune.at == run_at:
                s.last_prune = attrs.evolve(s.last_prune, blobs=len(stale), blob_files=files)
            return len(stale), files

    async def store_stats(self) -> StoreStats:
        s = self._state
        sizes = {
            "orgs": len(s.orgs),
            "principals": len(s.principals),
            "identities": len(s.identities),
            "projects": len(s.projects),
            "nodes": len(s.nodes),
            "edges": len(s.edges),
            "leases": len(s.leases),
            "requests": len(s.requests),
            "claim_cursors": len(s.cursors),
            "events": len(s.events),
            "comments": len(s.comments),
            "usage": len(s.usage),
            "artifacts": len(s.artifacts),
            "blobs": len(s.blobs),
            "webhook_deliveries": len(s.webhooks.deliveries),
        }
        tables = sorted(
            (TableStat(name=k, rows=v, bytes=None) for k, v in sizes.items()),
            key=lambda t: (-t.rows, t.name),
        )
        parked = [d.parked_at for d in s.webhooks.deliveries.values() if d.parked_at]
        return StoreStats(
            tables=tuple(tables),
            event_partitions=(),
            deliveries=webhooks.stats(s),
            oldest_parked_at=min(parked, default=None),
            last_prune=s.last_prune,
        )

    async def wait_for_any_change(self, timeout: timedelta) -> None:
        changed = self._changed
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(changed.wait(), timeout.total_seconds())


class MemoryTx(MemoryPeopleTx):
    """One serialized transaction over the in-memory state, undone on failure."""

    # projects
    async def project_by_id(self, project_id: UUID, *, lock: bool = False) -> Project | None:
        return self._project(project_id)

    async def project_by_slug(self, slug: str) -> Project | None:
        pid = self._s.slugs.get((self._org, slug))
        return self._project(pid) if pid else None

    async def projects_by_id(self, ids: Collection[UUID]) -> dict[UUID, Project]:
        return {i: p for i in ids if (p := self._project(i)) is not None}

    async def slugs_like(self, base: str) -> set[str]:
        return {
            s
            for (o, s) in self._s.slugs
            if o == self._org and (s == base or s.startswith(base + "-"))
        }

    async def insert_project(self, project: Project) -> None:
        self._set(self._s.projects, project.id, project)
        self._set(self._s.slugs, (self._org, project.slug), project.id)

    async def update_project(self, project: Project) -> None:
        # the node counter moves only through allocate_numbers, as in PostgreSQL
        current = self._s.projects[project.id]
        project = attrs.evolve(project, node_counter=current.node_counter)
        self._set(self._s.projects, project.id, project)
        if (self._org, project.slug) not in self._s.slugs:
            self._set(self._s.slugs, (self._org, project.slug), project.id)

    async def list_projects(
        self, *, archived: bool, limit: int, offset: int, hidden: Collection[UUID] = ()
    ) -> list[Project]:
        rows = [
            p
            for p in self._s.projects.values()
            if p.org_id == self._org and (archived or p.archived_at is None) and p.id not in hidden
        ]
        activity = await self.project_activity([p.id for p in rows])
        rows.sort(key=lambda p: (activity.get(p.id, p.created_at), p.id), reverse=True)
        return rows[offset : offset + limit]

    async def restricted_projects(self) -> list[Restriction]:
        out: list[Restriction] = []
        for p in sorted(self._s.projects.values(), key=lambda p: p.id):
            if p.org_id != self._org or p.readers is None:
                continue
            names = await self.principals_by_id(p.readers)
            out.append(
                Restriction(
                    project_id=p.id,
                    slug=p.slug,
                    readers=p.readers,
                    names=tuple(names[r].name for r in p.readers if r in names),
                )
            )
        return out

    async def project_activity(self, ids: Collection[UUID]) -> dict[UUID, datetime]:
        wanted = set(ids)
        out: dict[UUID, datetime] = {}
        for e in self._s.events:
            pid = e.project_id
            if e.org_id == self._org and pid is not None and pid in wanted:
                out[pid] = max(out.get(pid, e.occurred_at), e.occurred_at)
        return out

    async def allocate_numbers(self, project_id: UUID, count: int) -> int:
        p = self._s.projects[project_id]
        self._set(
            self._s.projects, project_id, attrs.evolve(p, node_counter=p.node_counter + count)
        )
        return p.node_counter + 1

    # nodes
    async def nodes_by_id(self, ids: Collection[UUID], *, lock: bool = False) -> dict[UUID, Node]:
        return {i: n for i in ids if (n := self._node(i)) is not None}

    async def node_by_number(
        self, project_id: UUID, number: int, *, lock: bool = False
    ) -> Node | None:
        nid = self._s.numbers.get((project_id, number))
        return self._node(nid) if nid else None

    async def insert_nodes(self, nodes: Sequence[Node]) -> None:
        for n in nodes:
            self._set(self._s.nodes, n.id, n)
            self._set(self._s.numbers, (n.project_id, n.number), n.id)
            if n.parent_id is not None:
                self._add(self._s.children, n.parent_id, n.id)

    async def update_node(self, node: Node) -> None:
        old = self._s.nodes[node.id]
        if old.parent_id != node.parent_id:
            if old.parent_id is not None:
                self._discard(self._s.children, old.parent_id, node.id)
            if node.parent_id is not None:
                self._add(self._s.children, node.parent_id, node.id)
        self._set(self._s.nodes, node.id, node)

    async def children_of(self, ids: Collection[UUID]) -> list[Node]:
        out: list[Node] = []
        for i in ids:
            out.extend(self._s.nodes[c] for c in sorted(self._s.children.get(i, ())))
        return out

    async def ancestors(self, node_id: UUID) -> list[Node]:
        chain: list[Node] = []
        seen = {node_id}
        node = self._node(node_id)
        while node is not None and node.parent_id is not None and node.parent_id not in seen:
            seen.add(node.parent_id)
            node = self._s.nodes[node.parent_id]
            chain.append(node)
        return chain

    async def upstream_cone(
        self, root_id: UUID, bound: int, *, hidden: Collection[UUID] = ()
    ) -> UpstreamCone:
        root = self._node(root_id)
        if root is None:
            return UpstreamCone(nodes=())
        found: dict[UUID, Node] = {root_id: root}
        walked = [root_id]
        frontier = [root_id]
        while frontier and len(found) < bound:
            step: list[UUID] = []
            for f in frontier:
                for nid in [*self._s.into.get(f, ()), *sorted(self._s.children.get(f, ()))]:
                    if nid not in found and len(found) < bound:
                        node = found[nid] = self._s.nodes[nid]
                        if node.status is Status.OPEN and node.project_id not in hidden:
                            step.append(nid)
            walked += step
            frontier = step
        # the parents above: up from each walked node, through the nodes not walked from
        above: dict[UUID, Node] = {}
        passed = set(walked)
        for nid in walked:
            up = found[nid].parent_id
            while up is not None and up not in passed:
                passed.add(up)
                node = self._s.nodes[up]
                if up not in found:
                    above[up] = node
                up = node.parent_id
        return UpstreamCone(
            nodes=[
                (n, [s for s in self._s.into.get(n.id, ()) if s in found]) for n in found.values()
            ],
            above=list(above.values()),
            leased=root_id in await self.live_leases([root_id]),
        )

    # edges
    async def edges_into(self, ids: Collection[UUID]) -> list[Edge]:
        return [e for e in self._s.edges.values() if e.to_id in ids and e.org_id == self._org]

    async def edges_out_of(self, ids: Collection[UUID]) -> list[Edge]:
        return [e for e in self._s.edges.values() if e.from_id in ids and e.org_id == self._org]

    async def input_sources(
        self,
        node_id: UUID,
        *,
        after: tuple[UUID, int] | None,
        limit: int | None,
        hidden: Collection[UUID] = (),
    ) -> list[Node]:
        found = [self._s.nodes.get(i) for i in self._s.into.get(node_id, ())]
        rows = sorted(
            (n for n in found if n and n.org_id == self._org and n.project_id not in hidden),
            key=lambda n: (n.project_id, n.number),
        )
        rows = [n for n in rows if after is None or (n.project_id, n.number) > after]
        return rows if limit is None else rows[:limit]

    async def insert_edges(self, edges: Sequence[Edge]) -> None:
        for e in edges:
            self._set(self._s.edges, (e.from_id, e.to_id, e.kind.value), e)
            self._add(self._s.into, e.to_id, e.from_id)
            self._add(self._s.out, e.from_id, e.to_id)

    async def delete_edge(self, from_id: UUID, to_id: UUID, kind: str) -> bool:
        key = (from_id, to_id, kind)
        edge = self._s.edges.get(key)
        if edge is None or edge.org_id != self._org:
            return False
        del self._s.edges[key]
        self.wrote = True
        self._undo.append(lambda: self._s.edges.__setitem__(key, edge))
        if not any(k[0] == from_id and k[1] == to_id for k in self._s.edges):
            self._discard(self._s.into, to_id, from_id)
            self._discard(self._s.out, from_id, to_id)
        return True

    def _waits(self, node_id: UUID) -> set[UUID]:
        return self._s.into.get(node_id, set()) | self._s.children.get(node_id, set())

    async def wait_arcs_from(self, ids: Collection[UUID]) -> list[tuple[UUID, UUID]]:
        arcs: list[tuple[UUID, UUID]] = []
        seen = set(ids)
        stack = list(ids)
        while stack:
            waiter = stack.pop()
            for waited in self._waits(waiter):
                arcs.append((waiter, waited))
                if waited not in seen:
                    seen.add(waited)
                    stack.append(waited)
        return arcs

    # leases
    async def live_leases(self, node_ids: Collection[UUID]) -> dict[UUID, Lease]:
        out: dict[UUID, Lease] = {}
        for nid in node_ids:
            lease = self._unreleased(nid)
            if lease is not None and lease.live(self._now):
                out[nid] = lease
        return out

    def _unreleased(self, node_id: UUID) -> Lease | None:
        for lid in self._s.node_leases.get(node_id, ()):
            lease = self._s.leases[lid]
            if lease.released_at is None:
                return lease
        return None

    async def lease_by_id(self, lease_id: UUID, *, lock: bool = False) -> Lease | None:
        lease = self._s.leases.get(lease_id)
        return lease if lease is not None and lease.org_id == self._org else None

    async def unreleased_lease(self, node_id: UUID) -> Lease | None:
        return self._unreleased(node_id)

    async def insert_lease(self, lease: Lease) -> None:
        self._set(self._s.leases, lease.id, lease)
        history = self._s.node_leases.setdefault(lease.node_id, [])
        history.append(lease.id)
        self._undo.append(lambda: history.remove(lease.id))

    async def update_lease(self, lease: Lease) -> None:
        self._set(self._s.leases, lease.id, lease)

    async def lease_history(self, node_id: UUID) -> list[Lease]:
        return [self._s.leases[i] for i in self._s.node_leases.get(node_id, ())]

    async def org_live_leases(
        self, project_ids: Collection[UUID] | None, limit: int
    ) -> list[Lease]:
        wanted = set(project_ids) if project_ids is not None else None
        rows = [
            lease
            for lease in self._s.leases.values()
            if lease.org_id == self._org
            and lease.live(self._now)
            and (wanted is None or self._s.nodes[lease.node_id].project_id in wanted)
        ]
        rows.sort(key=lambda lease: (lease.created_at, lease.id))
        return rows[:limit]

    async def expired_leases(self, limit: int) -> list[Lease]:
        rows = [
            lease
            for lease in self._s.leases.values()
            if lease.org_id == self._org
            and lease.released_at is None
            and lease.expires_at <= self._now
        ]
        rows.sort(key=lambda lease: lease.expires_at)
        return rows[:limit]

    # derived state
    def _leased(self) -> set[UUID]:
        return {
            lease.node_id
            for lease in self._s.leases.values()
            if lease.org_id == self._org and lease.live(self._now)
        }

    def _derive(self, node: Node, leased: set[UUID]) -> Derived:
        return readiness.derive(
            node,
            nodes=self._s.nodes,
            blockers=self._s.into.get(node.id, ()),
            children=self._s.children.get(node.id, ()),
            projects=self._s.projects,
            leased=leased,
        )

    async def derive(self, ids: Collection[UUID]) -> dict[UUID, Derived]:
        leased = self._leased()
        written = await self.human_written(ids)
        return {
            i: attrs.evolve(self._derive(n, leased), human_written=i in written)
            for i in ids
            if (n := self._node(i)) is not None
        }

    def _candidates(self, q: ReadyQuery) -> list[tuple[Node, Derived]]:
        leased = self._leased()
        out: list[tuple[Node, Derived]] = []
        for n in self._s.nodes.values():
            if n.org_id != self._org or n.status is not Status.OPEN or not readiness.matches(n, q):
                continue
            out.append((n, self._derive(n, leased)))
        return out

    async def ready(self, query: ReadyQuery) -> list[Node]:
        ready = [n for n, d in self._candidates(query) if d.ready]
        ready = readiness.still_to_come(ready, query)
        return readiness.turn_order(ready, query.after_project)[: query.limit]

    async def list_nodes(
        self, query: ReadyQuery, *, status: Status | None, held: bool | None
    ) -> list[Node]:
        rows = [
            n
            for n in self._s.nodes.values()
            if n.org_id == self._org
            and readiness.matches(n, query)
            and (status is None or n.status is status)
            and (held is None or readiness.held(n, self._s.nodes, self._s.projects) == held)
        ]
        after = query.after_node
        rows = [n for n in rows if after is None or (n.project_id, n.number) > after]
        rows.sort(key=lambda n: (n.project_id, n.number))
        return rows[: query.limit]

    async def held_count(self, query: ReadyQuery, *, at_most: int | None = None) -> int:
        n = sum(
            1 for _, d in self._candidates(query) if d.held and attrs.evolve(d, held=False).ready
        )
        return n if at_most is None else min(n, at_most)

    async def lock_next_ready(self, query: ReadyQuery) -> Node | None:
        found = await self.ready(attrs.evolve(query, after_keys=(), limit=1))
        return found[0] if found else None

    def expect_complete(
        self, ref: str, *, lease: str | None, principal_id: UUID, request_id: str, sized: bool
    ) -> None:
        pass  # nothing to send ahead: every read is a dictionary lookup

    async def take_next_ready(
        self, principal_id: UUID, filter_hash: str, query: ReadyQuery
    ) -> Node | NotSimple | None:
        return NOT_SIMPLE  # the reference takes the long way: cursor, filter, lock

    # claim cursors
    async def get_cursor(self, principal_id: UUID, filter_hash: str) -> UUID | None:
        return self._s.cursors.get((self._org, principal_id, filter_hash))

    async def set_cursor(self, principal_id: UUID, filter_hash: str, project_id: UUID) -> None:
        key = (self._org, principal_id, filter_hash)
        self._set(self._s.cursors, key, project_id)
        self._set(self._s.cursor_times, key, self._now)

    # idempotency
    async def reserve_request(
        self, principal_id: UUID, request_id: str, fingerprint: str
    ) -> StoredRequest | None:
        key = (self._org, principal_id, request_id)
        found = self._s.requests.get(key)
        if found is not None:
            return found
        self._set(self._s.requests, key, StoredRequest(fingerprint=fingerprint, response=None))
        self._set(self._s.request_times, key, self._now)
        return None

    async def request_applied_at(self, principal_id: UUID, request_id: str) -> datetime | None:
        times = [
            e.occurred_at
            for e in self._s.events
            if e.org_id == self._org
            and e.principal_id == principal_id
            and e.request_id == request_id
        ]
        return min(times, default=None)

    async def save_response(
        self, principal_id: UUID, request_id: str, response: dict[str, Any]
    ) -> None:
        key = (self._org, principal_id, request_id)
        old = self._s.requests[key]
        self._set(self._s.requests, key, attrs.evolve(old, response=response))

    # events
    async def append_events(self, events: Sequence[Event]) -> None:
        start = len(self._s.events)
        self._s.events.extend(events)
        self.wrote = True
        self._undo.append(lambda: self._s.events.__delitem__(slice(start, None)))
        self._announce(start)

    async def events(
        self,
        *,
        node_id: UUID | None = None,
        limit: int = 1000,
        hidden: Collection[UUID] = (),
        before: UUID | None = None,
    ) -> list[Event]:
        if limit <= 0:
            return []
        out: list[Event] = []
        seen = before is None
        for e in reversed(self._s.events):  # newest first, stopping once a page is read
            if not seen:
                seen = e.id == before
                continue
            if (
                e.org_id == self._org
                and (node_id is None or e.node_id == node_id)
                and not (hidden and e.project_id in hidden)
            ):
                out.append(e)
                if len(out) == limit:
                    break
        out.reverse()
        return out

    # The change stream. Transactions run one at a time under the store's lock and
    # a rolled-back one truncates the log back, so the log's order is commit order
    # and an event's 1-based place in it is its commit sequence. Nobody can read a
    # place a rollback frees (reads take the lock too), so no position is left
    # that a watcher could wait on. Every transaction has finished below the end.
    def _horizon(self) -> EventPosition:
        return EventPosition(seq=len(self._s.events) + 1)

    async def events_after(
        self,
        after: EventPosition,
        *,
        projects: Collection[UUID] = (),
        ops: Collection[str] = (),
        limit: int,
        hidden: Collection[UUID] = (),
        whole: bool = False,  # the log holds committed events only: no horizon to pass
    ) -> EventBatch:
        want_projects, want_ops, unreadable = set(projects), set(ops), set(hidden)
        found: list[tuple[EventPosition, Event]] = []
        log = self._s.events
        for i in range(max(after.seq - 1, 0), len(log)):
            if len(found) >= limit:
                break
            e = log[i]
            pos = EventPosition(seq=i + 1, id=e.id)
            if pos <= after or e.org_id != self._org:
                continue
            if want_projects and e.project_id not in want_projects:
                continue
            if unreadable and e.project_id in unreadable:
                continue
            if want_ops and e.op not in want_ops:
                continue
            found.append((pos, e))
        return EventBatch(events=found, horizon=self._horizon())

    async def replay_start(self, since: datetime) -> EventPosition:
        for i, e in enumerate(self._s.events):
            if e.org_id == self._org and e.occurred_at >= since:
                return EventPosition(seq=i + 1)
        return self._horizon()

    async def event_positions(
        self, ids: Collection[UUID]
    ) -> tuple[dict[UUID, EventPosition], EventPosition]:
        wanted = set(ids)
        found = {
            e.id: EventPosition(seq=i + 1, id=e.id)
            for i, e in enumerate(self._s.events)
            if e.id in wanted and e.org_id == self._org
        }
        return found, self._horizon()
