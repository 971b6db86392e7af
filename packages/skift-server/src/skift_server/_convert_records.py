"""skift.v1 messages of the records around the graph, both ways: comments, search hits,
events, principals and tokens, usage, rates and organization limits."""

from __future__ import annotations

from decimal import Decimal

import skift

from ._convert import enum_pb, from_struct, kind_word, opt_ts, to_struct, ts, utc
from ._convert_graph import node_pb, node_view
from ._convert_types import from_pb, to_pb
from ._proto.skift import v1

# ------------------------------------------------------------------ comments and search


def comment_pb(x: skift.CommentInfo) -> v1.Comment:
    return v1.Comment(
        id=x.id,
        node=x.node,
        node_title=x.node_title,
        author=x.author,
        author_kind=enum_pb(v1.PrincipalKind, x.author_kind),
        body=x.body,
        in_reply_to=x.in_reply_to,
        created_at=utc(x.created_at),
        edited_at=utc(x.edited_at),
        resolved_at=utc(x.resolved_at),
        resolved_by=x.resolved_by,
        revisions=[
            v1.CommentRevision(
                body=r.body,
                author=r.author,
                author_kind=enum_pb(v1.PrincipalKind, r.author_kind),
                at=utc(r.at),
            )
            for r in x.revisions
        ],
    )


def comment_view(m: v1.Comment | None) -> skift.CommentInfo:
    m = m or v1.Comment()
    return skift.CommentInfo(
        id=m.id,
        node=m.node,
        node_title=m.node_title,
        author=m.author,
        author_kind=kind_word(m.author_kind) or "",
        body=m.body,
        in_reply_to=m.in_reply_to,
        created_at=ts(m.created_at),
        edited_at=opt_ts(m.edited_at),
        resolved_at=opt_ts(m.resolved_at),
        resolved_by=m.resolved_by,
        revisions=tuple(
            skift.CommentRevision(
                body=r.body,
                author=r.author,
                author_kind=kind_word(r.author_kind) or "",
                at=ts(r.at),
            )
            for r in m.revisions
        ),
    )


def search_hit_pb(h: skift.SearchHit) -> v1.SearchHit:
    return v1.SearchHit(
        node=node_pb(h.node), rank=h.rank, matched=list(h.matched), snippet=h.snippet
    )


def search_hit_view(m: v1.SearchHit) -> skift.SearchHit:
    return skift.SearchHit(
        node=node_view(m.node or v1.Node()),
        rank=m.rank,
        matched=tuple(m.matched),
        snippet=m.snippet,
    )


# ------------------------------------------------------------------ events


def event_pb(e: skift.EventInfo) -> v1.Event:
    return v1.Event(
        id=e.id,
        op=e.op,
        project=e.project,
        node=e.node,
        principal=e.principal,
        principal_kind=enum_pb(v1.PrincipalKind, e.principal_kind),
        identity_scheme=e.identity_scheme,
        reason=e.reason,
        request_id=e.request_id,
        before=to_struct(e.before) if e.before is not None else None,
        after=to_struct(e.after) if e.after is not None else None,
        occurred_at=utc(e.occurred_at),
        cursor=e.cursor,
    )


def event_view(m: v1.Event) -> skift.EventInfo:
    return skift.EventInfo(
        id=m.id,
        op=m.op,
        project=m.project,
        node=m.node,
        principal=m.principal,
        principal_kind=kind_word(m.principal_kind) or "",
        identity_scheme=m.identity_scheme,
        reason=m.reason,
        request_id=m.request_id,
        before=from_struct(m.before) if m.before is not None else None,
        after=from_struct(m.after) if m.after is not None else None,
        occurred_at=ts(m.occurred_at),
        cursor=m.cursor,
    )


# ------------------------------------------------------------------ principals and tokens


def principal_pb(p: skift.PrincipalInfo) -> v1.Principal:
    return v1.Principal(
        id=p.id,
        name=p.name,
        kind=enum_pb(v1.PrincipalKind, p.kind),
        identities=[
            v1.Identity(
                id=i.id,
                scheme=i.scheme,
                value=i.value,
                created_at=utc(i.created_at),
                revoked=i.revoked,
            )
            for i in p.identities
        ],
        created_at=utc(p.created_at),
        admin=p.admin,
    )


def principal_view(m: v1.Principal | None) -> skift.PrincipalInfo:
    m = m or v1.Principal()
    return skift.PrincipalInfo(
        id=m.id,
        name=m.name,
        kind=kind_word(m.kind) or "",
        identities=tuple(
            skift.IdentityInfo(
                id=i.id,
                scheme=i.scheme,
                value=i.value,
                created_at=ts(i.created_at),
                revoked=i.revoked,
            )
            for i in m.identities
        ),
        created_at=ts(m.created_at),
        admin=m.admin,
    )


def token_pb(t: skift.TokenInfo) -> v1.CreateTokenResponse:
    return to_pb(t, v1.CreateTokenResponse)


def token_view(m: v1.CreateTokenResponse) -> skift.TokenInfo:
    return from_pb(m, skift.TokenInfo)


# ------------------------------------------------------------------ usage and cost


def _money(value: Decimal | None) -> str | None:
    return None if value is None else str(value)


def _amount(value: str | None) -> Decimal | None:
    return None if value is None else Decimal(value)


def usage_pb(u: skift.UsageInfo) -> v1.UsageRecord:
    return v1.UsageRecord(
        id=u.id,
        node=u.node,
        lease=u.lease,
        principal=u.principal,
        principal_kind=enum_pb(v1.PrincipalKind, u.principal_kind),
        model=u.model,
        input_tokens=u.input_tokens,
        output_tokens=u.output_tokens,
        cache_read_tokens=u.cache_read_tokens,
        cache_write_tokens=u.cache_write_tokens,
        kind=enum_pb(v1.UsageKind, u.kind),
        basis=u.basis,
        created_at=utc(u.created_at),
    )


def usage_view(m: v1.UsageRecord | None) -> skift.UsageInfo:
    m = m or v1.UsageRecord()
    return skift.UsageInfo(
        id=m.id,
        node=m.node,
        lease=m.lease,
        principal=m.principal,
        principal_kind=kind_word(m.principal_kind) or "",
        model=m.model,
        input_tokens=m.input_tokens,
        output_tokens=m.output_tokens,
        cache_read_tokens=m.cache_read_tokens,
        cache_write_tokens=m.cache_write_tokens,
        kind=skift.UsageKind(kind_word(m.kind) or "actual"),
        basis=m.basis,
        created_at=ts(m.created_at),
    )


def _totals_pb(t: skift.TokenTotals) -> v1.TokenTotals:
    return v1.TokenTotals(
        input_tokens=t.input_tokens,
        output_tokens=t.output_tokens,
        cache_read_tokens=t.cache_read_tokens,
        cache_write_tokens=t.cache_write_tokens,
        total=t.total,
    )


def _totals_view(m: v1.TokenTotals | None) -> skift.TokenTotals:
    t = m or v1.TokenTotals()
    return skift.TokenTotals(
        input_tokens=t.input_tokens,
        output_tokens=t.output_tokens,
        cache_read_tokens=t.cache_read_tokens,
        cache_write_tokens=t.cache_write_tokens,
        total=t.total,
    )


def report_pb(r: skift.UsageReport) -> v1.UsageReport:
    return v1.UsageReport(
        ref=r.ref,
        title=r.title,
        subtree=r.subtree,
        actual=_totals_pb(r.actual),
        estimate=_totals_pb(r.estimate),
        cost_actual=_money(r.cost_actual),
        cost_estimate=_money(r.cost_estimate),
        currency=r.currency,
        unpriced_models=list(r.unpriced_models),
        budget=_money(r.budget),
        cap=_money(r.cap),
        records=[usage_pb(u) for u in r.records],
    )


def report_view(m: v1.UsageReport | None) -> skift.UsageReport:
    m = m or v1.UsageReport()
    return skift.UsageReport(
        ref=m.ref,
        title=m.title,
        subtree=m.subtree,
        actual=_totals_view(m.actual),
        estimate=_totals_view(m.estimate),
        cost_actual=_amount(m.cost_actual),
        cost_estimate=_amount(m.cost_estimate),
        currency=m.currency,
        unpriced_models=tuple(m.unpriced_models),
        budget=_amount(m.budget),
        cap=_amount(m.cap),
        records=tuple(usage_view(u) for u in m.records),
    )


def rate_pb(r: skift.RateInfo) -> v1.Rate:
    return to_pb(r, v1.Rate)


def rate_view(m: v1.Rate | None) -> skift.RateInfo:
    return from_pb(m or v1.Rate(), skift.RateInfo)


def org_limits_pb(o: skift.OrgLimits) -> v1.OrgLimits:
    return v1.OrgLimits(
        effective={k: v for k in o.server if isinstance(v := getattr(o, k), int)},
        own=list(o.own),
        server=dict(o.server),
        ops_per_patch=o.ops_per_patch,
    )


def org_limits_view(m: v1.OrgLimits | None) -> skift.OrgLimits:
    m = m or v1.OrgLimits()
    return skift.OrgLimits(
        **dict(m.effective),
        own=tuple(m.own),
        server=dict(m.server),
        ops_per_patch=m.ops_per_patch,
    )
