"""Content beside the graph in PostgreSQL: comments, imports (node origins), search, usage and
cost, organization limits, budgets, artifacts and blob metadata, events and the change stream.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from skift import (
    ArtifactRecord,
    BlobRecord,
    Budget,
    Comment,
    Event,
    EventBatch,
    EventPosition,
    Lease,
    Node,
    NodeOrigin,
    Principal,
    Rate,
    Revision,
    SearchQuery,
    StoredPolicy,
    UsageKind,
    UsageRecord,
    UsageScope,
    UsageTotal,
    part_from_dict,
    part_to_dict,
)

from ._queries import q
from ._rows import (
    Row,
    budget_from_row,
    comment_from_row,
    comment_params,
    event_from_row,
    lease_from_row,
    node_from_row,
    origin_from_row,
    principal_from_row,
    usage_from_row,
)
from ._tx import COPY_FROM, NO_CAPS, TxBase
from ._webhooks import PgWebhooksTx


class ContentTx(TxBase, PgWebhooksTx):
    """The content half of :class:`~skift_pg.PgTx` (content.sql, origins.sql, accounting.sql, events.sql)."""

    # comments
    async def insert_comment(self, comment: Comment) -> None:
        await self.write("insert_comment", **comment_params(comment))

    async def insert_comments(self, comments: Sequence[Comment]) -> None:
        if comments:
            await self._insert_rows(
                "insert_comment", "comments", list(map(comment_params, comments))
            )

    # imports
    async def origins_of_project(self, project_id: UUID, source: str) -> list[NodeOrigin]:
        rows = await self.rows("origins_of_project", project_id=project_id, source=source)
        return [origin_from_row(r) for r in rows]

    async def origins_by_external_id(self, external_id: str) -> list[NodeOrigin]:
        rows = await self.rows("origins_by_external_id", external_id=external_id)
        return [origin_from_row(r) for r in rows]

    async def upsert_origins(self, origins: Sequence[NodeOrigin]) -> None:
        if not origins:
            return
        params = [
            {
                "org": self._org,
                "node_id": o.node_id,
                "project_id": o.project_id,
                "source": o.source,
                "external_id": o.external_id,
                "extra": Jsonb(dict(o.extra)),
            }
            for o in origins
        ]
        if len(params) < COPY_FROM:
            await self._send_many("upsert_origin", params)
            return
        # many: COPY into a scratch table, then one upsert from it
        await self.exec("origins_scratch")
        await self.exec("origins_scratch_clear")
        await self._insert_rows("upsert_origin", "origins_in", params)
        await self.write("upsert_origins_scratch")

    async def update_comment(self, comment: Comment, *, revision: Revision | None = None) -> None:
        if revision is not None:
            await self.write(
                "insert_comment_revision",
                comment=comment.id,
                body=revision.body,
                author=revision.author_id,
                at=revision.at,
            )
        await self.write(
            "update_comment",
            id=comment.id,
            body=comment.body,
            edited_at=comment.edited_at,
            resolved_at=comment.resolved_at,
            resolved_by=comment.resolved_by,
        )

    async def _with_revisions(self, rows: list[Row]) -> list[Comment]:
        if not rows:
            return []
        revisions: dict[UUID, list[Revision]] = {}
        for r in await self.rows("comment_revisions", ids=[row["id"] for row in rows]):
            revisions.setdefault(r["comment_id"], []).append(
                Revision(body=r["body"], author_id=r["author_id"], at=r["at"])
            )
        return [comment_from_row(row, tuple(revisions.get(row["id"], ()))) for row in rows]

    async def comment_by_id(self, comment_id: UUID, *, lock: bool = False) -> Comment | None:
        row = await self.row("comment_by_id_locked" if lock else "comment_by_id", id=comment_id)
        return (await self._with_revisions([row]))[0] if row else None

    async def comments_of(self, node_ids: Collection[UUID]) -> list[Comment]:
        if not node_ids:
            return []
        return await self._with_revisions(await self.rows("comments_of", ids=list(node_ids)))

    # keyset pages: the rows after a key, ``limit`` of them (LIMIT NULL: every one)
    async def comment_page(
        self, node_id: UUID, *, after: tuple[datetime, UUID] | None, limit: int | None
    ) -> list[Comment]:
        rows = await self.rows("comment_page", id=node_id, limit=limit, **_after_at(after))
        return await self._with_revisions(rows)

    async def artifact_page(
        self, node_id: UUID, *, after: tuple[datetime, UUID] | None, limit: int | None
    ) -> list[ArtifactRecord]:
        rows = await self.rows("artifact_page", id=node_id, limit=limit, **_after_at(after))
        return [_artifact(r) for r in rows]

    async def lease_page(
        self, node_id: UUID, *, after: tuple[datetime, UUID] | None, limit: int | None
    ) -> list[Lease]:
        rows = await self.rows("lease_page", id=node_id, limit=limit, **_after_at(after))
        return [lease_from_row(r) for r in rows]

    async def live_lease_page(
        self,
        project_ids: Collection[UUID] | None,
        *,
        holder: UUID | None,
        hidden: Collection[UUID],
        after: tuple[datetime, UUID] | None,
        limit: int | None,
    ) -> list[Lease]:
        rows = await self.rows(
            "live_lease_page",
            projects=list(project_ids) if project_ids is not None else None,
            holder=holder,
            hidden=list(hidden),
            now=await self.now(),
            limit=limit,
            **_after_at(after),
        )
        return [lease_from_row(r) for r in rows]

    async def principal_page(
        self, *, after: tuple[str, UUID] | None, limit: int | None
    ) -> list[Principal]:
        rows = await self.rows(
            "principal_page",
            after_name=None if after is None else after[0],
            after_id=None if after is None else after[1],
            limit=limit,
        )
        return [principal_from_row(r) for r in rows]

    async def rate_page(self, *, after: str | None, limit: int | None) -> list[Rate]:
        return [_rate(r) for r in await self.rows("rate_page", after=after, limit=limit)]

    async def comment_hint(self, node_id: UUID) -> tuple[int, datetime | None]:
        # a claim's was sent with its edges (GraphTx.edges_into)
        rows = await self._rows_ahead(("hint", node_id), "comment_hint", id=node_id)
        row = rows[0]
        return int(row["unresolved"]), row["newest_at"]

    # search
    async def input_sources(
        self,
        node_id: UUID,
        *,
        after: tuple[UUID, int] | None,
        limit: int | None,
        hidden: Collection[UUID] = (),
    ) -> list[Node]:
        rows = await self.rows(
            "input_sources",
            node=node_id,
            after_project=after[0] if after else None,
            after_number=after[1] if after else None,
            limit=limit,
            hidden=list(hidden),
        )
        return [node_from_row(r) for r in rows]

    async def search(self, query: SearchQuery) -> list[tuple[Node, float]]:
        rows = await self.rows(
            "search",
            terms=list(query.terms),
            projects=list(query.projects),
            archived=query.include_archived,
            limit=query.limit,
            hidden=list(query.hidden),
            after_rank=None if query.after is None else query.after[0],
            after_project=None if query.after is None else query.after[1],
            after_number=None if query.after is None else query.after[2],
        )
        return [(node_from_row(r), float(r["rank"])) for r in rows]

    # usage and cost
    async def insert_usage(self, record: UsageRecord) -> None:
        await self.write(
            "insert_usage",
            id=record.id,
            project_id=record.project_id,
            node_id=record.node_id,
            lease_id=record.lease_id,
            principal_id=record.principal_id,
            model=record.model,
            input_tokens=record.input_tokens,
            output_tokens=record.output_tokens,
            cache_read_tokens=record.cache_read_tokens,
            cache_write_tokens=record.cache_write_tokens,
            kind=record.kind.value,
            basis=record.basis,
            created_at=record.created_at,
        )

    @staticmethod
    def _scope(scope: UsageScope) -> Row:
        return {"node": scope.node, "project": scope.project, "subtree": scope.subtree}

    async def usage_records(self, scope: UsageScope, limit: int) -> list[UsageRecord]:
        rows = await self.rows("usage_records", **self._scope(scope), limit=limit)
        return [usage_from_row(r) for r in rows]

    async def usage_totals(self, scope: UsageScope) -> list[UsageTotal]:
        return [
            UsageTotal(
                kind=UsageKind(r["kind"]),
                model=r["model"],
                input_tokens=int(r["input_tokens"]),  # numeric sums: Decimal
                output_tokens=int(r["output_tokens"]),
                cache_read_tokens=int(r["cache_read_tokens"]),
                cache_write_tokens=int(r["cache_write_tokens"]),
            )
            for r in await self.rows("usage_totals", **self._scope(scope))
        ]

    async def rates(self) -> list[Rate]:
        return [_rate(r) for r in await self.rows("rates")]

    async def upsert_rate(self, rate: Rate) -> None:
        await self.write(
            "upsert_rate",
            model=rate.model,
            input=rate.input,
            output=rate.output,
            cache_read=rate.cache_read,
            cache_write=rate.cache_write,
            currency=rate.currency,
            updated_by=rate.updated_by,
            updated_at=rate.updated_at,
        )

    async def org_limits(self) -> dict[str, int]:
        rows = await self._rows_ahead(("org_limits",), "org_limits")  # a complete's: ahead
        r = rows[0] if rows else None
        own: dict[str, int] = r["limits"] if r else {}
        return dict(own)

    async def set_org_limits(self, limits: Mapping[str, int]) -> None:
        await self.write("set_org_limits", limits=Jsonb(dict(limits)))

    async def org_policy(self) -> StoredPolicy | None:
        r = await self.row("org_policy")
        if r is None:
            return None
        modules: list[list[str]] = r["modules"]
        return StoredPolicy(
            modules=tuple((str(n), str(s)) for n, s in modules),
            digest=r["digest"],
            updated_at=r["updated_at"],
            updated_by=r["updated_by"],
        )

    async def set_org_policy(self, policy: StoredPolicy) -> None:
        await self.write(
            "set_org_policy",
            modules=Jsonb([list(m) for m in policy.modules]),
            digest=policy.digest,
            updated_at=policy.updated_at,
            updated_by=policy.updated_by,
        )
        self._policy_digest = policy.digest

    async def budgets(self, scope_ids: Collection[UUID]) -> dict[UUID, Budget]:
        if not scope_ids:
            return {}
        return {
            r["scope_id"]: budget_from_row(r)
            for r in await self.rows("budgets", ids=list(scope_ids))
        }

    async def set_budget(self, budget: Budget) -> None:
        await self.write(
            "set_budget",
            scope_id=budget.scope_id,
            scope=budget.scope,
            budget=budget.budget,
            cap=budget.cap,
            updated_at=budget.updated_at,
        )

    async def capped_nodes(self) -> list[Budget]:
        if self._ahead.pop(NO_CAPS, False):  # get_cursor found none
            return []
        return [budget_from_row(r) for r in await self.rows("capped_nodes")]

    async def subtree_ids(self, root: UUID) -> list[UUID]:
        return [r["id"] for r in await self.rows("subtree_ids", id=root)]

    # artifacts and blob metadata
    async def insert_artifacts(self, artifacts: Sequence[ArtifactRecord]) -> None:
        if not artifacts:
            return
        params = [
            {
                "id": a.id,
                "org": self._org,
                "node_id": a.node_id,
                "name": a.name,
                "description": a.description,
                "parts": Jsonb([part_to_dict(p) for p in a.parts]),
                "metadata": Jsonb(a.metadata),
                "author_id": a.author_id,
                "created_at": a.created_at,
            }
            for a in artifacts
        ]
        await self._conn.flush()
        async with self._conn.cursor() as cur:
            await cur.executemany(q("insert_artifact"), params)
        self._written()

    async def artifacts_of(self, node_ids: Collection[UUID]) -> list[ArtifactRecord]:
        if not node_ids:
            return []
        return [_artifact(r) for r in await self.rows("artifacts_of", ids=list(node_ids))]

    async def count_artifacts(self, node_id: UUID) -> int:
        row = await self.row("count_artifacts", id=node_id)
        assert row is not None
        return int(row["n"])

    async def blob(self, digest: str) -> BlobRecord | None:
        row = await self.row("blob", digest=digest)
        return None if row is None else _blob(row)

    async def readable_blob(
        self, digest: str, principal_id: UUID, hidden: Collection[UUID]
    ) -> BlobRecord | None:
        row = await self.row(
            "blob_readable",
            digest=digest,
            probe=Jsonb([{"type": "blob", "digest": digest}]),
            principal=principal_id,
            hidden=list(hidden),
        )
        return None if row is None else _blob(row)

    async def touch_blob(self, digest: str) -> BlobRecord | None:
        row = await self.row("touch_blob", digest=digest, now=await self.now())
        return None if row is None else _blob(row)

    async def lock_blob(self, digest: str) -> None:
        await self.row("lock_blob", digest=digest)

    async def insert_blob(self, blob: BlobRecord) -> None:
        await self.write(
            "insert_blob",
            digest=blob.digest,
            size=blob.size,
            media_type=blob.media_type,
            created_by=blob.created_by,
            created_at=blob.created_at,
        )

    # events
    async def append_events(self, events: Sequence[Event]) -> None:
        if not events:
            return
        params = [
            {
                "id": e.id,
                "org": e.org_id,
                "project_id": e.project_id,
                "node_id": e.node_id,
                "principal_id": e.principal_id,
                "principal_kind": e.principal_kind.value,
                "on_behalf_of": e.on_behalf_of,
                "identity_scheme": e.identity_scheme,
                "request_id": e.request_id,
                "op": e.op,
                "reason": e.reason,
                "before": Jsonb(e.before) if e.before is not None else None,
                "after": Jsonb(e.after) if e.after is not None else None,
                "occurred_at": e.occurred_at,
            }
            for e in events
        ]
        if len(params) == 1:  # the event and its deliveries in one statement
            await self.send("insert_event_announced", now=await self.now(), **params[0])
        elif len(params) < COPY_FROM:
            await self._send_many("insert_event", params)
            await self.announce(events)
        else:  # an import's thousands: COPY
            await self._insert_rows("insert_event", "events", params)
            await self.announce(events)

    async def events(
        self,
        *,
        node_id: UUID | None = None,
        limit: int = 1000,
        hidden: Collection[UUID] = (),
        before: UUID | None = None,
    ) -> list[Event]:
        rows = await self.rows(
            "events", node=node_id, limit=limit, hidden=list(hidden), before=before
        )
        return [event_from_row(r) for r in rows]

    # the change stream (queries/events.sql): positions are (xid, id)
    async def events_after(
        self,
        after: EventPosition,
        *,
        projects: Collection[UUID] = (),
        ops: Collection[str] = (),
        limit: int,
        hidden: Collection[UUID] = (),
        whole: bool = False,
    ) -> EventBatch:
        rows = await self.rows(
            "events_after",
            seq=str(after.seq),
            id=after.id,
            projects=list(projects),
            ops=list(ops),
            limit=limit,
            hidden=list(hidden),
            whole=whole,
        )
        found = [
            (EventPosition(seq=int(r["seq"]), id=r["id"]), event_from_row(r))
            for r in rows
            if r["seq"] is not None
        ]
        return EventBatch(events=found, horizon=EventPosition(seq=int(rows[0]["horizon"])))

    async def replay_start(self, since: datetime) -> EventPosition:
        row = await self.row("replay_start", since=since)
        assert row is not None
        return EventPosition(seq=int(row["seq"]))

    async def event_positions(
        self, ids: Collection[UUID]
    ) -> tuple[dict[UUID, EventPosition], EventPosition]:
        rows = await self.rows("event_positions", ids=list(ids))
        found = {
            r["id"]: EventPosition(seq=int(r["seq"]), id=r["id"])
            for r in rows
            if r["seq"] is not None
        }
        return found, EventPosition(seq=int(rows[0]["horizon"]))


def _blob(row: dict[str, Any]) -> BlobRecord:
    return BlobRecord(
        digest=row["digest"],
        size=row["size"],
        media_type=row["media_type"],
        created_by=row["created_by"],
        created_at=row["created_at"],
        touched_at=row["touched_at"],
    )


def _after_at(after: tuple[datetime, UUID] | None) -> dict[str, Any]:
    """A (created_at, id) key as the page queries' parameters."""
    return {
        "after_at": None if after is None else after[0],
        "after_id": None if after is None else after[1],
    }


def _rate(r: Row) -> Rate:
    return Rate(
        org_id=r["org_id"],
        model=r["model"],
        input=r["input"],
        output=r["output"],
        cache_read=r["cache_read"],
        cache_write=r["cache_write"],
        currency=r["currency"],
        updated_by=r["updated_by"],
        updated_at=r["updated_at"],
    )


def _artifact(r: Row) -> ArtifactRecord:
    return ArtifactRecord(
        id=r["id"],
        org_id=r["org_id"],
        node_id=r["node_id"],
        name=r["name"],
        description=r["description"],
        parts=tuple(part_from_dict(p) for p in r["parts"]),
        metadata=r["metadata"],
        author_id=r["author_id"],
        created_at=r["created_at"],
    )
