"""The in-memory store's content: comments, origins, search, usage and cost, limits,
artifacts and blob metadata (the reference for skift_pg's ``_tx_content``)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar
from uuid import UUID

import attrs

from . import _search as search
from ._memory_base import MemoryTxBase
from ._models import (
    Comment,
    Lease,
    Node,
    NodeOrigin,
    Principal,
    Revision,
)
from ._parts import ArtifactRecord, BlobPart, BlobRecord
from ._policy_records import StoredPolicy
from ._store import EventPosition, ProjectPage, SearchQuery
from ._usage_records import Budget, Rate, UsageKind, UsageRecord, UsageScope, UsageTotal
from ._webhook_records import Endpoint

T = TypeVar("T")


def keyset(rows: Iterable[T], key: Callable[[T], Any], after: Any, limit: int | None) -> list[T]:
    """``rows`` by ``key`` after the key ``after`` (from the first when None), ``limit`` of
    them (every one when None): what a store's page query reads."""
    got = sorted((r for r in rows if after is None or key(r) > after), key=key)
    return got if limit is None else got[:limit]


class MemoryContentTx(MemoryTxBase):
    """The content part of a :class:`~skift.MemoryStore` transaction."""

    # comments
    async def insert_comment(self, comment: Comment) -> None:
        self._set(self._s.comments, comment.id, comment)

    async def insert_comments(self, comments: Sequence[Comment]) -> None:
        for c in comments:
            self._set(self._s.comments, c.id, c)

    # imports
    async def origins_of_project(self, project_id: UUID, source: str) -> list[NodeOrigin]:
        return [
            o
            for o in self._s.origins.values()
            if o.org_id == self._org and o.project_id == project_id and o.source == source
        ]

    async def origins_by_external_id(self, external_id: str) -> list[NodeOrigin]:
        found = [
            o
            for o in self._s.origins.values()
            if o.org_id == self._org and o.external_id == external_id
        ]
        return sorted(found, key=lambda o: o.project_id)

    async def upsert_origins(self, origins: Sequence[NodeOrigin]) -> None:
        for o in origins:
            self._set(self._s.origins, (o.node_id, o.source), o)

    async def update_comment(self, comment: Comment, *, revision: Revision | None = None) -> None:
        self._set(self._s.comments, comment.id, comment)  # it carries its revisions

    async def comment_by_id(self, comment_id: UUID, *, lock: bool = False) -> Comment | None:
        found = self._s.comments.get(comment_id)
        return found if found is not None and found.org_id == self._org else None

    async def comments_of(self, node_ids: Collection[UUID]) -> list[Comment]:
        wanted = set(node_ids)
        rows = [
            c for c in self._s.comments.values() if c.org_id == self._org and c.node_id in wanted
        ]
        return sorted(rows, key=lambda c: (c.created_at, c.id))

    async def comment_hint(self, node_id: UUID) -> tuple[int, datetime | None]:
        unresolved = [c for c in await self.comments_of([node_id]) if c.resolved_at is None]
        return len(unresolved), max((c.created_at for c in unresolved), default=None)

    # projects by activity, a page at a time
    async def project_page(
        self,
        *,
        archived: bool,
        limit: int,
        hidden: Collection[UUID] = (),
        asof: EventPosition | None = None,
        after: tuple[datetime, UUID] | None = None,
    ) -> ProjectPage:
        # an event's commit sequence is its 1-based place in the log (MemoryTx._horizon)
        asof = asof or EventPosition(seq=len(self._s.events) + 1)
        rows = {
            p.id: p
            for p in self._s.projects.values()
            if p.org_id == self._org and (archived or p.archived_at is None) and p.id not in hidden
        }
        active: dict[UUID, datetime] = {}
        for e in self._s.events[: max(asof.seq - 1, 0)]:
            pid = e.project_id
            if e.org_id == self._org and pid is not None and pid in rows:
                active[pid] = max(active.get(pid, e.occurred_at), e.occurred_at)
        keyed = sorted(
            ((active.get(p.id, p.created_at), p.id) for p in rows.values()), reverse=True
        )
        if after is not None:
            keyed = [k for k in keyed if k < after]
        return ProjectPage(projects=[(rows[i], at) for at, i in keyed[:limit]], asof=asof)

    # search
    async def search(self, query: SearchQuery) -> list[tuple[Node, float]]:
        by_node: dict[UUID, list[Comment]] = {}
        for c in self._s.comments.values():
            if c.org_id == self._org:
                by_node.setdefault(c.node_id, []).append(c)
        hits: list[tuple[Node, float]] = []
        for n in self._s.nodes.values():
            if n.org_id != self._org or (query.projects and n.project_id not in query.projects):
                continue
            if n.project_id in query.hidden:
                continue
            if (
                self._s.projects[n.project_id].archived_at is not None
                and not query.include_archived
            ):
                continue
            fields = search.node_fields(n.title, n.body, n.result, by_node.get(n.id, ()))
            score = search.rank(fields, query.terms)
            if score is not None and (query.after is None or search.past((n, score), query.after)):
                hits.append((n, score))
        hits.sort(key=lambda h: (-h[1], h[0].project_id, h[0].number))
        return hits[: query.limit]

    # usage and cost
    async def insert_usage(self, record: UsageRecord) -> None:
        self._set(self._s.usage, record.id, record)

    def _scope(self, scope: UsageScope) -> set[UUID]:
        if scope.project is not None:
            return {
                n.id
                for n in self._s.nodes.values()
                if n.org_id == self._org and n.project_id == scope.project
            }
        if scope.node is None or self._node(scope.node) is None:
            return set()
        if not scope.subtree:
            return {scope.node}
        return set(self._subtree(scope.node))

    def _subtree(self, root: UUID) -> list[UUID]:
        out = [root]
        seen = {root}
        frontier = [root]
        while frontier:
            nxt = [
                c for f in frontier for c in sorted(self._s.children.get(f, ())) if c not in seen
            ]
            seen.update(nxt)
            out.extend(nxt)
            frontier = nxt
        return out

    def _usage_in(self, scope: UsageScope) -> list[UsageRecord]:
        ids = self._scope(scope)
        return [u for u in self._s.usage.values() if u.org_id == self._org and u.node_id in ids]

    async def usage_records(self, scope: UsageScope, limit: int) -> list[UsageRecord]:
        rows = sorted(self._usage_in(scope), key=lambda u: (u.created_at, u.id), reverse=True)
        return rows[:limit]

    async def usage_totals(self, scope: UsageScope) -> list[UsageTotal]:
        rows = self._usage_in(scope)
        latest: dict[UUID, UsageRecord] = {}
        for u in sorted(rows, key=lambda u: (u.created_at, u.id)):
            if u.kind is UsageKind.ESTIMATE:
                latest[u.node_id] = u
        picked = [u for u in rows if u.kind is UsageKind.ACTUAL] + list(latest.values())
        sums: dict[tuple[UsageKind, str], list[int]] = {}
        for u in picked:
            acc = sums.setdefault((u.kind, u.model), [0, 0, 0, 0])
            acc[0] += u.input_tokens
            acc[1] += u.output_tokens
            acc[2] += u.cache_read_tokens
            acc[3] += u.cache_write_tokens
        return [
            UsageTotal(
                kind=kind,
                model=model,
                input_tokens=a[0],
                output_tokens=a[1],
                cache_read_tokens=a[2],
                cache_write_tokens=a[3],
            )
            for (kind, model), a in sorted(sums.items())
        ]

    async def rates(self) -> list[Rate]:
        return [r for (o, _), r in self._s.rates.items() if o == self._org]

    async def upsert_rate(self, rate: Rate) -> None:
        self._set(self._s.rates, (self._org, rate.model), rate)

    async def org_limits(self) -> dict[str, int]:
        return dict(self._s.org_limits.get(self._org, {}))

    async def set_org_limits(self, limits: Mapping[str, int]) -> None:
        self._set(self._s.org_limits, self._org, dict(limits))

    async def org_policy_digest(self) -> str:
        got = self._s.org_policies.get(self._org)
        return got.digest if got else ""

    async def org_policy(self) -> StoredPolicy | None:
        return self._s.org_policies.get(self._org)

    async def set_org_policy(self, policy: StoredPolicy) -> None:
        self._set(self._s.org_policies, self._org, policy)

    async def budgets(self, scope_ids: Collection[UUID]) -> dict[UUID, Budget]:
        return {i: b for i in scope_ids if (b := self._s.budgets.get(i)) and b.org_id == self._org}

    async def set_budget(self, budget: Budget) -> None:
        self._set(self._s.budgets, budget.scope_id, budget)

    async def capped_nodes(self) -> list[Budget]:
        return [
            b
            for b in self._s.budgets.values()
            if b.org_id == self._org and b.scope == "node" and b.cap is not None
        ]

    async def subtree_ids(self, root: UUID) -> list[UUID]:
        return self._subtree(root) if self._node(root) is not None else []

    # artifacts and blob metadata
    async def insert_artifacts(self, artifacts: Sequence[ArtifactRecord]) -> None:
        for a in artifacts:
            self._set(self._s.artifacts, a.id, a)

    async def artifacts_of(self, node_ids: Collection[UUID]) -> list[ArtifactRecord]:
        wanted = set(node_ids)
        rows = [
            a for a in self._s.artifacts.values() if a.org_id == self._org and a.node_id in wanted
        ]
        return sorted(rows, key=lambda a: (a.created_at, a.id))

    # keyset pages
    async def comment_page(
        self, node_id: UUID, *, after: tuple[datetime, UUID] | None, limit: int | None
    ) -> list[Comment]:
        rows = (
            c for c in self._s.comments.values() if c.org_id == self._org and c.node_id == node_id
        )
        return keyset(rows, lambda c: (c.created_at, c.id), after, limit)

    async def artifact_page(
        self, node_id: UUID, *, after: tuple[datetime, UUID] | None, limit: int | None
    ) -> list[ArtifactRecord]:
        rows = (
            a for a in self._s.artifacts.values() if a.org_id == self._org and a.node_id == node_id
        )
        return keyset(rows, lambda a: (a.created_at, a.id), after, limit)

    async def lease_page(
        self, node_id: UUID, *, after: tuple[datetime, UUID] | None, limit: int | None
    ) -> list[Lease]:
        rows = (self._s.leases[i] for i in self._s.node_leases.get(node_id, ()))
        return keyset(rows, lambda x: (x.created_at, x.id), after, limit)

    async def live_lease_page(
        self,
        project_ids: Collection[UUID] | None,
        *,
        holder: UUID | None,
        hidden: Collection[UUID],
        after: tuple[datetime, UUID] | None,
        limit: int | None,
    ) -> list[Lease]:
        wanted = set(project_ids) if project_ids is not None else None
        rows = (
            x
            for x in self._s.leases.values()
            if x.org_id == self._org
            and x.live(self._now)
            and (holder is None or x.holder == holder)
            and self._s.nodes[x.node_id].project_id not in hidden
            and (wanted is None or self._s.nodes[x.node_id].project_id in wanted)
        )
        return keyset(rows, lambda x: (x.created_at, x.id), after, limit)

    async def principal_page(
        self, *, after: tuple[str, UUID] | None, limit: int | None
    ) -> list[Principal]:
        rows = (p for p in self._s.principals.values() if p.org_id == self._org)
        return keyset(rows, lambda p: (p.name, p.id), after, limit)

    async def rate_page(self, *, after: str | None, limit: int | None) -> list[Rate]:
        rows = (r for (o, _), r in self._s.rates.items() if o == self._org)
        return keyset(rows, lambda r: r.model, after, limit)

    async def endpoint_page(
        self,
        project_id: UUID | None,
        *,
        hidden: Collection[UUID],
        after: UUID | None,
        limit: int | None,
    ) -> list[Endpoint]:
        rows = (
            ep
            for ep in self._wstate.webhooks.endpoints.values()
            if ep.org_id == self._org
            and (project_id is None or ep.project_id == project_id)
            and ep.project_id not in hidden
        )
        return keyset(rows, lambda ep: ep.id, after, limit)

    async def count_artifacts(self, node_id: UUID) -> int:
        return len(await self.artifacts_of([node_id]))

    async def blob(self, digest: str) -> BlobRecord | None:
        return self._s.blobs.get((self._org, digest))

    async def readable_blob(
        self, digest: str, principal_id: UUID, hidden: Collection[UUID]
    ) -> BlobRecord | None:
        found = self._s.blobs.get((self._org, digest))
        if found is None:
            return None
        named = False
        for a in self._s.artifacts.values():
            if a.org_id != self._org or not any(
                isinstance(p, BlobPart) and p.digest == digest for p in a.parts
            ):
                continue
            named = True
            node = self._s.nodes.get(a.node_id)
            if node is not None and node.project_id not in hidden:
                return found
        return found if not named and found.created_by == principal_id else None

    async def insert_blob(self, blob: BlobRecord) -> None:
        key = (self._org, blob.digest)
        had = self._s.blobs.get(key)
        touched = attrs.evolve(had or blob, touched_at=blob.created_at)
        self._set(self._s.blobs, key, touched)

    async def touch_blob(self, digest: str) -> BlobRecord | None:
        key = (self._org, digest)
        had = self._s.blobs.get(key)
        if had is None:
            return None
        since = had.touched_at or had.created_at
        touched = attrs.evolve(had, touched_at=max(since, self._now))
        self._set(self._s.blobs, key, touched)
        return touched

    async def lock_blob(self, digest: str) -> None:
        """Nothing to do: a memory transaction holds the store's lock, which a sweep takes."""
