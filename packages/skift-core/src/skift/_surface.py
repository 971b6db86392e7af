"""Who an in-process caller acts as, and the Skift protocol: the whole public surface.

:class:`~skift.LocalSkift` implements it in process; the gRPC client in
``skift_server`` implements it remotely.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from decimal import Decimal
from typing import Any, Protocol

import attrs

from ._artifacts import Artifact, ArtifactInfo, BlobInfo
from ._models import PrincipalKind, Priority, ReleaseReason
from ._ops import Op
from ._org_limits import OrgLimits
from ._orgs import OrgCreated, OrgInfo
from ._policy_records import OrgPolicy
from ._usage import RateInfo, UsageInfo, UsageReport
from ._views import (
    Claim,
    CommentInfo,
    EventInfo,
    EventPage,
    Explanation,
    Input,
    LeaseInfo,
    NodeInfo,
    PatchResult,
    ProjectInfo,
    ReadyPage,
    Resolved,
    SearchHit,
)
from ._webhooks import DeliveryInfo, WebhookInfo


@attrs.frozen
class PrincipalSpec:
    """Who an in-process caller acts as: a name and a kind."""

    name: str
    kind: PrincipalKind = PrincipalKind.USER


def User(name: str) -> PrincipalSpec:
    """A person."""
    return PrincipalSpec(name, PrincipalKind.USER)


def Agent(name: str) -> PrincipalSpec:
    """An AI agent or other automated worker."""
    return PrincipalSpec(name, PrincipalKind.AGENT)


def Service(name: str) -> PrincipalSpec:
    """A service acting on its own account (an orchestrator, a notifier)."""
    return PrincipalSpec(name, PrincipalKind.SERVICE)


OpLike = Op | dict[str, Any]


class Skift(Protocol):
    """The skift API, as every implementation offers it."""

    async def create_project(
        self,
        title: str,
        *,
        slug: str | None = None,
        priority: Priority | str = Priority.P2,
        vcs_url: str = "",
    ) -> ProjectInfo: ...
    async def get_project(self, ref: str) -> ProjectInfo: ...
    async def list_projects(
        self, *, archived: bool = False, limit: int | None = None, offset: int = 0
    ) -> list[ProjectInfo]: ...
    async def update_project(
        self,
        ref: str,
        *,
        title: str | None = None,
        slug: str | None = None,
        priority: Priority | str | None = None,
        vcs_url: str | None = None,
        budget: Decimal | int | str | None = None,
    ) -> ProjectInfo: ...
    async def archive_project(self, ref: str, *, reason: str = "archived") -> ProjectInfo: ...
    async def restrict_project(
        self, ref: str, *, readers: Sequence[str], reason: str
    ) -> ProjectInfo: ...
    async def unrestrict_project(self, ref: str, *, reason: str) -> ProjectInfo: ...
    async def patch(
        self,
        project: str,
        ops: Sequence[OpLike],
        *,
        request_id: str | None = None,
        lease: str | None = None,
    ) -> PatchResult: ...
    async def get(self, ref: str, *, project: str | None = None) -> NodeInfo: ...
    async def resolve(self, ref: str, *, project: str | None = None) -> Resolved: ...
    async def ready(
        self, *, limit: int | None = None, page: str | None = None, **filters: Any
    ) -> ReadyPage: ...
    async def list_nodes(
        self,
        *,
        limit: int | None = None,
        page: str | None = None,
        attributed: bool = False,
        **filters: Any,
    ) -> ReadyPage: ...
    async def explain(self, ref: str, *, project: str | None = None) -> Explanation: ...
    async def claim(
        self, ref: str, *, project: str | None = None, ttl: timedelta | None = None, **kw: Any
    ) -> Claim: ...
    async def claim_next(
        self, *, ttl: timedelta | None = None, wait: timedelta | None = None, **kw: Any
    ) -> Claim: ...
    async def heartbeat(
        self, ref: str, *, lease: str, ttl: timedelta | None = None, project: str | None = None
    ) -> LeaseInfo: ...
    async def complete(
        self,
        ref: str,
        *,
        lease: str | None = None,
        result: str = "",
        artifacts: Sequence[Artifact | Mapping[str, Any]] = (),
        project: str | None = None,
        request_id: str | None = None,
    ) -> PatchResult: ...
    async def release(
        self,
        ref: str,
        *,
        lease: str,
        reason: ReleaseReason | str = ReleaseReason.CRASH,
        project: str | None = None,
    ) -> NodeInfo: ...
    async def gate(
        self,
        ref: str,
        *,
        lease: str,
        title: str,
        body: str = "",
        project: str | None = None,
        request_id: str | None = None,
    ) -> PatchResult: ...
    async def add_comment(
        self,
        ref: str,
        body: str,
        *,
        reply_to: str | None = None,
        project: str | None = None,
        request_id: str | None = None,
    ) -> CommentInfo: ...
    async def edit_comment(self, comment_id: str, body: str) -> CommentInfo: ...
    async def resolve_comment(self, comment_id: str) -> CommentInfo: ...
    async def comments(self, ref: str, *, project: str | None = None) -> list[CommentInfo]: ...
    async def search(
        self,
        query: str,
        *,
        projects: Sequence[str] | None = None,
        limit: int = 20,
        include_archived: bool = False,
    ) -> list[SearchHit]: ...

    # usage and cost; artifacts and blobs (skift._usage, skift._artifacts)
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
    ) -> UsageInfo: ...
    async def usage(
        self, ref: str, *, subtree: bool = False, project: str | None = None
    ) -> UsageReport: ...
    async def project_usage(self, project: str) -> UsageReport: ...
    async def set_rate(
        self,
        model: str,
        *,
        input: Decimal | int | str,
        output: Decimal | int | str,
        cache_read: Decimal | int | str = 0,
        cache_write: Decimal | int | str = 0,
        currency: str = "USD",
    ) -> RateInfo: ...
    async def rates(self) -> list[RateInfo]: ...
    async def set_org_limits(self, **sizes: int | None) -> OrgLimits: ...
    async def org_limits(self) -> OrgLimits: ...
    async def policy(self) -> OrgPolicy: ...
    async def set_policy(
        self, modules: Mapping[str, str], *, reason: str | None = None
    ) -> OrgPolicy: ...
    async def reset_policy(self, *, reason: str | None = None) -> OrgPolicy: ...
    async def create_org(self, name: str, *, admin: str, uid: int | None = None) -> OrgCreated: ...
    async def list_orgs(self) -> list[OrgInfo]: ...
    async def put_blob(
        self, data: bytes, *, media_type: str, digest: str | None = None
    ) -> BlobInfo: ...
    async def get_blob(self, digest: str) -> bytes: ...
    async def attach_artifact(
        self,
        ref: str,
        artifact: Artifact | Mapping[str, Any],
        *,
        lease: str | None = None,
        project: str | None = None,
        request_id: str | None = None,
    ) -> PatchResult: ...
    async def artifacts(self, ref: str, *, project: str | None = None) -> list[ArtifactInfo]: ...
    async def inputs(self, ref: str, *, project: str | None = None) -> list[Input]: ...
    async def events(
        self, *, ref: str | None = None, project: str | None = None, limit: int = 1000
    ) -> list[EventInfo]: ...
    async def watch_events(
        self,
        *,
        after: str | None = None,
        projects: Sequence[str] | None = None,
        ops: Sequence[str] | None = None,
        limit: int = 100,
        wait: timedelta | None = None,
    ) -> EventPage: ...

    async def add_webhook(
        self, project: str, url: str, *, events: Sequence[str] | None = None
    ) -> WebhookInfo: ...
    async def webhooks(self, *, project: str | None = None) -> list[WebhookInfo]: ...
    async def rotate_webhook_secret(self, webhook: str) -> WebhookInfo: ...
    async def disable_webhook(self, webhook: str) -> WebhookInfo: ...
    async def enable_webhook(self, webhook: str) -> WebhookInfo: ...
    async def webhook_deliveries(
        self,
        webhook: str | None = None,
        *,
        project: str | None = None,
        parked: bool = False,
        limit: int | None = None,
    ) -> list[DeliveryInfo]: ...
    async def redeliver(self, delivery: str) -> DeliveryInfo: ...
    async def test_webhook(self, webhook: str) -> DeliveryInfo: ...
