"""The API for content beside the graph: comments, search, usage and cost, webhooks,
organization limits, artifacts and blobs, lease history, and the event log and change stream.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping, Sequence
from datetime import timedelta
from decimal import Decimal
from typing import Any
from uuid import UUID

from . import _comments, _leasing, _search, _stream
from ._api_graph import GraphApi
from ._artifacts import Artifact, ArtifactInfo, BlobInfo
from ._artifacts import artifact_page as artifacts_page
from ._artifacts import as_artifact as artifacts_as_artifact
from ._artifacts import check_upload as artifacts_check_upload
from ._artifacts import find_blob as artifacts_find_blob
from ._artifacts import record_blob as artifacts_record_blob
from ._blobs import check_digest
from ._engine import Actor
from ._errors import Invalid, Unavailable
from ._intent import intent
from ._limits import Limits
from ._ops import AttachArtifact
from ._org_limits import OrgLimits
from ._org_limits import org_limits as org_get_limits
from ._org_limits import set_org_limits as org_set_limits
from ._pages import Page
from ._refs import new_id, parse_ulid, ulid_str
from ._store import Tx
from ._usage import RateInfo, UsageInfo, UsageReport
from ._usage import list_rates as usage_list_rates
from ._usage import node_usage as usage_node_usage
from ._usage import project_usage as usage_project_usage
from ._usage import record_usage as usage_record_usage
from ._usage import set_rate as usage_set_rate
from ._views import (
    CommentInfo,
    EventInfo,
    EventPage,
    Input,
    LeaseInfo,
    PatchResult,
    SearchHit,
)
from ._webhooks import DeliveryInfo, WebhookInfo
from ._webhooks import add_webhook as webhooks_add
from ._webhooks import list_deliveries as webhooks_deliveries
from ._webhooks import list_webhooks as webhooks_list
from ._webhooks import queue_test_delivery as webhooks_test
from ._webhooks import redeliver as webhooks_redeliver
from ._webhooks import rotate_webhook_secret as webhooks_rotate
from ._webhooks import set_webhook_enabled as webhooks_set_enabled


class ContentApi(GraphApi):
    """Comments, search, usage, webhooks, org limits, artifacts and blobs, leases, events."""

    # ---------------------------------------------------------------- comments

    async def add_comment(
        self,
        ref: str,
        body: str,
        *,
        reply_to: str | None = None,
        project: str | None = None,
        request_id: str | None = None,
    ) -> CommentInfo:
        """Comment on a node (markdown); ``reply_to`` is the id of a comment on the same node.

        Safe to retry with the same ``request_id``.
        """
        rid = request_id or ulid_str(new_id())
        if not rid.strip():
            raise Invalid(
                "request_id is empty",
                next="Leave it out to have one made, or give a non-empty id.",
                field="request_id",
            )
        return await self._run(
            lambda tx, a: _comments.add_comment(
                self.engine, tx, a, ref, project, body, reply_to, rid
            )
        )

    async def edit_comment(self, comment_id: str, body: str) -> CommentInfo:
        """Replace a comment's body (its author only); the prior body is kept as a revision."""
        return await self._run(
            lambda tx, a: _comments.edit_comment(self.engine, tx, a, comment_id, body)
        )

    async def resolve_comment(self, comment_id: str) -> CommentInfo:
        """Mark a comment resolved, once; resolving it again returns it unchanged."""
        return await self._run(
            lambda tx, a: _comments.resolve_comment(self.engine, tx, a, comment_id)
        )

    async def comments(
        self,
        ref: str,
        *,
        project: str | None = None,
        limit: int | None = None,
        page: str | None = None,
    ) -> Page[CommentInfo]:
        """A node's comments, oldest first; ``in_reply_to`` threads them. Every one, or
        ``limit`` of them from ``page`` (a previous page's ``next_page``) on."""
        return await self._run(
            lambda tx, a: _comments.list_comments(
                self.engine, tx, ref, project, limit=limit, page=page
            )
        )

    # ------------------------------------------------------------------ search

    async def search(
        self,
        query: str,
        *,
        projects: Sequence[str] | None = None,
        limit: int = 20,
        include_archived: bool = False,
        page: str | None = None,
    ) -> Page[SearchHit]:
        """Nodes whose title, body, result and comments hold every word of ``query``, best
        first: ``limit`` of them, from ``page`` (a previous page's ``next_page``) on."""
        return await self._run(
            lambda tx, a: _search.search(
                self.engine,
                tx,
                a,
                query,
                projects=projects,
                limit=limit,
                include_archived=include_archived,
                page=page,
            )
        )

    # ------------------------------------------------------------ usage and cost

    async def record_usage(
        self,
        ref: str,
        *,
        model: str,
        input_tokens: int = 0,
        output_tokens: int = 0,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
        estimate: bool = False,
        basis: str | None = None,
        lease: str | None = None,
        project: str | None = None,
    ) -> UsageInfo:
        """Append a usage record: token counts, never currency.

        An actual names the lease of the attempt it measures (checked like every
        write under a lease, and renewing it); a person, or any estimate, may
        go without one. ``basis`` says what an estimate rests on.
        """
        tokens: dict[str, object] = {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cache_read_tokens": cache_read_tokens,
            "cache_write_tokens": cache_write_tokens,
        }
        return await self._run(
            lambda tx, a: usage_record_usage(
                self.engine,
                tx,
                a,
                ref,
                project,
                model=model,
                tokens=tokens,
                estimate=estimate,
                basis=basis,
                lease=lease,
            )
        )

    async def usage(
        self, ref: str, *, subtree: bool = False, project: str | None = None
    ) -> UsageReport:
        """A node's usage (with ``subtree``, its descendants' too), priced at today's rates."""
        return await self._run(
            lambda tx, a: usage_node_usage(self.engine, tx, ref, project, subtree=subtree)
        )

    async def project_usage(self, project: str) -> UsageReport:
        """A project's usage rollup, priced at today's rates, beside its budget."""
        return await self._run(lambda tx, a: usage_project_usage(self.engine, tx, project))

    async def set_rate(
        self,
        model: str,
        *,
        input: Decimal | int | str,
        output: Decimal | int | str,
        cache_read: Decimal | int | str = 0,
        cache_write: Decimal | int | str = 0,
        currency: str = "USD",
    ) -> RateInfo:
        """Price a model per million tokens of each class (a person's call; one currency per org)."""
        prices: dict[str, object] = {
            "input": input,
            "output": output,
            "cache_read": cache_read,
            "cache_write": cache_write,
        }
        return await self._run(
            lambda tx, a: usage_set_rate(self.engine, tx, a, model, prices, currency)
        )

    async def rates(self, *, limit: int | None = None, page: str | None = None) -> Page[RateInfo]:
        """The organization's rate table, by model. Every rate, or ``limit`` of them from
        ``page`` (a previous page's ``next_page``) on."""
        size = None if limit is None else self.engine.page_size(limit)
        return await self._run(lambda tx, a: usage_list_rates(tx, size=size, page=page))

    async def set_org_limits(self, **sizes: int | None) -> OrgLimits:
        """Lower some of the server's size limits for this organization (a person only).

        Each keyword is a size limit (``body_bytes``, ``result_bytes``,
        ``comment_bytes``, ``inline_part_bytes``, ``blob_bytes``,
        ``artifacts_per_node``, ``parts_per_artifact``,
        ``artifact_metadata_bytes``): a value from 1 to the server's, or None
        to use the server's again. Names left out keep their value.
        """
        return await self._run(lambda tx, a: org_set_limits(self.engine, tx, a, sizes))

    async def org_limits(self) -> OrgLimits:
        """The size limits in force for this organization, and which it set itself."""
        return await self._run(lambda tx, a: org_get_limits(self.engine, tx))

    # ---------------------------------------------------------------- webhooks

    async def add_webhook(
        self, project: str, url: str, *, events: Sequence[str] | None = None
    ) -> WebhookInfo:
        """Tell ``url`` about the project's changes (the operations ``events``; all when
        None). The result's ``secret`` signs every delivery; it is shown this once."""
        return await self._run(lambda tx, a: webhooks_add(self.engine, tx, a, project, url, events))

    async def webhooks(
        self, *, project: str | None = None, limit: int | None = None, page: str | None = None
    ) -> Page[WebhookInfo]:
        """The endpoints of a project (of every project when None); never a secret. Every
        one, or ``limit`` of them from ``page`` (a previous page's ``next_page``) on."""
        return await self._run(
            lambda tx, a: webhooks_list(self.engine, tx, project, limit=limit, page=page)
        )

    async def rotate_webhook_secret(self, webhook: str) -> WebhookInfo:
        """A new secret for an endpoint (in the result, this once); the old one stops at once."""
        return await self._run(lambda tx, a: webhooks_rotate(self.engine, tx, a, webhook))

    async def disable_webhook(self, webhook: str) -> WebhookInfo:
        """Send an endpoint nothing until it is enabled; what commits meanwhile waits for it."""
        return await self._run(
            lambda tx, a: webhooks_set_enabled(self.engine, tx, a, webhook, enabled=False)
        )

    async def enable_webhook(self, webhook: str) -> WebhookInfo:
        return await self._run(
            lambda tx, a: webhooks_set_enabled(self.engine, tx, a, webhook, enabled=True)
        )

    async def webhook_deliveries(
        self,
        webhook: str | None = None,
        *,
        project: str | None = None,
        parked: bool = False,
        limit: int | None = None,
        page: str | None = None,
    ) -> Page[DeliveryInfo]:
        """Deliveries newest first: of one endpoint, one project, or all; only parked ones
        with ``parked``; ``limit`` of them, from ``page`` (a previous ``next_page``) on."""
        return await self._run(
            lambda tx, a: webhooks_deliveries(
                self.engine,
                tx,
                webhook=webhook,
                project=project,
                parked=parked,
                limit=limit,
                page=page,
            )
        )

    async def redeliver(self, delivery: str) -> DeliveryInfo:
        """Queue a delivered or parked delivery again, with the same id and window."""
        return await self._run(lambda tx, a: webhooks_redeliver(self.engine, tx, a, delivery))

    async def test_webhook(self, webhook: str) -> DeliveryInfo:
        """Queue a delivery with an empty window to an endpoint, to check its receiver."""
        return await self._run(lambda tx, a: webhooks_test(self.engine, tx, a, webhook))

    # ------------------------------------------------------ artifacts and blobs

    async def put_blob(
        self, data: bytes, *, media_type: str, digest: str | None = None
    ) -> BlobInfo:
        """Upload immutable bytes; returns their digest. The same bytes twice are kept once.

        With ``digest``, the bytes must hash to it or nothing is written.
        """
        info = artifacts_check_upload(data, media_type, digest, self.engine.limits)

        async def may(tx: Tx, a: Actor) -> Limits:
            await self.engine.authorize(tx, a, [intent("put_blob")])
            return await self.engine.sizes(tx)

        sizes = await self._run(may)
        if sizes.blob_bytes < self.engine.limits.blob_bytes:  # the organization's lower limit
            info = artifacts_check_upload(data, media_type, digest, sizes)

        async def go(tx: Tx, a: Actor) -> BlobInfo:
            # Held until the row commits: a blob sweep leaves these bytes alone meanwhile.
            await tx.lock_blob(info.digest)
            await self.store.blobs.put(info.digest, data)  # bytes first: a row never lacks them
            return await artifacts_record_blob(tx, a, info)

        return await self._run(go)

    async def get_blob(self, digest: str) -> bytes:
        """The bytes of a blob an artifact the caller may read names (or that the caller
        uploaded and no artifact names yet); any other digest is not found, exactly as
        one nobody stored."""
        canon = check_digest(digest)
        await self._run(lambda tx, a: artifacts_find_blob(self.engine, tx, a, canon))
        data = await self.store.blobs.get(canon)
        if data is None:
            raise Unavailable(
                f"blob {canon} is recorded but its bytes are missing from the blob store",
                next="Ask the operator to check the server's blob directory.",
            )
        return data

    async def attach_artifact(
        self,
        ref: str,
        artifact: Artifact | Mapping[str, Any],
        *,
        lease: str | None = None,
        project: str | None = None,
        request_id: str | None = None,
    ) -> PatchResult:
        """Attach an artifact to a node (a one-operation patch)."""
        op = AttachArtifact(node=ref, artifact=artifacts_as_artifact(artifact))
        return await self._node_patch(ref, project, [op], lease=lease, request_id=request_id)

    async def inputs(
        self,
        ref: str,
        *,
        project: str | None = None,
        limit: int | None = None,
        page: str | None = None,
    ) -> Page[Input]:
        """A node's inputs, as a claim of it carries them (without claiming it): the
        results and artifacts of the nodes that block it, attributed to who completed each,
        by the predecessors' (project, number). Every one of them, or ``limit`` from ``page``
        (a previous page's ``next_page``, or a claim's ``input_ends``) on. A client whose
        claim answer had to leave some out reads them here."""
        return await self._run(
            lambda tx, a: self.engine.input_page(tx, ref, project, limit=limit, page=page)
        )

    async def artifacts(
        self,
        ref: str,
        *,
        project: str | None = None,
        limit: int | None = None,
        page: str | None = None,
    ) -> Page[ArtifactInfo]:
        """A node's artifacts, oldest first. Every one, or ``limit`` of them from ``page``
        (a previous page's ``next_page``) on."""
        return await self._run(
            lambda tx, a: artifacts_page(self.engine, tx, ref, project, limit=limit, page=page)
        )

    async def leases(
        self,
        ref: str | None = None,
        *,
        project: str | None = None,
        projects: Sequence[str] = (),
        mine: bool = False,
        limit: int | None = None,
        page: str | None = None,
    ) -> Page[LeaseInfo]:
        """With ``ref``: every attempt on that node, oldest first. Without: the live leases
        of the organization (of ``projects`` when given; the caller's own with ``mine``),
        oldest first, each lease's ``id`` given to its holder only. Every one, or ``limit``
        of them from ``page`` (a previous page's ``next_page``) on."""
        if ref is not None:
            return await self._run(
                lambda tx, a: self.engine.leases(tx, ref, project, limit=limit, page=page)
            )
        return await self._run(
            lambda tx, a: _leasing.live_leases(
                self.engine, tx, a, tuple(projects), mine=mine, limit=limit, page=page
            )
        )

    async def sweep_expired(self, limit: int = 500) -> int:
        """Record expiry events for leases whose time ran out; returns how many (an
        person's call; the server's sweeper makes it)."""
        if isinstance(limit, bool) or not 1 <= limit <= 100_000:
            raise Invalid(
                f"limit is {limit!r}; it must be a whole number from 1 to 100000",
                next="Sweep at most 100000 expired leases per call (500 when left out).",
                field="limit",
            )

        async def go(tx: Tx, a: Actor) -> int:
            await self.engine.authorize(tx, a, [intent("sweep")])
            return await self.engine.sweep_expired(tx, a, limit)

        return await self._run(go)

    async def events(
        self,
        *,
        ref: str | None = None,
        project: str | None = None,
        limit: int = 1000,
        before: str | None = None,
    ) -> list[EventInfo]:
        """The newest ``limit`` events of the organization (or of node ``ref``), oldest first;
        with ``before`` (an event's id), the newest of those older than it: the next page
        back, which stays put while new events are written.

        ``project`` only resolves a bare ``#N`` in ``ref``; it does not filter.
        """
        older = parse_ulid(before.strip()) if before is not None else None
        if before is not None and older is None:
            raise Invalid(
                f"before is {before!r}, not an event id",
                next="Pass the id of an event a previous call returned.",
                field="before",
            )

        async def go(tx: Tx, a: Actor) -> list[EventInfo]:
            node_id: UUID | None = None
            if ref is not None:
                proj = await self.engine.resolve_project(tx, project) if project else None
                node_id = (await self.engine.resolve_node(tx, ref, proj)).id
            hidden = await self.engine.hidden(tx) if node_id is None else ()
            return await _stream.with_cursors(
                self.engine,
                tx,
                await tx.events(node_id=node_id, limit=limit, hidden=hidden, before=older),
            )

        return await self._run(go)

    async def watch_events(
        self,
        *,
        after: str | None = None,
        projects: Sequence[str] | None = None,
        ops: Sequence[str] | None = None,
        limit: int = 100,
        wait: timedelta | None = None,
    ) -> EventPage:
        """The change stream: the organization's events after the cursor ``after``, in commit order.

        Without ``after``, from the oldest event still in the replay window.
        ``projects`` and ``ops`` filter; the page's ``cursor`` moves past what
        they left out. With ``wait``, an empty read waits (up to the server's
        ceiling) until something commits. A cursor older than the replay window
        raises :class:`~skift.CursorExpired` naming the oldest one still good.
        Delivery is at least once: deduplicate by event id. See docs/events.md.
        """
        ceiling = self.engine.limits.event_wait_ceiling
        deadline = time.monotonic() + min(wait, ceiling).total_seconds() if wait else None
        await self._whoami()
        org_id = self._org_id
        assert org_id is not None
        cursor = after
        wanted, kinds = tuple(projects or ()), tuple(ops or ())
        async with self._long_poll(deadline is not None) as poll:
            while True:
                # waiting calls asking the same read share it (LongPoll.read)
                page = await poll.read(
                    ("watch_events", cursor, wanted, kinds, limit),
                    functools.partial(
                        _stream.watch,
                        self.engine,
                        after=cursor,
                        projects=wanted,
                        ops=kinds,
                        limit=limit,
                    ),
                )
                remaining = (deadline - time.monotonic()) if deadline is not None else 0.0
                if page.events or remaining <= 0:
                    return page
                cursor = page.cursor  # what the filters left out is not read again
                await poll.wait(org_id, remaining, ("watch_events", cursor, wanted, kinds, limit))
