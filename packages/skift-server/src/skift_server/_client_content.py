"""RemoteSkift's content and administration: comments, search, usage, webhooks, artifacts, principals."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

import skift

from ._client_base import (
    RemoteBase,
    artifact_of,
    page_size,
    remote_page,
    request_id_of,
)
from ._convert import enum_pb
from ._convert_types import from_pb, to_pb
from ._proto.skift import v1


class ContentCalls(RemoteBase):
    """RemoteSkift's content and administration: comments, search, usage, webhooks, artifacts, principals."""

    # ------------------------------------------------------------ principals and tokens

    # ------------------------------------------------------------ comments

    async def add_comment(
        self,
        ref: str,
        body: str,
        *,
        reply_to: str | None = None,
        project: str | None = None,
        request_id: str | None = None,
    ) -> skift.CommentInfo:
        req = v1.AddCommentRequest(
            ref=ref,
            body=body,
            reply_to=reply_to,
            project=project,
            request_id=request_id_of(request_id),
        )
        got = await self._call("AddComment", req, v1.AddCommentResponse)
        return from_pb(v1.Comment, skift.CommentInfo, got.comment)

    async def edit_comment(self, comment_id: str, body: str) -> skift.CommentInfo:
        req = v1.EditCommentRequest(id=comment_id, body=body)
        got = await self._call("EditComment", req, v1.EditCommentResponse)
        return from_pb(v1.Comment, skift.CommentInfo, got.comment)

    async def resolve_comment(self, comment_id: str) -> skift.CommentInfo:
        # resolving a resolved comment changes nothing, so a retry is harmless
        req = v1.ResolveCommentRequest(id=comment_id)
        got = await self._call("ResolveComment", req, v1.ResolveCommentResponse)
        return from_pb(v1.Comment, skift.CommentInfo, got.comment)

    async def comments(self, ref: str, *, project: str | None = None) -> list[skift.CommentInfo]:
        out: list[skift.CommentInfo] = []
        token = ""
        while True:
            req = v1.ListCommentsRequest(ref=ref, project=project, page_token=token)
            got = await self._call("ListComments", req, v1.ListCommentsResponse)
            out += [from_pb(v1.Comment, skift.CommentInfo, x) for x in got.comments]
            if not (token := got.next_page_token):
                return out

    # ------------------------------------------------------------ search

    async def search(
        self,
        query: str,
        *,
        projects: Sequence[str] | None = None,
        limit: int = 20,
        include_archived: bool = False,
        page: str | None = None,
    ) -> skift.Page[skift.SearchHit]:
        out: list[skift.SearchHit] = []
        token = page or ""
        while True:
            req = v1.SearchRequest(
                query=query,
                projects=list(projects or ()),
                page_size=page_size(limit - len(out)),
                include_archived=include_archived,
                page_token=token,
            )
            got = await self._call("Search", req, v1.SearchResponse)
            out += [from_pb(v1.SearchHit, skift.SearchHit, h) for h in got.hits]
            token = got.next_page_token
            # a page holds `limit` hits unless bytes cut it short: read on only then
            if not token or len(out) >= limit:
                return remote_page(out, token)

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
    ) -> skift.UsageInfo:
        req = v1.RecordUsageRequest(
            ref=ref,
            project=project,
            model=model,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cache_read_tokens=cache_read_tokens,
            cache_write_tokens=cache_write_tokens,
            estimate=estimate,
            basis=basis,
            lease=lease,
        )
        # not retried: a second attempt could append a second record
        got = await self._call("RecordUsage", req, v1.RecordUsageResponse)
        return from_pb(v1.UsageRecord, skift.UsageInfo, got.record)

    async def usage(
        self, ref: str, *, subtree: bool = False, project: str | None = None
    ) -> skift.UsageReport:
        req = v1.GetUsageRequest(ref=ref, project=project, subtree=subtree)
        got = await self._call("GetUsage", req, v1.GetUsageResponse)
        return from_pb(v1.UsageReport, skift.UsageReport, got.report)

    async def project_usage(self, project: str) -> skift.UsageReport:
        req = v1.GetProjectUsageRequest(project=project)
        got = await self._call("GetProjectUsage", req, v1.GetProjectUsageResponse)
        return from_pb(v1.UsageReport, skift.UsageReport, got.report)

    async def set_rate(
        self,
        model: str,
        *,
        input: Decimal | int | str,
        output: Decimal | int | str,
        cache_read: Decimal | int | str = 0,
        cache_write: Decimal | int | str = 0,
        currency: str = "USD",
    ) -> skift.RateInfo:
        req = v1.SetRateRequest(
            model=model,
            input=str(input),
            output=str(output),
            cache_read=str(cache_read),
            cache_write=str(cache_write),
            currency=currency,
        )
        got = await self._call("SetRate", req, v1.SetRateResponse)
        return from_pb(v1.Rate, skift.RateInfo, got.rate)

    async def rates(self) -> list[skift.RateInfo]:
        out: list[skift.RateInfo] = []
        token = ""
        while True:
            req = v1.ListRatesRequest(page_token=token)
            got = await self._call("ListRates", req, v1.ListRatesResponse)
            out += [from_pb(v1.Rate, skift.RateInfo, r) for r in got.rates]
            if not (token := got.next_page_token):
                return out

    async def set_org_limits(self, **sizes: int | None) -> skift.OrgLimits:
        req = v1.SetOrgLimitsRequest(
            set={k: v for k, v in sizes.items() if v is not None},
            unset=[k for k, v in sizes.items() if v is None],
        )
        got = await self._call("SetOrgLimits", req, v1.SetOrgLimitsResponse)
        return from_pb(v1.OrgLimits, skift.OrgLimits, got.limits)

    async def org_limits(self) -> skift.OrgLimits:
        req = v1.GetOrgLimitsRequest()
        got = await self._call("GetOrgLimits", req, v1.GetOrgLimitsResponse)
        return from_pb(v1.OrgLimits, skift.OrgLimits, got.limits)

    # ------------------------------------------------------------ webhooks

    async def add_webhook(
        self, project: str, url: str, *, events: Sequence[str] | None = None
    ) -> skift.WebhookInfo:
        req = v1.AddWebhookRequest(project=project, url=url, events=list(events or ()))
        got = await self._call("AddWebhook", req, v1.AddWebhookResponse)
        return from_pb(type(got), skift.WebhookInfo, got)

    async def webhooks(self, *, project: str | None = None) -> list[skift.WebhookInfo]:
        out: list[skift.WebhookInfo] = []
        token = ""
        while True:
            req = v1.ListWebhooksRequest(project=project, page_token=token)
            got = await self._call("ListWebhooks", req, v1.ListWebhooksResponse)
            out += [from_pb(v1.Webhook, skift.WebhookInfo, w) for w in got.webhooks]
            if not (token := got.next_page_token):
                return out

    async def rotate_webhook_secret(self, webhook: str) -> skift.WebhookInfo:
        req = v1.RotateWebhookSecretRequest(webhook=webhook)
        got = await self._call("RotateWebhookSecret", req, v1.RotateWebhookSecretResponse)
        return from_pb(type(got), skift.WebhookInfo, got)

    async def disable_webhook(self, webhook: str) -> skift.WebhookInfo:
        req = v1.DisableWebhookRequest(webhook=webhook)
        got = await self._call("DisableWebhook", req, v1.DisableWebhookResponse)
        return from_pb(v1.Webhook, skift.WebhookInfo, got.webhook)

    async def enable_webhook(self, webhook: str) -> skift.WebhookInfo:
        req = v1.EnableWebhookRequest(webhook=webhook)
        got = await self._call("EnableWebhook", req, v1.EnableWebhookResponse)
        return from_pb(v1.Webhook, skift.WebhookInfo, got.webhook)

    async def webhook_deliveries(
        self,
        webhook: str | None = None,
        *,
        project: str | None = None,
        parked: bool = False,
        limit: int | None = None,
        page: str | None = None,
    ) -> skift.Page[skift.DeliveryInfo]:
        out: list[skift.DeliveryInfo] = []
        token = page or ""
        while True:
            req = v1.ListWebhookDeliveriesRequest(
                webhook=webhook,
                project=project,
                parked=parked,
                page_size=page_size(None if limit is None else limit - len(out)),
                page_token=token,
            )
            got = await self._call("ListWebhookDeliveries", req, v1.ListWebhookDeliveriesResponse)
            out += [from_pb(v1.WebhookDelivery, skift.DeliveryInfo, d) for d in got.deliveries]
            token = got.next_page_token
            # one page, as in process; more only where bytes cut it short
            if not token or limit is None or len(out) >= limit:
                return remote_page(out, token)

    async def redeliver(self, delivery: str) -> skift.DeliveryInfo:
        req = v1.RedeliverWebhookRequest(delivery=delivery)
        got = await self._call("RedeliverWebhook", req, v1.RedeliverWebhookResponse)
        return from_pb(v1.WebhookDelivery, skift.DeliveryInfo, got.delivery)

    async def test_webhook(self, webhook: str) -> skift.DeliveryInfo:
        req = v1.TestWebhookRequest(webhook=webhook)
        got = await self._call("TestWebhook", req, v1.TestWebhookResponse)
        return from_pb(v1.WebhookDelivery, skift.DeliveryInfo, got.delivery)

    # ------------------------------------------------------------ artifacts and blobs

    async def put_blob(
        self, data: bytes, *, media_type: str, digest: str | None = None
    ) -> skift.BlobInfo:
        req = v1.PutBlobRequest(data=bytes(data), media_type=media_type, digest=digest)
        # content-addressed: sending the same bytes twice stores them once
        got = await self._call("PutBlob", req, v1.PutBlobResponse)
        return from_pb(v1.Blob, skift.BlobInfo, got.blob)

    async def get_blob(self, digest: str) -> bytes:
        req = v1.GetBlobRequest(digest=digest)
        return (await self._call("GetBlob", req, v1.GetBlobResponse)).data

    async def attach_artifact(
        self,
        ref: str,
        artifact: skift.Artifact | Mapping[str, Any],
        *,
        lease: str | None = None,
        project: str | None = None,
        request_id: str | None = None,
    ) -> skift.PatchResult:
        req = v1.AttachArtifactRequest(
            ref=ref,
            artifact=to_pb(v1.Artifact, artifact_of(artifact)),
            lease=lease,
            project=project,
            request_id=request_id_of(request_id),
        )
        got = await self._call("AttachArtifact", req, v1.AttachArtifactResponse)
        return from_pb(v1.PatchResult, skift.PatchResult, got.result)

    async def add_principal(
        self,
        name: str,
        kind: skift.PrincipalKind | str = skift.PrincipalKind.AGENT,
        *,
        uid: int | None = None,
    ) -> skift.PrincipalInfo:
        """Register a principal (admin), with a unix identity when ``uid`` is given."""
        req = v1.AddPrincipalRequest(name=name, kind=enum_pb(v1.PrincipalKind, kind), uid=uid)
        got = await self._call("AddPrincipal", req, v1.AddPrincipalResponse)
        return from_pb(v1.Principal, skift.PrincipalInfo, got.principal)

    async def list_principals(self) -> list[skift.PrincipalInfo]:
        out: list[skift.PrincipalInfo] = []
        token = ""
        while True:
            req = v1.ListPrincipalsRequest(page_token=token)
            got = await self._call("ListPrincipals", req, v1.ListPrincipalsResponse)
            out += [from_pb(v1.Principal, skift.PrincipalInfo, p) for p in got.principals]
            if not (token := got.next_page_token):
                return out

    async def attach_identity(self, principal: str, scheme: str, value: str) -> skift.PrincipalInfo:
        """Give a principal another way in (unix uid, oidc subject, tailscale node)."""
        req = v1.AttachIdentityRequest(principal=principal, scheme=scheme, value=value)
        got = await self._call("AttachIdentity", req, v1.AttachIdentityResponse)
        return from_pb(v1.Principal, skift.PrincipalInfo, got.principal)

    async def create_token(self, principal: str) -> skift.TokenInfo:
        """A new bearer token for a principal; its secret is in the result and nowhere else."""
        req = v1.CreateTokenRequest(principal=principal)
        got = await self._call("CreateToken", req, v1.CreateTokenResponse)
        return from_pb(v1.CreateTokenResponse, skift.TokenInfo, got)

    async def revoke_token(self, token_id: str) -> None:
        req = v1.RevokeTokenRequest(token_id=token_id)
        await self._call("RevokeToken", req, v1.RevokeTokenResponse)

    async def mint_signin_code(self) -> skift.SigninCode:
        """A one-time code (ten minutes, one use) that signs you in to the web board; ``url``
        is the link when the server serves the board."""
        req = v1.MintSigninCodeRequest()
        got = await self._call("MintSigninCode", req, v1.MintSigninCodeResponse)
        return from_pb(v1.MintSigninCodeResponse, skift.SigninCode, got)

    async def board_sessions(self, principal: str | None = None) -> list[skift.SessionInfo]:
        """The live board sessions of the caller (or, an admin's call, of ``principal``),
        oldest first; never their secrets."""
        req = v1.ListBoardSessionsRequest(principal=principal or "")
        got = await self._call("ListBoardSessions", req, v1.ListBoardSessionsResponse)
        return [from_pb(v1.BoardSessionInfo, skift.SessionInfo, s) for s in got.sessions]

    async def end_board_sessions(self, principal: str | None = None) -> int:
        """End every board session (and unopened sign-in link) of the caller, or, an admin's
        call, of ``principal``; returns how many sessions ended."""
        req = v1.EndBoardSessionsRequest(principal=principal or "")
        return (await self._call("EndBoardSessions", req, v1.EndBoardSessionsResponse)).ended
