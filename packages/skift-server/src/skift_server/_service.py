"""The skift.v1.Skift service: decode, call the Skift API, encode.

Each handler turns a request message into the arguments of one
:class:`skift.LocalSkift` method, calls it on the caller's handle, and turns
the view it returns into the reply message. No rule lives here: the engine
validates and decides, and every :class:`skift.SkiftError` leaves as its one
gRPC status (``_errors``).

Around every call (``SkiftService._serve``): the request is read with a size
limit and decoded strictly (``_wire``), the caller is identified by the
transport (``_auth``), and the outcome is counted (``_metrics``). While the
server drains, new calls are answered UNAVAILABLE so clients retry elsewhere.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final

import betterproto2
import grpclib.const
import grpclib.server
from grpclib.const import Status
from grpclib.exceptions import GRPCError

import skift

from . import _convert as c
from ._auth import Authenticator
from ._errors import describe, invalid, to_grpc
from ._metrics import Metrics
from ._proto.skift import v1
from ._wire import WireError, decode

_log = logging.getLogger("skift_server")

DEFAULT_MAX_MESSAGE_BYTES: Final = 4 * 1024 * 1024
"""gRPC's customary default: a patch of 5000 operations fits comfortably."""

SERVICE: Final = "skift.v1.Skift"

Handler = Callable[[skift.LocalSkift, Any], Awaitable[betterproto2.Message]]


def _opt(**kw: Any) -> dict[str, Any]:
    """Keyword arguments without the ones the request left unset."""
    return {k: v for k, v in kw.items() if v is not None}


def _limit(value: int | None) -> int | None:
    return int(value) if value is not None else None


# ------------------------------------------------------------------ projects


async def _create_project(sk: skift.LocalSkift, r: v1.CreateProjectRequest) -> v1.Project:
    p = await sk.create_project(
        r.title, vcs_url=r.vcs_url, **_opt(slug=r.slug, priority=r.priority)
    )
    return c.project_pb(p)


async def _get_project(sk: skift.LocalSkift, r: v1.GetProjectRequest) -> v1.Project:
    return c.project_pb(await sk.get_project(r.ref))


async def _list_projects(
    sk: skift.LocalSkift, r: v1.ListProjectsRequest
) -> v1.ListProjectsResponse:
    got = await sk.list_projects(archived=r.archived, limit=_limit(r.limit))
    return v1.ListProjectsResponse(projects=[c.project_pb(p) for p in got])


async def _update_project(sk: skift.LocalSkift, r: v1.UpdateProjectRequest) -> v1.Project:
    p = await sk.update_project(
        r.ref, title=r.title, slug=r.slug, priority=r.priority, vcs_url=r.vcs_url, budget=r.budget
    )
    return c.project_pb(p)


async def _archive_project(sk: skift.LocalSkift, r: v1.ArchiveProjectRequest) -> v1.Project:
    return c.project_pb(await sk.archive_project(r.ref, reason=r.reason or "archived"))


async def _hold_project(sk: skift.LocalSkift, r: v1.ProjectHoldRequest) -> v1.ProjectHoldResponse:
    return v1.ProjectHoldResponse(nodes=await sk.hold_project(r.ref, reason=r.reason))


async def _unhold_project(sk: skift.LocalSkift, r: v1.ProjectHoldRequest) -> v1.ProjectHoldResponse:
    return v1.ProjectHoldResponse(nodes=await sk.unhold_project(r.ref, reason=r.reason))


# ------------------------------------------------------------------ graph


async def _patch(sk: skift.LocalSkift, r: v1.PatchRequest) -> v1.PatchResult:
    ops = [c.op_doc(op, i) for i, op in enumerate(r.ops)]
    res = await sk.patch(
        r.project,
        ops,
        request_id=r.request_id or None,
        lease=r.lease,
        on_behalf_of=r.on_behalf_of,
    )
    return c.patch_result_pb(res)


async def _get(sk: skift.LocalSkift, r: v1.NodeRequest) -> v1.Node:
    return c.node_pb(await sk.get(r.ref, project=r.project))


async def _resolve(sk: skift.LocalSkift, r: v1.NodeRequest) -> v1.Resolved:
    return c.resolved_pb(await sk.resolve(r.ref, project=r.project))


async def _ready(sk: skift.LocalSkift, r: v1.ListNodesRequest) -> v1.ReadyPage:
    page = await sk.ready(limit=_limit(r.limit), page=r.page, **c.filter_kwargs(r.filter))
    return c.page_pb(page)


async def _list_nodes(sk: skift.LocalSkift, r: v1.ListNodesRequest) -> v1.ReadyPage:
    page = await sk.list_nodes(
        limit=_limit(r.limit), page=r.page, attributed=r.attributed, **c.filter_kwargs(r.filter)
    )
    return c.page_pb(page)


async def _explain(sk: skift.LocalSkift, r: v1.NodeRequest) -> v1.Explanation:
    return c.explanation_pb(await sk.explain(r.ref, project=r.project))


async def _drop(sk: skift.LocalSkift, r: v1.DropRequest) -> v1.PatchResult:
    res = await sk.drop(
        r.ref,
        reason=r.reason,
        cascade=_limit(r.cascade),
        project=r.project,
        lease=r.lease,
        request_id=r.request_id or None,
    )
    return c.patch_result_pb(res)


async def _reopen(sk: skift.LocalSkift, r: v1.ReopenRequest) -> v1.PatchResult:
    res = await sk.reopen(
        r.ref, reason=r.reason, project=r.project, lease=r.lease, request_id=r.request_id or None
    )
    return c.patch_result_pb(res)


async def _hold(sk: skift.LocalSkift, r: v1.NodeHoldRequest) -> v1.PatchResult:
    return c.patch_result_pb(await sk.hold(r.ref, reason=r.reason, project=r.project))


async def _unhold(sk: skift.LocalSkift, r: v1.NodeHoldRequest) -> v1.PatchResult:
    return c.patch_result_pb(await sk.unhold(r.ref, reason=r.reason, project=r.project))


async def _focus(sk: skift.LocalSkift, r: v1.FocusRequest) -> v1.FocusResult:
    return c.focus_pb(await sk.focus(list(r.keep), reason=r.reason, project=r.project))


async def _clear_focus(sk: skift.LocalSkift, r: v1.ClearFocusRequest) -> v1.FocusResult:
    return c.focus_pb(await sk.clear_focus(reason=r.reason, project=r.project))


# ------------------------------------------------------------------ work protocol


async def _claim(sk: skift.LocalSkift, r: v1.ClaimRequest) -> v1.Claim:
    got = await sk.claim(
        r.ref,
        project=r.project,
        ttl=r.ttl,
        harness=r.harness,
        agent_ref=r.agent_ref,
        session_ref=r.session_ref,
        on_behalf_of=r.on_behalf_of,
    )
    return c.claim_pb(got)


async def _claim_next(sk: skift.LocalSkift, r: v1.ClaimNextRequest) -> v1.Claim:
    got = await sk.claim_next(
        ttl=r.ttl,
        wait=r.wait,
        harness=r.harness,
        agent_ref=r.agent_ref,
        session_ref=r.session_ref,
        on_behalf_of=r.on_behalf_of,
        **c.filter_kwargs(r.filter),
    )
    return c.claim_pb(got)


async def _heartbeat(sk: skift.LocalSkift, r: v1.HeartbeatRequest) -> v1.Lease:
    return c.lease_pb(await sk.heartbeat(r.ref, lease=r.lease, ttl=r.ttl, project=r.project))


async def _complete(sk: skift.LocalSkift, r: v1.CompleteRequest) -> v1.PatchResult:
    res = await sk.complete(
        r.ref,
        lease=r.lease,
        result=r.result,
        artifacts=[c.artifact_doc(a) for a in r.artifacts],
        project=r.project,
        request_id=r.request_id or None,
    )
    return c.patch_result_pb(res)


async def _release(sk: skift.LocalSkift, r: v1.ReleaseRequest) -> v1.Node:
    reason = r.reason or "crash"
    return c.node_pb(await sk.release(r.ref, lease=r.lease, reason=reason, project=r.project))


async def _gate(sk: skift.LocalSkift, r: v1.GateRequest) -> v1.PatchResult:
    res = await sk.gate(
        r.ref,
        lease=r.lease,
        title=r.title,
        body=r.body,
        project=r.project,
        request_id=r.request_id or None,
    )
    return c.patch_result_pb(res)


async def _leases(sk: skift.LocalSkift, r: v1.NodeRequest) -> v1.LeasesResponse:
    got = await sk.leases(r.ref, project=r.project)
    return v1.LeasesResponse(leases=[c.lease_pb(x) for x in got])


async def _sweep_expired(
    sk: skift.LocalSkift, r: v1.SweepExpiredRequest
) -> v1.SweepExpiredResponse:
    n = await sk.sweep_expired(**_opt(limit=_limit(r.limit)))
    return v1.SweepExpiredResponse(expired=n)


# ------------------------------------------------------------------ comments


async def _add_comment(sk: skift.LocalSkift, r: v1.AddCommentRequest) -> v1.Comment:
    got = await sk.add_comment(
        r.ref,
        r.body,
        reply_to=r.reply_to,
        project=r.project,
        request_id=r.request_id or None,
    )
    return c.comment_pb(got)


async def _edit_comment(sk: skift.LocalSkift, r: v1.EditCommentRequest) -> v1.Comment:
    return c.comment_pb(await sk.edit_comment(r.id, r.body))


async def _resolve_comment(sk: skift.LocalSkift, r: v1.ResolveCommentRequest) -> v1.Comment:
    return c.comment_pb(await sk.resolve_comment(r.id))


async def _list_comments(sk: skift.LocalSkift, r: v1.NodeRequest) -> v1.ListCommentsResponse:
    got = await sk.comments(r.ref, project=r.project)
    return v1.ListCommentsResponse(comments=[c.comment_pb(x) for x in got])


# ------------------------------------------------------------------ search


async def _search(sk: skift.LocalSkift, r: v1.SearchRequest) -> v1.SearchResponse:
    got = await sk.search(
        r.query,
        projects=list(r.projects),
        include_archived=r.include_archived,
        **_opt(limit=_limit(r.limit)),
    )
    return v1.SearchResponse(hits=[c.search_hit_pb(h) for h in got])


# ------------------------------------------------------------------ events


async def _events(sk: skift.LocalSkift, r: v1.EventsRequest) -> v1.EventsResponse:
    got = await sk.events(ref=r.ref, project=r.project, **_opt(limit=_limit(r.limit)))
    return v1.EventsResponse(events=[c.event_pb(e) for e in got])


async def _watch_events(sk: skift.LocalSkift, r: v1.WatchEventsRequest) -> v1.WatchEventsResponse:
    page = await sk.watch_events(
        after=r.after,
        projects=list(r.projects),
        ops=list(r.ops),
        wait=r.wait,
        **_opt(limit=_limit(r.limit)),
    )
    return v1.WatchEventsResponse(events=[c.event_pb(e) for e in page.events], cursor=page.cursor)


# ------------------------------------------------------------------ principals and tokens


async def _add_principal(sk: skift.LocalSkift, r: v1.AddPrincipalRequest) -> v1.Principal:
    got = await sk.add_principal(r.name, r.kind or skift.PrincipalKind.AGENT, uid=_limit(r.uid))
    return c.principal_pb(got)


async def _list_principals(
    sk: skift.LocalSkift, r: v1.ListPrincipalsRequest
) -> v1.ListPrincipalsResponse:
    got = await sk.list_principals()
    return v1.ListPrincipalsResponse(principals=[c.principal_pb(p) for p in got])


async def _attach_identity(sk: skift.LocalSkift, r: v1.AttachIdentityRequest) -> v1.Principal:
    return c.principal_pb(await sk.attach_identity(r.principal, r.scheme, r.value))


async def _create_token(sk: skift.LocalSkift, r: v1.CreateTokenRequest) -> v1.CreateTokenResponse:
    return c.token_pb(await sk.create_token(r.principal))


async def _revoke_token(sk: skift.LocalSkift, r: v1.RevokeTokenRequest) -> v1.RevokeTokenResponse:
    await sk.revoke_token(r.token_id)
    return v1.RevokeTokenResponse()


# ------------------------------------------------------------------ usage and cost


async def _record_usage(sk: skift.LocalSkift, r: v1.RecordUsageRequest) -> v1.UsageRecord:
    got = await sk.record_usage(
        r.ref,
        project=r.project,
        model=r.model,
        input_tokens=r.input_tokens,
        output_tokens=r.output_tokens,
        cache_read_tokens=r.cache_read_tokens,
        cache_write_tokens=r.cache_write_tokens,
        estimate=r.estimate,
        basis=r.basis,
        lease=r.lease,
    )
    return c.usage_pb(got)


async def _get_usage(sk: skift.LocalSkift, r: v1.UsageRequest) -> v1.UsageReport:
    return c.report_pb(await sk.usage(r.ref, subtree=r.subtree, project=r.project))


async def _get_project_usage(sk: skift.LocalSkift, r: v1.ProjectUsageRequest) -> v1.UsageReport:
    return c.report_pb(await sk.project_usage(r.project))


async def _set_rate(sk: skift.LocalSkift, r: v1.SetRateRequest) -> v1.Rate:
    got = await sk.set_rate(
        r.model,
        input=r.input,
        output=r.output,
        cache_read=r.cache_read or "0",
        cache_write=r.cache_write or "0",
        currency=r.currency or "USD",
    )
    return c.rate_pb(got)


async def _list_rates(sk: skift.LocalSkift, r: v1.ListRatesRequest) -> v1.ListRatesResponse:
    return v1.ListRatesResponse(rates=[c.rate_pb(x) for x in await sk.rates()])


async def _set_org_limits(sk: skift.LocalSkift, r: v1.SetOrgLimitsRequest) -> v1.OrgLimits:
    sizes: dict[str, int | None] = {**dict(r.set), **dict.fromkeys(r.unset)}
    return c.org_limits_pb(await sk.set_org_limits(**sizes))


async def _get_org_limits(sk: skift.LocalSkift, r: v1.GetOrgLimitsRequest) -> v1.OrgLimits:
    return c.org_limits_pb(await sk.org_limits())


# ------------------------------------------------------------------ artifacts and blobs


async def _put_blob(sk: skift.LocalSkift, r: v1.PutBlobRequest) -> v1.Blob:
    return c.blob_pb(await sk.put_blob(r.data, media_type=r.media_type, digest=r.digest))


async def _get_blob(sk: skift.LocalSkift, r: v1.GetBlobRequest) -> v1.GetBlobResponse:
    return v1.GetBlobResponse(data=await sk.get_blob(r.digest))


async def _attach_artifact(sk: skift.LocalSkift, r: v1.AttachArtifactRequest) -> v1.PatchResult:
    res = await sk.attach_artifact(
        r.ref,
        c.artifact_doc(r.artifact or v1.Artifact()),
        lease=r.lease,
        project=r.project,
        request_id=r.request_id or None,
    )
    return c.patch_result_pb(res)


async def _list_artifacts(sk: skift.LocalSkift, r: v1.NodeRequest) -> v1.ListArtifactsResponse:
    got = await sk.artifacts(r.ref, project=r.project)
    return v1.ListArtifactsResponse(artifacts=[c.artifact_info_pb(a) for a in got])


HANDLERS: Final[dict[str, Handler]] = {
    "CreateProject": _create_project,
    "GetProject": _get_project,
    "ListProjects": _list_projects,
    "UpdateProject": _update_project,
    "ArchiveProject": _archive_project,
    "HoldProject": _hold_project,
    "UnholdProject": _unhold_project,
    "Patch": _patch,
    "Get": _get,
    "Resolve": _resolve,
    "Ready": _ready,
    "ListNodes": _list_nodes,
    "Explain": _explain,
    "Drop": _drop,
    "Reopen": _reopen,
    "Hold": _hold,
    "Unhold": _unhold,
    "Focus": _focus,
    "ClearFocus": _clear_focus,
    "Claim": _claim,
    "ClaimNext": _claim_next,
    "Heartbeat": _heartbeat,
    "Complete": _complete,
    "Release": _release,
    "Gate": _gate,
    "Leases": _leases,
    "SweepExpired": _sweep_expired,
    "Events": _events,
    "WatchEvents": _watch_events,
    "AddComment": _add_comment,
    "EditComment": _edit_comment,
    "ResolveComment": _resolve_comment,
    "ListComments": _list_comments,
    "Search": _search,
    "AddPrincipal": _add_principal,
    "ListPrincipals": _list_principals,
    "AttachIdentity": _attach_identity,
    "CreateToken": _create_token,
    "RevokeToken": _revoke_token,
    "RecordUsage": _record_usage,
    "GetUsage": _get_usage,
    "GetProjectUsage": _get_project_usage,
    "SetRate": _set_rate,
    "ListRates": _list_rates,
    "SetOrgLimits": _set_org_limits,
    "GetOrgLimits": _get_org_limits,
    "PutBlob": _put_blob,
    "GetBlob": _get_blob,
    "AttachArtifact": _attach_artifact,
    "ListArtifacts": _list_artifacts,
}
"""Every RPC of skift.v1.Skift, by its proto name."""

_ENDS_LEASE: Final = frozenset({"Complete", "Release", "Gate"})

ADMIN_ACTIONS: Final[dict[str, str]] = {
    "AddPrincipal": "admin",
    "ListPrincipals": "admin",
    "AttachIdentity": "admin",
    "CreateToken": "admin",
    "RevokeToken": "admin",
    "SweepExpired": "admin",
    "SetOrgLimits": "set_org_limits",
    "SetRate": "set_rate",
}
"""Administrative RPCs and the policy action each needs: checked for the caller as soon as
it is authenticated, before the call does any work (the seed's coarse method checks)."""


async def recv_request(
    stream: grpclib.server.Stream[Any, Any], cls: type[Any], max_bytes: int
) -> Any:
    """Read one request message with a size limit, decoding it strictly.

    grpclib's own ``recv_message`` reads the whole message whatever its
    declared length; here the 5-byte gRPC frame header is read first, so an
    oversized message is refused before its body is accepted (HTTP/2 flow
    control then keeps the sender from pushing more than a window).
    """
    raw = stream._stream  # pyright: ignore[reportPrivateUsage]
    header = await raw.recv_data(5)
    if len(header) < 5:
        raise invalid("the request carries no message", next="Send exactly one request message.")
    compressed, length = struct.unpack(">BI", header)
    if compressed:
        raise invalid(
            "compressed messages are not supported", next="Send the request uncompressed."
        )
    if length > max_bytes:
        raise invalid(
            f"the request message is {length} bytes; this server takes at most {max_bytes}",
            next="Split the work into smaller requests (a patch into several patches).",
            limit="max_message_bytes",
            value=max_bytes,
        )
    body = await raw.recv_data(length)
    if len(body) != length:
        raise invalid(
            f"the request message ended after {len(body)} of {length} bytes",
            next="Send the whole message.",
        )
    try:
        return decode(cls, body)
    except WireError as exc:
        raise invalid(
            f"the request is not a valid {cls.__name__} message: {exc}",
            next="Encode the request with the skift.v1 proto definitions.",
        ) from None


class SkiftService:
    """The grpclib servable for skift.v1.Skift over one base LocalSkift."""

    def __init__(
        self,
        auth: Authenticator,
        *,
        metrics: Metrics | None = None,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        self.auth = auth
        self.metrics = metrics
        self.max_message_bytes = max_message_bytes
        self.draining = False
        self._in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()

    @property
    def in_flight(self) -> int:
        return self._in_flight

    async def drained(self) -> None:
        """Return once no call is being handled."""
        await self._idle.wait()

    def __mapping__(self) -> dict[str, grpclib.const.Handler]:
        generated = v1.SkiftBase().__mapping__()
        out: dict[str, grpclib.const.Handler] = {}
        for route, h in generated.items():
            name = route.rsplit("/", 1)[1]
            fn = HANDLERS.get(name)
            if fn is None:  # an RPC the proto declares and this build does not serve
                continue
            handler: Any = h
            out[route] = grpclib.const.Handler(
                self._bind(name, fn, handler.request_type),
                handler.cardinality,
                handler.request_type,
                handler.reply_type,
            )
        return out

    def _bind(
        self, name: str, fn: Handler, request_type: type[Any]
    ) -> Callable[[grpclib.server.Stream[Any, Any]], Awaitable[None]]:
        async def serve(stream: grpclib.server.Stream[Any, Any]) -> None:
            await self._serve(name, fn, request_type, stream)

        return serve

    async def _serve(
        self,
        name: str,
        fn: Handler,
        request_type: type[Any],
        stream: grpclib.server.Stream[Any, Any],
    ) -> None:
        started = time.monotonic()
        code = "OK"
        self._in_flight += 1
        self._idle.clear()
        if self.metrics:
            self.metrics.in_flight.inc()
        try:
            if self.draining:
                raise to_grpc(
                    skift.Unavailable(
                        "this server is shutting down",
                        next="Retry: another server, or this one once it is back, will answer.",
                    )
                )
            request = await recv_request(stream, request_type, self.max_message_bytes)
            sk = await self.auth.caller(stream)
            action = ADMIN_ACTIONS.get(name)
            if action is not None:
                await sk.check_action(action)
            try:
                reply = await fn(sk, request)
            except skift.TransientError as exc:
                raise skift.Unavailable(
                    f"the store stayed busy: {exc}", next="Retry with the same request id."
                ) from exc
            await stream.send_message(reply)
            self._count_leases(name, request)
        except skift.SkiftError as exc:
            err = to_grpc(exc)
            code = err.status.name
            _log.debug("%s refused: %s", name, describe(exc))
            raise err from None
        except GRPCError as exc:
            code = exc.status.name
            raise
        except asyncio.CancelledError:
            code = Status.CANCELLED.name
            raise
        except Exception:
            code = Status.INTERNAL.name
            _log.exception("%s failed", name)
            raise GRPCError(
                Status.INTERNAL, "internal error in the skift server; see its log"
            ) from None
        finally:
            self._in_flight -= 1
            if self._in_flight == 0:
                self._idle.set()
            if self.metrics:
                self.metrics.in_flight.dec()
                self.metrics.observe(name, code, time.monotonic() - started)

    def _count_leases(self, name: str, request: Any) -> None:
        if self.metrics is None:
            return
        if name in ("Claim", "ClaimNext"):
            self.metrics.lease_taken()
        elif name in _ENDS_LEASE and getattr(request, "lease", None):
            self.metrics.lease_ended()
