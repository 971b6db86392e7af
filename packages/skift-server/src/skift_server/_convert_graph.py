"""skift.v1 messages of the graph, both ways: nodes, projects, filters, pages, patch
results, explanations, focus, leases and claims."""

from __future__ import annotations

from typing import Any

import skift

from ._convert import enum_pb, enum_word, from_struct, kind_word, opt_ts, to_struct, ts, utc
from ._convert_ops import artifact_info_pb, artifact_info_view
from ._proto.skift import v1

# ------------------------------------------------------------------ views -> messages


def node_pb(n: skift.NodeInfo) -> v1.Node:
    return v1.Node(
        ref=n.ref,
        id=n.id,
        number=n.number,
        project=n.project,
        title=n.title,
        body=n.body,
        kind=n.kind,
        status=enum_pb(v1.NodeStatus, n.status),
        priority=enum_pb(v1.Priority, n.priority),
        parent=n.parent,
        labels=list(n.labels),
        assignee_kind=enum_pb(v1.AssigneeKind, n.assignee_kind),
        assignee=n.assignee,
        context_id=n.context_id,
        created_at=utc(n.created_at),
        blocked=n.blocked,
        held=n.held,
        claimed=n.claimed,
        ready=n.ready,
        result=n.result,
        human_written=n.human_written,
        body_author=n.body_author,
        body_author_kind=enum_pb(v1.PrincipalKind, n.body_author_kind),
        result_author=n.result_author,
        result_author_kind=enum_pb(v1.PrincipalKind, n.result_author_kind),
        lease=lease_pb(n.lease) if n.lease is not None else None,
    )


def project_pb(p: skift.ProjectInfo) -> v1.Project:
    return v1.Project(
        id=p.id,
        slug=p.slug,
        title=p.title,
        priority=enum_pb(v1.Priority, p.priority),
        vcs_url=p.vcs_url,
        archived=p.archived,
        archived_at=utc(p.archived_at),
        held=p.held,
        hold_reason=p.hold_reason,
        created_at=utc(p.created_at),
        active_at=utc(p.active_at),
        node_count=p.node_count,
        restricted=p.readers is not None,
        readers=list(p.readers or ()),
    )


def patch_result_pb(r: skift.PatchResult) -> v1.PatchResult:
    return v1.PatchResult(
        request_id=r.request_id,
        created=dict(r.created),
        dropped=list(r.dropped),
        nodes=[node_pb(n) for n in r.nodes],
        parked=r.parked,
    )


def reasons_pb(e: skift.Explanation) -> list[v1.Reason]:
    return [v1.Reason(kind=r.kind, detail=to_struct(r.detail)) for r in e.reasons]


def edge_pb(x: skift.EdgeInfo) -> v1.EdgeInfo:
    def end(e: skift.EdgeEnd) -> v1.EdgeEnd:
        return v1.EdgeEnd(ref=e.ref, title=e.title, status=enum_pb(v1.NodeStatus, e.status))

    return v1.EdgeInfo(source=end(x.source), target=end(x.target), kind=x.kind)


def focus_pb(f: skift.FocusResult) -> v1.FocusResult:
    return v1.FocusResult(
        scope=f.scope,
        group=f.group,
        held=list(f.held),
        released=list(f.released),
        parked=f.parked,
    )


def lease_pb(x: skift.LeaseInfo) -> v1.Lease:
    return v1.Lease(
        id=x.id,
        node=x.node,
        holder=x.holder,
        expires_at=utc(x.expires_at),
        created_at=utc(x.created_at),
        harness=x.harness,
        agent_ref=x.agent_ref,
        session_ref=x.session_ref,
        released_at=utc(x.released_at),
        release_reason=enum_pb(v1.ReleaseReason, x.release_reason),
        title=x.title,
    )


def input_pb(i: skift.Input) -> v1.Input:
    return v1.Input(
        ref=i.ref,
        title=i.title,
        result=i.result,
        author=i.author,
        author_kind=enum_pb(v1.PrincipalKind, i.author_kind),
        artifacts=[artifact_info_pb(a) for a in i.artifacts],
    )


def claim_pb(c: skift.Claim) -> v1.Claim:
    return v1.Claim(
        node=node_pb(c.node),
        lease=lease_pb(c.lease),
        inputs=[input_pb(i) for i in c.inputs],
        comments=v1.CommentsHint(
            unresolved=c.comments.unresolved, newest_at=utc(c.comments.newest_at)
        ),
    )


# ------------------------------------------------------------------ messages -> views


def node_view(m: v1.Node) -> skift.NodeInfo:
    kind = kind_word(m.assignee_kind)
    return skift.NodeInfo(
        ref=m.ref,
        id=m.id,
        number=m.number,
        project=m.project,
        title=m.title,
        body=m.body,
        kind=m.kind,
        status=skift.Status(kind_word(m.status) or "open"),
        priority=skift.Priority(kind_word(m.priority) or "p2"),
        parent=m.parent,
        labels=tuple(m.labels),
        assignee_kind=skift.AssigneeKind(kind) if kind else None,
        assignee=m.assignee,
        context_id=m.context_id,
        created_at=ts(m.created_at),
        blocked=m.blocked,
        held=m.held,
        claimed=m.claimed,
        ready=m.ready,
        result=m.result,
        human_written=m.human_written,
        body_author=m.body_author,
        body_author_kind=kind_word(m.body_author_kind),
        result_author=m.result_author,
        result_author_kind=kind_word(m.result_author_kind),
        lease=lease_view(m.lease) if m.lease is not None else None,
    )


def project_view(m: v1.Project | None) -> skift.ProjectInfo:
    m = m or v1.Project()
    return skift.ProjectInfo(
        id=m.id,
        slug=m.slug,
        title=m.title,
        priority=skift.Priority(kind_word(m.priority) or "p2"),
        vcs_url=m.vcs_url,
        archived=m.archived,
        archived_at=opt_ts(m.archived_at),
        held=m.held,
        hold_reason=m.hold_reason,
        created_at=ts(m.created_at),
        active_at=ts(m.active_at),
        node_count=m.node_count,
        readers=tuple(m.readers) if m.restricted else None,
    )


def patch_result_view(m: v1.PatchResult | None) -> skift.PatchResult:
    m = m or v1.PatchResult()
    return skift.PatchResult(
        request_id=m.request_id,
        created=dict(m.created),
        dropped=tuple(m.dropped),
        nodes=tuple(node_view(n) for n in m.nodes),
        parked=m.parked,
    )


def page_view(
    nodes: list[v1.Node], held_count: int, held_count_exact: bool, next_page_token: str
) -> skift.ReadyPage:
    return skift.ReadyPage(
        nodes=tuple(node_view(n) for n in nodes),
        held_count=held_count,
        next_page=next_page_token or None,
        held_count_exact=held_count_exact,
    )


def explanation_view(m: v1.ExplainResponse) -> skift.Explanation:
    return skift.Explanation(
        ref=m.ref,
        title=m.title,
        ready=m.ready,
        reasons=tuple(skift.Reason(kind=r.kind, detail=from_struct(r.detail)) for r in m.reasons),
    )


def edge_view(m: v1.EdgeInfo) -> skift.EdgeInfo:
    def end(e: v1.EdgeEnd | None) -> skift.EdgeEnd:
        e = e or v1.EdgeEnd()
        return skift.EdgeEnd(
            ref=e.ref, title=e.title, status=skift.Status(kind_word(e.status) or "open")
        )

    return skift.EdgeInfo(source=end(m.source), target=end(m.target), kind=m.kind or "blocks")


def focus_view(m: v1.FocusResult | None) -> skift.FocusResult:
    m = m or v1.FocusResult()
    return skift.FocusResult(
        scope=m.scope,
        group=m.group,
        held=tuple(m.held),
        released=tuple(m.released),
        parked=m.parked,
    )


def lease_view(m: v1.Lease | None) -> skift.LeaseInfo:
    m = m or v1.Lease()
    reason = kind_word(m.release_reason)
    return skift.LeaseInfo(
        id=m.id,
        node=m.node,
        holder=m.holder,
        expires_at=ts(m.expires_at),
        created_at=ts(m.created_at),
        harness=m.harness,
        agent_ref=m.agent_ref,
        session_ref=m.session_ref,
        released_at=opt_ts(m.released_at),
        release_reason=skift.ReleaseReason(reason) if reason else None,
        title=m.title,
    )


def input_view(i: v1.Input) -> skift.Input:
    return skift.Input(
        ref=i.ref,
        title=i.title,
        result=i.result,
        author=i.author,
        author_kind=kind_word(i.author_kind),
        artifacts=tuple(artifact_info_view(a) for a in i.artifacts),
    )


def claim_view(m: v1.Claim | None, inputs: list[v1.Input] | None = None) -> skift.Claim:
    """The claim; ``inputs`` (when given) replaces the message's own."""
    m = m or v1.Claim()
    comments = m.comments or v1.CommentsHint()
    return skift.Claim(
        node=node_view(m.node or v1.Node()),
        lease=lease_view(m.lease),
        inputs=tuple(input_view(i) for i in (m.inputs if inputs is None else inputs)),
        comments=skift.CommentsHint(
            unresolved=comments.unresolved, newest_at=opt_ts(comments.newest_at)
        ),
    )


# ------------------------------------------------------------------ filters


def filter_pb(f: skift.NodeFilter) -> v1.NodeFilter:
    return v1.NodeFilter(
        projects=list(f.projects),
        kinds=list(f.kinds),
        labels=list(f.labels),
        any_labels=list(f.any_labels),
        assignee_kind=enum_pb(v1.AssigneeKind, f.assignee_kind),
        min_priority=enum_pb(v1.Priority, f.min_priority),
        parent=f.parent,
        status=enum_pb(v1.NodeStatus, f.status),
        held=f.held,
        agent_work=f.agent_work,
    )


def filter_kwargs(m: v1.NodeFilter | None) -> dict[str, Any]:
    """A NodeFilter message as the keyword arguments of ``ready``/``list_nodes``/``claim_next``."""
    if m is None:
        return {}
    out: dict[str, Any] = {
        "projects": list(m.projects),
        "kinds": list(m.kinds),
        "labels": list(m.labels),
        "any_labels": list(m.any_labels),
    }
    words = {
        "assignee_kind": enum_word(m.assignee_kind, v1.AssigneeKind, "filter.assignee_kind"),
        "min_priority": enum_word(m.min_priority, v1.Priority, "filter.min_priority"),
        "status": enum_word(m.status, v1.NodeStatus, "filter.status"),
        "parent": m.parent,
        "held": m.held,
    }
    out.update({k: v for k, v in words.items() if v is not None})
    if m.agent_work:
        out["agent_work"] = True
    return out
