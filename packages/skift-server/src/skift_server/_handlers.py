"""The hand-written handlers of skift.v1.SkiftService: decode a request, call the skift API,
encode, where that takes more than the declaration says.

An operation that only decodes, calls and encodes has no handler here: it is made from
``skift.OPERATIONS`` (``_simple``). What stays: the paged lists (paged here, ``_paging``: by
count, and by bytes so that no response outgrows a default client's 4 MiB), the patch (its
operations counted before one is converted), the node filters (Ready, ListNodes, ClaimNext),
the claims (their inputs cut to the answer's budget), Release (its preemption), the change
stream, and the requests whose fields the method names otherwise. No rule lives here: the
engine validates and decides.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import betterproto2

import skift

from . import _paging as paging
from ._convert import enum_word
from ._convert_graph import filter_kwargs
from ._convert_ops import op_doc
from ._convert_types import to_pb
from ._convert_wire import encoded
from ._proto.skift import v1

Handler = Callable[[skift.LocalSkift, Any], Awaitable[betterproto2.Message]]


def _opt(**kw: Any) -> dict[str, Any]:
    """Keyword arguments without the ones the request left unset."""
    return {k: v for k, v in kw.items() if v is not None}


def _size(sk: skift.LocalSkift, page_size: int) -> int:
    """The page size a request asks for (0: the server's default), checked by the engine."""
    return sk.engine.page_size(page_size or None)


def _at(token: paging.Token | None) -> str | None:
    """The core position a page token carries (None: the first page)."""
    return token.core if token else None


# ------------------------------------------------------------------ projects


async def list_projects(sk: skift.LocalSkift, r: v1.ListProjectsRequest) -> v1.ListProjectsResponse:
    token = paging.decode("ListProjects", r)
    got = await sk.list_projects(
        archived=r.show_archived, limit=_size(sk, r.page_size), page=token.core if token else None
    )
    items = encoded(v1.Project, got)
    k = paging.fit(items)
    return v1.ListProjectsResponse(projects=items[:k], next_page_token=paging.next_token(got, k, r))


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


async def _node_page(
    rpc: str,
    r: v1.ReadyRequest | v1.ListNodesRequest,
    read: Callable[[int | None, str | None], Awaitable[skift.ReadyPage]],
) -> tuple[list[v1.Node], skift.ReadyPage, str]:
    """One byte-budgeted page of Ready or ListNodes over the engine's own pages (keyset:
    a page cut by bytes goes on from the engine's position after the last node sent)."""
    token = paging.decode(rpc, r)
    page = await read(r.page_size or None, token.core if token else None)
    nodes = encoded(v1.Node, page.nodes)
    k = paging.fit(nodes)
    more = k < len(nodes) or page.next_page is not None
    nxt = paging.encode(paging.Token(rpc, core=page.ends[k - 1]), r) if more and k else ""
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
    got = await sk.edges(
        list(r.nodes), project=r.project, limit=_size(sk, r.page_size), page=_at(token)
    )
    items, nxt = paging.core_page(got, v1.EdgeInfo, r)
    return v1.ListEdgesResponse(edges=items, next_page_token=nxt)


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
    if rest is not None:  # ListInputs goes on after the last input sent (keyset)
        at = claim.input_ends[rest - 1]
        m.next_inputs_page_token = paging.encode(paging.Token("ListInputs", core=at))
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
    got = await sk.inputs(
        r.ref,
        project=r.project,
        limit=_size(sk, r.page_size),
        page=token.core if token else None,
    )
    kept, _ = paging.cut_inputs([to_pb(v1.Input, i) for i in got])
    return v1.ListInputsResponse(inputs=kept, next_page_token=paging.next_token(got, len(kept), r))


async def release(sk: skift.LocalSkift, r: v1.ReleaseRequest) -> v1.ReleaseResponse:
    if r.preempt:
        got = await sk.release(r.ref, preempt=True, reason=r.preempt_reason, project=r.project)
        return v1.ReleaseResponse(node=to_pb(v1.Node, got))
    reason = enum_word(r.reason, v1.ReleaseReason, "reason") or "crash"
    got = await sk.release(r.ref, lease=r.lease or None, reason=reason, project=r.project)
    return v1.ReleaseResponse(node=to_pb(v1.Node, got))


async def list_leases(sk: skift.LocalSkift, r: v1.ListLeasesRequest) -> v1.ListLeasesResponse:
    token = paging.decode("ListLeases", r)
    got = await sk.leases(r.ref, project=r.project, limit=_size(sk, r.page_size), page=_at(token))
    items, nxt = paging.core_page(got, v1.Lease, r)
    return v1.ListLeasesResponse(leases=items, next_page_token=nxt)


async def list_live_leases(
    sk: skift.LocalSkift, r: v1.ListLiveLeasesRequest
) -> v1.ListLiveLeasesResponse:
    token = paging.decode("ListLiveLeases", r)
    got = await sk.leases(
        projects=tuple(r.projects), mine=r.mine, limit=_size(sk, r.page_size), page=_at(token)
    )
    items, nxt = paging.core_page(got, v1.Lease, r)
    return v1.ListLiveLeasesResponse(leases=items, next_page_token=nxt)


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


async def list_principals(
    sk: skift.LocalSkift, r: v1.ListPrincipalsRequest
) -> v1.ListPrincipalsResponse:
    token = paging.decode("ListPrincipals", r)
    got = await sk.list_principals(limit=_size(sk, r.page_size), page=_at(token))
    items, nxt = paging.core_page(got, v1.Principal, r)
    return v1.ListPrincipalsResponse(principals=items, next_page_token=nxt)


# ------------------------------------------------------------------ comments and search


async def edit_comment(sk: skift.LocalSkift, r: v1.EditCommentRequest) -> v1.EditCommentResponse:
    return v1.EditCommentResponse(comment=to_pb(v1.Comment, await sk.edit_comment(r.id, r.body)))


async def resolve_comment(
    sk: skift.LocalSkift, r: v1.ResolveCommentRequest
) -> v1.ResolveCommentResponse:
    return v1.ResolveCommentResponse(comment=to_pb(v1.Comment, await sk.resolve_comment(r.id)))


async def list_comments(sk: skift.LocalSkift, r: v1.ListCommentsRequest) -> v1.ListCommentsResponse:
    token = paging.decode("ListComments", r)
    got = await sk.comments(r.ref, project=r.project, limit=_size(sk, r.page_size), page=_at(token))
    items, nxt = paging.core_page(got, v1.Comment, r)
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
    hits = encoded(v1.SearchHit, got)
    k = paging.fit(hits)
    return v1.SearchResponse(hits=hits[:k], next_page_token=paging.next_token(got, k, r))


# ------------------------------------------------------------------ usage and cost


async def list_rates(sk: skift.LocalSkift, r: v1.ListRatesRequest) -> v1.ListRatesResponse:
    token = paging.decode("ListRates", r)
    got = await sk.rates(limit=_size(sk, r.page_size), page=_at(token))
    items, nxt = paging.core_page(got, v1.Rate, r)
    return v1.ListRatesResponse(rates=items, next_page_token=nxt)


async def set_org_limits(
    sk: skift.LocalSkift, r: v1.SetOrgLimitsRequest
) -> v1.SetOrgLimitsResponse:
    sizes: dict[str, int | None] = {**dict(r.set), **dict.fromkeys(r.unset)}
    return v1.SetOrgLimitsResponse(limits=to_pb(v1.OrgLimits, await sk.set_org_limits(**sizes)))


# ------------------------------------------------------------------ artifacts and blobs


async def list_artifacts(
    sk: skift.LocalSkift, r: v1.ListArtifactsRequest
) -> v1.ListArtifactsResponse:
    token = paging.decode("ListArtifacts", r)
    got = await sk.artifacts(
        r.ref, project=r.project, limit=_size(sk, r.page_size), page=_at(token)
    )
    items, nxt = paging.core_page(got, v1.ArtifactInfo, r)
    return v1.ListArtifactsResponse(artifacts=items, next_page_token=nxt)
