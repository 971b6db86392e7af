"""The handlers of skift.v1.SkiftService: decode a request, call the skift API, encode.

Each handler turns a request message into the arguments of one
:class:`skift.LocalSkift` method, calls it on the caller's handle, and turns
the view it returns into the response message. No rule lives here: the
engine validates and decides. Lists are paged here (``_paging``): by count,
and by bytes so that no response outgrows a default client's 4 MiB.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import betterproto2

import skift

from . import _paging as paging
from ._convert import enum_word
from ._convert_graph import filter_kwargs
from ._convert_ops import artifact_doc, op_doc
from ._convert_types import to_pb
from ._proto.skift import v1

Handler = Callable[[skift.LocalSkift, Any], Awaitable[betterproto2.Message]]


def _opt(**kw: Any) -> dict[str, Any]:
    """Keyword arguments without the ones the request left unset."""
    return {k: v for k, v in kw.items() if v is not None}


def _int(value: int | None) -> int | None:
    return int(value) if value is not None else None


def _size(sk: skift.LocalSkift, page_size: int) -> int:
    """The page size a request asks for (0: the server's default), checked by the engine."""
    return sk.engine.page_size(page_size or None)


# ------------------------------------------------------------------ projects


async def create_project(
    sk: skift.LocalSkift, r: v1.CreateProjectRequest
) -> v1.CreateProjectResponse:
    priority = enum_word(r.priority, v1.Priority, "priority")
    p = await sk.create_project(r.title, vcs_url=r.vcs_url, **_opt(slug=r.slug, priority=priority))
    return v1.CreateProjectResponse(project=to_pb(v1.Project, p))


async def get_project(sk: skift.LocalSkift, r: v1.GetProjectRequest) -> v1.GetProjectResponse:
    return v1.GetProjectResponse(project=to_pb(v1.Project, await sk.get_project(r.ref)))


async def list_projects(sk: skift.LocalSkift, r: v1.ListProjectsRequest) -> v1.ListProjectsResponse:
    token = paging.decode("ListProjects", r)
    got = await sk.list_projects(
        archived=r.show_archived, limit=_size(sk, r.page_size), page=token.core if token else None
    )
    items = paging.encoded(to_pb(v1.Project, p) for p in got)
    k = paging.fit(items)
    return v1.ListProjectsResponse(projects=items[:k], next_page_token=paging.next_token(got, k, r))


async def update_project(
    sk: skift.LocalSkift, r: v1.UpdateProjectRequest
) -> v1.UpdateProjectResponse:
    p = await sk.update_project(
        r.ref,
        title=r.title,
        slug=r.slug,
        priority=enum_word(r.priority, v1.Priority, "priority"),
        vcs_url=r.vcs_url,
        budget=r.budget,
    )
    return v1.UpdateProjectResponse(project=to_pb(v1.Project, p))


async def restrict_project(
    sk: skift.LocalSkift, r: v1.RestrictProjectRequest
) -> v1.RestrictProjectResponse:
    p = await sk.restrict_project(r.ref, readers=list(r.readers), reason=r.reason)
    return v1.RestrictProjectResponse(project=to_pb(v1.Project, p))


async def unrestrict_project(
    sk: skift.LocalSkift, r: v1.UnrestrictProjectRequest
) -> v1.UnrestrictProjectResponse:
    p = await sk.unrestrict_project(r.ref, reason=r.reason)
    return v1.UnrestrictProjectResponse(project=to_pb(v1.Project, p))


async def archive_project(
    sk: skift.LocalSkift, r: v1.ArchiveProjectRequest
) -> v1.ArchiveProjectResponse:
    p = await sk.archive_project(r.ref, reason=r.reason or "archived")
    return v1.ArchiveProjectResponse(project=to_pb(v1.Project, p))


async def hold_project(sk: skift.LocalSkift, r: v1.HoldProjectRequest) -> v1.HoldProjectResponse:
    return v1.HoldProjectResponse(
        parked=await sk.hold_project(r.ref, reason=r.reason, request_id=r.request_id or None)
    )


async def unhold_project(
    sk: skift.LocalSkift, r: v1.UnholdProjectRequest
) -> v1.UnholdProjectResponse:
    return v1.UnholdProjectResponse(
        released=await sk.unhold_project(r.ref, reason=r.reason, request_id=r.request_id or None)
    )


# ------------------------------------------------------------------ graph


async def patch(sk: skift.LocalSkift, r: v1.PatchRequest) -> v1.PatchResponse:
    sk.engine.check_ops_count(len(r.ops))  # before a single operation is converted
    ops = [op_doc(op, i) for i, op in enumerate(r.ops)]
    res = await sk.patch(
        r.project,
        ops,
        request_id=r.request_id or None,
        lease=r.lease,
        on_behalf_of=r.on_behalf_of,
    )
    return v1.PatchResponse(result=to_pb(v1.PatchResult, res))


async def get_node(sk: skift.LocalSkift, r: v1.GetNodeRequest) -> v1.GetNodeResponse:
    return v1.GetNodeResponse(node=to_pb(v1.Node, await sk.get(r.ref, project=r.project)))


async def resolve_node(sk: skift.LocalSkift, r: v1.ResolveNodeRequest) -> v1.ResolveNodeResponse:
    return to_pb(v1.ResolveNodeResponse, await sk.resolve(r.ref, project=r.project))


async def _node_page(
    rpc: str,
    r: v1.ReadyRequest | v1.ListNodesRequest,
    read: Callable[[int | None, str | None], Awaitable[skift.ReadyPage]],
) -> tuple[list[v1.Node], skift.ReadyPage, str]:
    """One byte-budgeted page of Ready or ListNodes over the engine's own pages.

    ListNodes pages by keyset: a page cut by bytes goes on after the last node sent.
    Ready's token keeps the engine's page token and how many of that page's nodes
    were sent, so a page cut by bytes goes on inside the same engine page.
    """
    token = paging.decode(rpc, r)
    size = r.page_size or None
    core = token.core if token else None
    sent = token.offset if token else 0
    page = await read(size, core)
    nodes = paging.encoded(to_pb(v1.Node, n) for n in page.nodes[sent:])
    k = paging.fit(nodes)
    if page.ends:  # keyset (ListNodes): on from the last node sent, if the list goes on
        more = k < len(nodes) or page.next_page is not None
        nxt = paging.encode(paging.Token(rpc, core=page.ends[k - 1]), r) if more and k else ""
    elif k < len(nodes):
        nxt = paging.encode(paging.Token(rpc, core=core, offset=sent + k), r)
    elif page.next_page:
        nxt = paging.encode(paging.Token(rpc, core=page.next_page), r)
    else:
        nxt = ""
    return nodes[:k], page, nxt


async def ready(sk: skift.LocalSkift, r: v1.ReadyRequest) -> v1.ReadyResponse:
    flt = filter_kwargs(r.filter)
    nodes, page, nxt = await _node_page(
        "Ready", r, lambda size, core: sk.ready(limit=size, page=core, **flt)
    )
    return v1.ReadyResponse(
        nodes=nodes,
        held_count=page.held_count,
        held_count_exact=page.held_count_exact,
        next_page_token=nxt,
    )


async def list_nodes(sk: skift.LocalSkift, r: v1.ListNodesRequest) -> v1.ListNodesResponse:
    flt = filter_kwargs(r.filter)
    nodes, page, nxt = await _node_page(
        "ListNodes",
        r,
        lambda size, core: sk.list_nodes(limit=size, page=core, attributed=r.attributed, **flt),
    )
    return v1.ListNodesResponse(
        nodes=nodes,
        held_count=page.held_count,
        held_count_exact=page.held_count_exact,
        next_page_token=nxt,
    )


async def list_edges(sk: skift.LocalSkift, r: v1.ListEdgesRequest) -> v1.ListEdgesResponse:
    token = paging.decode("ListEdges", r)
    got = [to_pb(v1.EdgeInfo, x) for x in await sk.edges(list(r.nodes), project=r.project)]
    items, nxt = paging.slice_page("ListEdges", got, token, _size(sk, r.page_size), r)
    return v1.ListEdgesResponse(edges=items, next_page_token=nxt)


async def explain(sk: skift.LocalSkift, r: v1.ExplainRequest) -> v1.ExplainResponse:
    return to_pb(v1.ExplainResponse, await sk.explain(r.ref, project=r.project))


async def drop_node(sk: skift.LocalSkift, r: v1.DropNodeRequest) -> v1.DropNodeResponse:
    res = await sk.drop(
        r.ref,
        reason=r.reason,
        cascade=_int(r.cascade),
        project=r.project,
        lease=r.lease,
        request_id=r.request_id or None,
    )
    return v1.DropNodeResponse(result=to_pb(v1.PatchResult, res))


async def reopen_node(sk: skift.LocalSkift, r: v1.ReopenNodeRequest) -> v1.ReopenNodeResponse:
    res = await sk.reopen(
        r.ref, reason=r.reason, project=r.project, lease=r.lease, request_id=r.request_id or None
    )
    return v1.ReopenNodeResponse(result=to_pb(v1.PatchResult, res))


async def hold_node(sk: skift.LocalSkift, r: v1.HoldNodeRequest) -> v1.HoldNodeResponse:
    res = await sk.hold(r.ref, reason=r.reason, project=r.project, request_id=r.request_id or None)
    return v1.HoldNodeResponse(result=to_pb(v1.PatchResult, res))


async def unhold_node(sk: skift.LocalSkift, r: v1.UnholdNodeRequest) -> v1.UnholdNodeResponse:
    res = await sk.unhold(
        r.ref, reason=r.reason, project=r.project, request_id=r.request_id or None
    )
    return v1.UnholdNodeResponse(result=to_pb(v1.PatchResult, res))


async def focus(sk: skift.LocalSkift, r: v1.FocusRequest) -> v1.FocusResponse:
    got = await sk.focus(
        list(r.keep), reason=r.reason, project=r.project, request_id=r.request_id or None
    )
    return v1.FocusResponse(result=to_pb(v1.FocusResult, got))


async def clear_focus(sk: skift.LocalSkift, r: v1.ClearFocusRequest) -> v1.ClearFocusResponse:
    got = await sk.clear_focus(reason=r.reason, project=r.project, request_id=r.request_id or None)
    return v1.ClearFocusResponse(result=to_pb(v1.FocusResult, got))


# ------------------------------------------------------------------ work protocol


def _bounded(claim: skift.Claim) -> v1.Claim:
    """The claim's message, its inputs cut to what fits under the 4 MiB budget (the rest
    is read with ListInputs and ListArtifacts), so the lease taken is always one whose
    answer can be sent."""
    m = to_pb(v1.Claim, claim)
    inputs, m.inputs = list(m.inputs), []
    budget = paging.RESPONSE_BUDGET - paging.size_of(m)
    kept, rest = paging.cut_inputs(inputs, budget)
    m.inputs = kept
    if rest is not None:
        m.next_inputs_page_token = paging.encode(paging.Token("ListInputs", offset=rest))
    return m


async def claim(sk: skift.LocalSkift, r: v1.ClaimRequest) -> v1.ClaimResponse:
    got = await sk.claim(
        r.ref,
        project=r.project,
        ttl=r.ttl,
        harness=r.harness,
        agent_ref=r.agent_ref,
        session_ref=r.session_ref,
        on_behalf_of=r.on_behalf_of,
    )
    return v1.ClaimResponse(claim=_bounded(got))


async def claim_next(sk: skift.LocalSkift, r: v1.ClaimNextRequest) -> v1.ClaimNextResponse:
    got = await sk.claim_next(
        ttl=r.ttl,
        wait=r.wait,
        harness=r.harness,
        agent_ref=r.agent_ref,
        session_ref=r.session_ref,
        on_behalf_of=r.on_behalf_of,
        **filter_kwargs(r.filter),
    )
    return v1.ClaimNextResponse(claim=_bounded(got))


async def list_inputs(sk: skift.LocalSkift, r: v1.ListInputsRequest) -> v1.ListInputsResponse:
    token = paging.decode("ListInputs", r)
    size = _size(sk, r.page_size)
    start = token.offset if token else 0
    got = [to_pb(v1.Input, i) for i in await sk.inputs(r.ref, project=r.project)]
    window = got[: start + size]
    kept, rest = paging.cut_inputs(window, start=start)
    if rest is None and len(got) > len(window):
        rest = len(window)
    nxt = paging.encode(paging.Token("ListInputs", offset=rest), r) if rest is not None else ""
    return v1.ListInputsResponse(inputs=kept, next_page_token=nxt)


async def heartbeat(sk: skift.LocalSkift, r: v1.HeartbeatRequest) -> v1.HeartbeatResponse:
    got = await sk.heartbeat(r.ref, lease=r.lease, ttl=r.ttl, project=r.project)
    return v1.HeartbeatResponse(lease=to_pb(v1.Lease, got))


async def complete(sk: skift.LocalSkift, r: v1.CompleteRequest) -> v1.CompleteResponse:
    res = await sk.complete(
        r.ref,
        lease=r.lease,
        result=r.result,
        artifacts=[artifact_doc(a) for a in r.artifacts],
        project=r.project,
        request_id=r.request_id or None,
    )
    return v1.CompleteResponse(result=to_pb(v1.PatchResult, res))


async def release(sk: skift.LocalSkift, r: v1.ReleaseRequest) -> v1.ReleaseResponse:
    if r.preempt:
        got = await sk.release(r.ref, preempt=True, reason=r.preempt_reason, project=r.project)
        return v1.ReleaseResponse(node=to_pb(v1.Node, got))
    reason = enum_word(r.reason, v1.ReleaseReason, "reason") or "crash"
    got = await sk.release(r.ref, lease=r.lease or None, reason=reason, project=r.project)
    return v1.ReleaseResponse(node=to_pb(v1.Node, got))


async def gate(sk: skift.LocalSkift, r: v1.GateRequest) -> v1.GateResponse:
    res = await sk.gate(
        r.ref,
        lease=r.lease,
        title=r.title,
        body=r.body,
        project=r.project,
        request_id=r.request_id or None,
    )
    return v1.GateResponse(result=to_pb(v1.PatchResult, res))


async def list_leases(sk: skift.LocalSkift, r: v1.ListLeasesRequest) -> v1.ListLeasesResponse:
    token = paging.decode("ListLeases", r)
    got = [to_pb(v1.Lease, x) for x in await sk.leases(r.ref, project=r.project)]
    items, nxt = paging.slice_page("ListLeases", got, token, _size(sk, r.page_size), r)
    return v1.ListLeasesResponse(leases=items, next_page_token=nxt)


async def list_live_leases(
    sk: skift.LocalSkift, r: v1.ListLiveLeasesRequest
) -> v1.ListLiveLeasesResponse:
    token = paging.decode("ListLiveLeases", r)
    got = [to_pb(v1.Lease, x) for x in await sk.leases(projects=tuple(r.projects), mine=r.mine)]
    items, nxt = paging.slice_page("ListLiveLeases", got, token, _size(sk, r.page_size), r)
    return v1.ListLiveLeasesResponse(leases=items, next_page_token=nxt)


async def sweep_expired(sk: skift.LocalSkift, r: v1.SweepExpiredRequest) -> v1.SweepExpiredResponse:
    n = await sk.sweep_expired(**_opt(limit=_int(r.limit)))
    return v1.SweepExpiredResponse(expired=n)


# ------------------------------------------------------------------ events


async def list_events(sk: skift.LocalSkift, r: v1.ListEventsRequest) -> v1.ListEventsResponse:
    """Pages walk back from the newest event; each page is oldest first. The token keeps
    the oldest event sent (keyset): the next page reads only the events older than it, so
    events written meanwhile neither repeat nor shift the walk."""
    token = paging.decode("ListEvents", r)
    size = _size(sk, r.page_size)
    before = token.core if token else None
    got = await sk.events(ref=r.ref, project=r.project, limit=size + 1, before=before)
    window = [to_pb(v1.Event, e) for e in got[-size:]]
    k = paging.fit_from_end(window)
    sent = window[len(window) - k :]
    more = k < len(window) or len(got) > size
    nxt = paging.encode(paging.Token("ListEvents", core=sent[0].id), r) if more and sent else ""
    return v1.ListEventsResponse(events=sent, next_page_token=nxt)


async def watch_events(sk: skift.LocalSkift, r: v1.WatchEventsRequest) -> v1.WatchEventsResponse:
    page = await sk.watch_events(
        after=r.page_token or None,
        projects=list(r.projects),
        ops=list(r.ops),
        wait=r.wait,
        **_opt(limit=r.page_size or None),
    )
    events = [to_pb(v1.Event, e) for e in page.events]
    k = paging.fit(events)
    cursor = page.cursor if k == len(events) else events[k - 1].cursor
    return v1.WatchEventsResponse(events=events[:k], next_page_token=cursor)


# ------------------------------------------------------------------ principals and tokens


async def add_principal(sk: skift.LocalSkift, r: v1.AddPrincipalRequest) -> v1.AddPrincipalResponse:
    kind = enum_word(r.kind, v1.PrincipalKind, "kind") or skift.PrincipalKind.AGENT
    got = await sk.add_principal(r.name, kind, uid=_int(r.uid))
    return v1.AddPrincipalResponse(principal=to_pb(v1.Principal, got))


async def list_principals(
    sk: skift.LocalSkift, r: v1.ListPrincipalsRequest
) -> v1.ListPrincipalsResponse:
    token = paging.decode("ListPrincipals", r)
    got = [to_pb(v1.Principal, p) for p in await sk.list_principals()]
    items, nxt = paging.slice_page("ListPrincipals", got, token, _size(sk, r.page_size), r)
    return v1.ListPrincipalsResponse(principals=items, next_page_token=nxt)


async def attach_identity(
    sk: skift.LocalSkift, r: v1.AttachIdentityRequest
) -> v1.AttachIdentityResponse:
    got = await sk.attach_identity(r.principal, r.scheme, r.value)
    return v1.AttachIdentityResponse(principal=to_pb(v1.Principal, got))


async def create_token(sk: skift.LocalSkift, r: v1.CreateTokenRequest) -> v1.CreateTokenResponse:
    return to_pb(v1.CreateTokenResponse, await sk.create_token(r.principal))


async def revoke_token(sk: skift.LocalSkift, r: v1.RevokeTokenRequest) -> v1.RevokeTokenResponse:
    await sk.revoke_token(r.token_id)
    return v1.RevokeTokenResponse()


# ------------------------------------------------------------------ comments and search


async def add_comment(sk: skift.LocalSkift, r: v1.AddCommentRequest) -> v1.AddCommentResponse:
    got = await sk.add_comment(
        r.ref,
        r.body,
        reply_to=r.reply_to,
        project=r.project,
        request_id=r.request_id or None,
    )
    return v1.AddCommentResponse(comment=to_pb(v1.Comment, got))


async def edit_comment(sk: skift.LocalSkift, r: v1.EditCommentRequest) -> v1.EditCommentResponse:
    return v1.EditCommentResponse(comment=to_pb(v1.Comment, await sk.edit_comment(r.id, r.body)))


async def resolve_comment(
    sk: skift.LocalSkift, r: v1.ResolveCommentRequest
) -> v1.ResolveCommentResponse:
    return v1.ResolveCommentResponse(comment=to_pb(v1.Comment, await sk.resolve_comment(r.id)))


async def list_comments(sk: skift.LocalSkift, r: v1.ListCommentsRequest) -> v1.ListCommentsResponse:
    token = paging.decode("ListComments", r)
    got = [to_pb(v1.Comment, x) for x in await sk.comments(r.ref, project=r.project)]
    items, nxt = paging.slice_page("ListComments", got, token, _size(sk, r.page_size), r)
    return v1.ListCommentsResponse(comments=items, next_page_token=nxt)


async def search(sk: skift.LocalSkift, r: v1.SearchRequest) -> v1.SearchResponse:
    token = paging.decode("Search", r)
    got = await sk.search(
        r.query,
        projects=list(r.projects),
        include_archived=r.include_archived,
        limit=_size(sk, r.page_size or 20),
        page=token.core if token else None,
    )
    hits = paging.encoded(to_pb(v1.SearchHit, h) for h in got)
    k = paging.fit(hits)
    return v1.SearchResponse(hits=hits[:k], next_page_token=paging.next_token(got, k, r))


# ------------------------------------------------------------------ usage and cost


async def record_usage(sk: skift.LocalSkift, r: v1.RecordUsageRequest) -> v1.RecordUsageResponse:
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
    return v1.RecordUsageResponse(record=to_pb(v1.UsageRecord, got))


async def get_usage(sk: skift.LocalSkift, r: v1.GetUsageRequest) -> v1.GetUsageResponse:
    got = await sk.usage(r.ref, subtree=r.subtree, project=r.project)
    return v1.GetUsageResponse(report=to_pb(v1.UsageReport, got))


async def get_project_usage(
    sk: skift.LocalSkift, r: v1.GetProjectUsageRequest
) -> v1.GetProjectUsageResponse:
    return v1.GetProjectUsageResponse(
        report=to_pb(v1.UsageReport, await sk.project_usage(r.project))
    )


async def set_rate(sk: skift.LocalSkift, r: v1.SetRateRequest) -> v1.SetRateResponse:
    got = await sk.set_rate(
        r.model,
        input=r.input,
        output=r.output,
        cache_read=r.cache_read or "0",
        cache_write=r.cache_write or "0",
        currency=r.currency or "USD",
    )
    return v1.SetRateResponse(rate=to_pb(v1.Rate, got))


async def list_rates(sk: skift.LocalSkift, r: v1.ListRatesRequest) -> v1.ListRatesResponse:
    token = paging.decode("ListRates", r)
    got = [to_pb(v1.Rate, x) for x in await sk.rates()]
    items, nxt = paging.slice_page("ListRates", got, token, _size(sk, r.page_size), r)
    return v1.ListRatesResponse(rates=items, next_page_token=nxt)


async def set_org_limits(
    sk: skift.LocalSkift, r: v1.SetOrgLimitsRequest
) -> v1.SetOrgLimitsResponse:
    sizes: dict[str, int | None] = {**dict(r.set), **dict.fromkeys(r.unset)}
    return v1.SetOrgLimitsResponse(limits=to_pb(v1.OrgLimits, await sk.set_org_limits(**sizes)))


async def who_am_i(sk: skift.LocalSkift, r: v1.WhoAmIRequest) -> v1.WhoAmIResponse:
    return to_pb(v1.WhoAmIResponse, await sk.whoami())


async def get_org_limits(
    sk: skift.LocalSkift, r: v1.GetOrgLimitsRequest
) -> v1.GetOrgLimitsResponse:
    return v1.GetOrgLimitsResponse(limits=to_pb(v1.OrgLimits, await sk.org_limits()))


# ------------------------------------------------------------------ artifacts and blobs


async def put_blob(sk: skift.LocalSkift, r: v1.PutBlobRequest) -> v1.PutBlobResponse:
    got = await sk.put_blob(r.data, media_type=r.media_type, digest=r.digest)
    return v1.PutBlobResponse(blob=to_pb(v1.Blob, got))


async def get_blob(sk: skift.LocalSkift, r: v1.GetBlobRequest) -> v1.GetBlobResponse:
    return v1.GetBlobResponse(data=await sk.get_blob(r.digest))


async def attach_artifact(
    sk: skift.LocalSkift, r: v1.AttachArtifactRequest
) -> v1.AttachArtifactResponse:
    res = await sk.attach_artifact(
        r.ref,
        artifact_doc(r.artifact or v1.Artifact()),
        lease=r.lease,
        project=r.project,
        request_id=r.request_id or None,
    )
    return v1.AttachArtifactResponse(result=to_pb(v1.PatchResult, res))


async def list_artifacts(
    sk: skift.LocalSkift, r: v1.ListArtifactsRequest
) -> v1.ListArtifactsResponse:
    token = paging.decode("ListArtifacts", r)
    got = [to_pb(v1.ArtifactInfo, a) for a in await sk.artifacts(r.ref, project=r.project)]
    items, nxt = paging.slice_page("ListArtifacts", got, token, _size(sk, r.page_size), r)
    return v1.ListArtifactsResponse(artifacts=items, next_page_token=nxt)
