"""The edge between skift's Python views and the skift.v1 messages, both ways.

The server encodes the views the API returns (``skift.NodeInfo`` ...) as
messages and decodes requests into API arguments; the client does the
reverse, so a remote caller gets the very same view objects a local one does.
No rule lives here: values are moved, never judged (the engine validates).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import math
import typing
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import attrs
import betterproto2

import skift

from ._proto.google.protobuf import ListValue, NullValue, Struct, Value
from ._proto.skift import v1

# ------------------------------------------------------------------ JSON <-> Struct


def _jsonable(value: object) -> Any:
    """A JSON-shaped copy of ``value`` (what a Struct can carry)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, enum.Enum):
        return _jsonable(value.value)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Mapping):
        items: Mapping[object, object] = value  # pyright: ignore[reportUnknownVariableType]
        return {str(k): _jsonable(v) for k, v in items.items()}
    if isinstance(value, list | tuple | set | frozenset):
        seq: Sequence[object] = list(value)  # pyright: ignore[reportUnknownArgumentType]
        return [_jsonable(v) for v in seq]
    return str(value)


def to_value(value: object) -> Value:
    v = _jsonable(value)
    if v is None:
        return Value(null_value=NullValue.NULL_VALUE)
    if isinstance(v, bool):
        return Value(bool_value=v)
    if isinstance(v, int | float):
        return Value(number_value=float(v))
    if isinstance(v, str):
        return Value(string_value=v)
    if isinstance(v, dict):
        return Value(struct_value=to_struct(v))  # pyright: ignore[reportUnknownArgumentType]
    items: list[object] = v
    return Value(list_value=ListValue(values=[to_value(x) for x in items]))


def to_struct(value: Mapping[str, Any]) -> Struct:
    return Struct(fields={str(k): to_value(v) for k, v in value.items()})


def from_value(value: Value) -> Any:
    """A Python value from a protobuf Value; whole numbers come back as ``int``."""
    if value.struct_value is not None:
        return from_struct(value.struct_value)
    if value.list_value is not None:
        return [from_value(v) for v in value.list_value.values]
    if value.string_value is not None:
        return value.string_value
    if value.bool_value is not None:
        return value.bool_value
    if value.number_value is not None:
        n = value.number_value
        # Struct numbers are doubles; the views carry counts as ints.
        if math.isfinite(n) and n == int(n) and abs(n) < 2**53:
            return int(n)
        return n
    return None


def from_struct(value: Struct | None) -> dict[str, Any]:
    if value is None:
        return {}
    return {k: from_value(v) for k, v in value.fields.items()}


# ------------------------------------------------------------------ views -> messages


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def node_pb(n: skift.NodeInfo) -> v1.Node:
    return v1.Node(
        ref=n.ref,
        id=n.id,
        number=n.number,
        project=n.project,
        title=n.title,
        body=n.body,
        kind=n.kind,
        status=n.status.value,
        priority=n.priority.value,
        parent=n.parent,
        labels=list(n.labels),
        assignee_kind=n.assignee_kind.value if n.assignee_kind is not None else None,
        assignee=n.assignee,
        context_id=n.context_id,
        created_at=_utc(n.created_at),
        blocked=n.blocked,
        held=n.held,
        claimed=n.claimed,
        ready=n.ready,
        result=n.result,
        human_written=n.human_written,
        body_author=n.body_author,
        body_author_kind=n.body_author_kind,
        result_author=n.result_author,
        result_author_kind=n.result_author_kind,
    )


def project_pb(p: skift.ProjectInfo) -> v1.Project:
    return v1.Project(
        id=p.id,
        slug=p.slug,
        title=p.title,
        priority=p.priority.value,
        vcs_url=p.vcs_url,
        archived=p.archived,
        archived_at=_utc(p.archived_at),
        held=p.held,
        hold_reason=p.hold_reason,
        created_at=_utc(p.created_at),
        active_at=_utc(p.active_at),
        node_count=p.node_count,
    )


def resolved_pb(r: skift.Resolved) -> v1.Resolved:
    return v1.Resolved(ref=r.ref, id=r.id, title=r.title)


def patch_result_pb(r: skift.PatchResult) -> v1.PatchResult:
    return v1.PatchResult(
        request_id=r.request_id,
        created=dict(r.created),
        dropped=list(r.dropped),
        nodes=[node_pb(n) for n in r.nodes],
        parked=r.parked,
    )


def page_pb(p: skift.ReadyPage) -> v1.ReadyPage:
    return v1.ReadyPage(
        nodes=[node_pb(n) for n in p.nodes],
        held_count=p.held_count,
        next_page=p.next_page,
        held_count_exact=p.held_count_exact,
    )


def explanation_pb(e: skift.Explanation) -> v1.Explanation:
    return v1.Explanation(
        ref=e.ref,
        title=e.title,
        ready=e.ready,
        reasons=[v1.Reason(kind=r.kind, detail=to_struct(r.detail)) for r in e.reasons],
    )


def lease_pb(x: skift.LeaseInfo) -> v1.Lease:
    return v1.Lease(
        id=x.id,
        node=x.node,
        holder=x.holder,
        expires_at=_utc(x.expires_at),
        created_at=_utc(x.created_at),
        harness=x.harness,
        agent_ref=x.agent_ref,
        session_ref=x.session_ref,
        released_at=_utc(x.released_at),
        release_reason=x.release_reason.value if x.release_reason is not None else None,
    )


def claim_pb(c: skift.Claim) -> v1.Claim:
    return v1.Claim(
        node=node_pb(c.node),
        lease=lease_pb(c.lease),
        inputs=[
            v1.Input(
                ref=i.ref,
                title=i.title,
                result=i.result,
                author=i.author,
                author_kind=i.author_kind,
                artifacts=[artifact_info_pb(a) for a in i.artifacts],
            )
            for i in c.inputs
        ],
        comments=v1.CommentsHint(
            unresolved=c.comments.unresolved, newest_at=_utc(c.comments.newest_at)
        ),
    )


def comment_pb(x: skift.CommentInfo) -> v1.Comment:
    return v1.Comment(
        id=x.id,
        node=x.node,
        node_title=x.node_title,
        author=x.author,
        author_kind=x.author_kind,
        body=x.body,
        in_reply_to=x.in_reply_to,
        created_at=_utc(x.created_at),
        edited_at=_utc(x.edited_at),
        resolved_at=_utc(x.resolved_at),
        resolved_by=x.resolved_by,
        revisions=[
            v1.CommentRevision(
                body=r.body, author=r.author, author_kind=r.author_kind, at=_utc(r.at)
            )
            for r in x.revisions
        ],
    )


def search_hit_pb(h: skift.SearchHit) -> v1.SearchHit:
    return v1.SearchHit(
        node=node_pb(h.node), rank=h.rank, matched=list(h.matched), snippet=h.snippet
    )


def focus_pb(f: skift.FocusResult) -> v1.FocusResult:
    return v1.FocusResult(
        scope=f.scope,
        group=f.group,
        held=list(f.held),
        released=list(f.released),
        parked=f.parked,
    )


def event_pb(e: skift.EventInfo) -> v1.Event:
    return v1.Event(
        id=e.id,
        op=e.op,
        project=e.project,
        node=e.node,
        principal=e.principal,
        principal_kind=e.principal_kind,
        identity_scheme=e.identity_scheme,
        reason=e.reason,
        request_id=e.request_id,
        before=to_struct(e.before) if e.before is not None else None,
        after=to_struct(e.after) if e.after is not None else None,
        occurred_at=_utc(e.occurred_at),
        cursor=e.cursor,
    )


def principal_pb(p: skift.PrincipalInfo) -> v1.Principal:
    return v1.Principal(
        id=p.id,
        name=p.name,
        kind=p.kind,
        identities=[
            v1.Identity(
                id=i.id,
                scheme=i.scheme,
                value=i.value,
                created_at=_utc(i.created_at),
                revoked=i.revoked,
            )
            for i in p.identities
        ],
        created_at=_utc(p.created_at),
    )


def token_pb(t: skift.TokenInfo) -> v1.CreateTokenResponse:
    return v1.CreateTokenResponse(
        id=t.id, principal=t.principal, token=t.token, created_at=_utc(t.created_at)
    )


# ------------------------------------------------------------------ messages -> views


def _ts(value: datetime | None) -> datetime:
    if value is None:
        return datetime.fromtimestamp(0, UTC)
    return value.astimezone(UTC)


def _opt_ts(value: datetime | None) -> datetime | None:
    return value.astimezone(UTC) if value is not None else None


def node_view(m: v1.Node) -> skift.NodeInfo:
    return skift.NodeInfo(
        ref=m.ref,
        id=m.id,
        number=m.number,
        project=m.project,
        title=m.title,
        body=m.body,
        kind=m.kind,
        status=skift.Status(m.status),
        priority=skift.Priority(m.priority),
        parent=m.parent,
        labels=tuple(m.labels),
        assignee_kind=skift.AssigneeKind(m.assignee_kind) if m.assignee_kind else None,
        assignee=m.assignee,
        context_id=m.context_id,
        created_at=_ts(m.created_at),
        blocked=m.blocked,
        held=m.held,
        claimed=m.claimed,
        ready=m.ready,
        result=m.result,
        human_written=m.human_written,
        body_author=m.body_author,
        body_author_kind=m.body_author_kind,
        result_author=m.result_author,
        result_author_kind=m.result_author_kind,
    )


def project_view(m: v1.Project) -> skift.ProjectInfo:
    return skift.ProjectInfo(
        id=m.id,
        slug=m.slug,
        title=m.title,
        priority=skift.Priority(m.priority),
        vcs_url=m.vcs_url,
        archived=m.archived,
        archived_at=_opt_ts(m.archived_at),
        held=m.held,
        hold_reason=m.hold_reason,
        created_at=_ts(m.created_at),
        active_at=_ts(m.active_at),
        node_count=m.node_count,
    )


def resolved_view(m: v1.Resolved) -> skift.Resolved:
    return skift.Resolved(ref=m.ref, id=m.id, title=m.title)


def patch_result_view(m: v1.PatchResult) -> skift.PatchResult:
    return skift.PatchResult(
        request_id=m.request_id,
        created=dict(m.created),
        dropped=tuple(m.dropped),
        nodes=tuple(node_view(n) for n in m.nodes),
        parked=m.parked,
    )


def page_view(m: v1.ReadyPage) -> skift.ReadyPage:
    return skift.ReadyPage(
        nodes=tuple(node_view(n) for n in m.nodes),
        held_count=m.held_count,
        next_page=m.next_page,
        held_count_exact=m.held_count_exact is not False,
    )


def explanation_view(m: v1.Explanation) -> skift.Explanation:
    return skift.Explanation(
        ref=m.ref,
        title=m.title,
        ready=m.ready,
        reasons=tuple(skift.Reason(kind=r.kind, detail=from_struct(r.detail)) for r in m.reasons),
    )


def lease_view(m: v1.Lease) -> skift.LeaseInfo:
    return skift.LeaseInfo(
        id=m.id,
        node=m.node,
        holder=m.holder,
        expires_at=_ts(m.expires_at),
        created_at=_ts(m.created_at),
        harness=m.harness,
        agent_ref=m.agent_ref,
        session_ref=m.session_ref,
        released_at=_opt_ts(m.released_at),
        release_reason=skift.ReleaseReason(m.release_reason) if m.release_reason else None,
    )


def claim_view(m: v1.Claim) -> skift.Claim:
    node = m.node or v1.Node()
    lease = m.lease or v1.Lease()
    comments = m.comments or v1.CommentsHint()
    return skift.Claim(
        node=node_view(node),
        lease=lease_view(lease),
        inputs=tuple(
            skift.Input(
                ref=i.ref,
                title=i.title,
                result=i.result,
                author=i.author,
                author_kind=i.author_kind,
                artifacts=tuple(artifact_info_view(a) for a in i.artifacts),
            )
            for i in m.inputs
        ),
        comments=skift.CommentsHint(
            unresolved=comments.unresolved, newest_at=_opt_ts(comments.newest_at)
        ),
    )


def comment_view(m: v1.Comment) -> skift.CommentInfo:
    return skift.CommentInfo(
        id=m.id,
        node=m.node,
        node_title=m.node_title,
        author=m.author,
        author_kind=m.author_kind,
        body=m.body,
        in_reply_to=m.in_reply_to,
        created_at=_ts(m.created_at),
        edited_at=_opt_ts(m.edited_at),
        resolved_at=_opt_ts(m.resolved_at),
        resolved_by=m.resolved_by,
        revisions=tuple(
            skift.CommentRevision(
                body=r.body, author=r.author, author_kind=r.author_kind, at=_ts(r.at)
            )
            for r in m.revisions
        ),
    )


def search_hit_view(m: v1.SearchHit) -> skift.SearchHit:
    return skift.SearchHit(
        node=node_view(m.node or v1.Node()),
        rank=m.rank,
        matched=tuple(m.matched),
        snippet=m.snippet,
    )


def focus_view(m: v1.FocusResult) -> skift.FocusResult:
    return skift.FocusResult(
        scope=m.scope,
        group=m.group,
        held=tuple(m.held),
        released=tuple(m.released),
        parked=m.parked,
    )


def event_view(m: v1.Event) -> skift.EventInfo:
    return skift.EventInfo(
        id=m.id,
        op=m.op,
        project=m.project,
        node=m.node,
        principal=m.principal,
        principal_kind=m.principal_kind,
        identity_scheme=m.identity_scheme,
        reason=m.reason,
        request_id=m.request_id,
        before=from_struct(m.before) if m.before is not None else None,
        after=from_struct(m.after) if m.after is not None else None,
        occurred_at=_ts(m.occurred_at),
        cursor=m.cursor,
    )


def principal_view(m: v1.Principal) -> skift.PrincipalInfo:
    return skift.PrincipalInfo(
        id=m.id,
        name=m.name,
        kind=m.kind,
        identities=tuple(
            skift.IdentityInfo(
                id=i.id,
                scheme=i.scheme,
                value=i.value,
                created_at=_ts(i.created_at),
                revoked=i.revoked,
            )
            for i in m.identities
        ),
        created_at=_ts(m.created_at),
    )


def token_view(m: v1.CreateTokenResponse) -> skift.TokenInfo:
    return skift.TokenInfo(
        id=m.id, principal=m.principal, token=m.token, created_at=_ts(m.created_at)
    )


# ------------------------------------------------------------------ filters


def filter_pb(f: skift.NodeFilter) -> v1.NodeFilter:
    return v1.NodeFilter(
        projects=list(f.projects),
        kinds=list(f.kinds),
        labels=list(f.labels),
        any_labels=list(f.any_labels),
        assignee_kind=f.assignee_kind.value if f.assignee_kind is not None else None,
        min_priority=f.min_priority.value if f.min_priority is not None else None,
        parent=f.parent,
        status=f.status.value if f.status is not None else None,
        held=f.held,
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
    for name in ("assignee_kind", "min_priority", "parent", "status", "held"):
        value = getattr(m, name)
        if value is not None:
            out[name] = value
    return out


# ------------------------------------------------------------------ patch operations

_OP_MESSAGES: dict[str, type[Any]] = {
    "create_node": v1.CreateNode,
    "update_node": v1.UpdateNode,
    "drop_node": v1.DropNode,
    "complete_node": v1.CompleteNode,
    "reopen_node": v1.ReopenNode,
    "hold_node": v1.HoldNode,
    "unhold_node": v1.UnholdNode,
    "add_edge": v1.AddEdge,
    "remove_edge": v1.RemoveEdge,
    "attach_artifact": v1.AttachArtifact,
    "add_comment": v1.AddComment,
}


def _strings(items: Sequence[object]) -> list[str]:
    return [str(item) for item in items]


def op_pb(op: skift.Op) -> v1.PatchOp:
    """A parsed operation as its message (only the fields that differ from the defaults)."""
    doc = skift.op_to_dict(op)
    name = str(doc.pop("op"))
    kw: dict[str, Any] = {}
    for key, value in doc.items():
        attr = "from_" if key == "from" else key
        if isinstance(value, enum.Enum):
            value = value.value
        if key == "cascade":
            kw[attr] = v1.Cascade(max_nodes=int(value["max_nodes"]))
        elif key == "artifact":
            kw[attr] = artifact_doc_pb(value)
        elif key == "artifacts":
            kw[attr] = [artifact_doc_pb(a) for a in value]
        elif key == "labels" and name == "update_node":
            kw[attr] = v1.Labels(values=list(value))
        elif isinstance(value, list | tuple):
            kw[attr] = _strings(value)  # pyright: ignore[reportUnknownArgumentType]
        else:
            kw[attr] = value
    return v1.PatchOp(**{name: _OP_MESSAGES[name](**kw)})


@functools.cache  # on first use: a client that never patches does not load skift._ops
def _op_classes() -> dict[str, type[Any]]:
    out: dict[str, type[Any]] = {}
    for cls in typing.get_args(skift.Op):
        out[str(attrs.fields_dict(cls)["op"].default)] = cls
    return out


def op_doc(m: v1.PatchOp, index: int) -> dict[str, Any]:
    """A PatchOp message as the JSON form of an operation, for ``skift.parse_op``.

    Unset fields are left out, so the operation's defaults apply and the
    engine's own validation words any error. In proto3 an empty plain string
    or list is indistinguishable from unset; ``optional`` fields keep "" apart.
    """
    name, body = _which(m)
    if body is None:
        raise skift.Invalid(
            f"ops[{index}] sets no operation",
            next="Set exactly one of: " + ", ".join(_OP_MESSAGES) + ".",
            index=index,
            field="op",
        )
    meta = {f.name: _field_meta(f) for f in dataclasses.fields(body)}
    doc: dict[str, Any] = {"op": name}
    for f in attrs.fields(_op_classes()[name]):
        if not f.init or f.name not in meta:
            continue
        required = f.default is attrs.NOTHING
        value = getattr(body, f.name)
        key = "from" if f.name == "from_" else f.name
        if isinstance(value, v1.Cascade):
            doc[key] = {"max_nodes": value.max_nodes}
        elif isinstance(value, v1.Artifact):
            doc[key] = artifact_doc(value)
        elif key == "artifacts" and value:
            doc[key] = [artifact_doc(a) for a in value]
        elif isinstance(value, v1.Labels):
            doc[key] = list(value.values)
        elif value is None or (not required and not meta[f.name].optional and value in ("", [], 0)):
            continue
        else:
            doc[key] = value
    return doc


def _field_meta(f: dataclasses.Field[Any]) -> betterproto2.FieldMetadata:
    meta: betterproto2.FieldMetadata = f.metadata["betterproto"]
    return meta


def _which(m: v1.PatchOp) -> tuple[str, Any]:
    for name in _OP_MESSAGES:
        value = getattr(m, name)
        if value is not None:
            return name, value
    return "", None


# ------------------------------------------------------------------ artifacts and blobs


def part_pb(doc: Mapping[str, Any]) -> v1.Part:
    """A part's JSON form (``skift.part_to_dict``) as its message."""
    kind = doc.get("type")
    if kind == "text":
        return v1.Part(
            text=v1.TextPart(
                text=str(doc.get("text", "")), media_type=str(doc.get("media_type", ""))
            )
        )
    if kind == "blob":
        return v1.Part(
            blob=v1.BlobPart(
                digest=str(doc.get("digest", "")),
                media_type=str(doc.get("media_type", "")),
                size=int(doc.get("size", 0)),
            )
        )
    return v1.Part(
        reference=v1.ReferencePart(
            uri=str(doc.get("uri", "")),
            digest=doc.get("digest"),
            media_type=doc.get("media_type"),
            commit=doc.get("commit"),
        )
    )


def part_doc(m: v1.Part) -> dict[str, Any]:
    """A Part message as a part's JSON form; the engine validates it."""
    if m.text is not None:
        return {
            "type": "text",
            "text": m.text.text,
            "media_type": m.text.media_type or "text/markdown",
        }
    if m.blob is not None:
        return {
            "type": "blob",
            "digest": m.blob.digest,
            "media_type": m.blob.media_type,
            "size": m.blob.size,
        }
    if m.reference is not None:
        r = m.reference
        out: dict[str, Any] = {"type": "reference", "uri": r.uri}
        for name in ("digest", "media_type", "commit"):
            if getattr(r, name) is not None:
                out[name] = getattr(r, name)
        return out
    return {"type": ""}  # no part set: the engine names the field


def artifact_doc_pb(doc: Mapping[str, Any]) -> v1.Artifact:
    """An artifact's JSON form (``op_to_dict``) as its message."""
    parts: list[Any] = list(doc.get("parts", []))
    return v1.Artifact(
        name=str(doc.get("name", "")),
        description=str(doc.get("description", "")),
        parts=[part_pb(p) for p in parts],
        metadata=to_struct(dict(doc.get("metadata", {}))),
    )


def artifact_pb(a: skift.Artifact) -> v1.Artifact:
    return artifact_doc_pb(skift.op_to_dict(skift.AttachArtifact(node="-", artifact=a))["artifact"])


def artifact_doc(m: v1.Artifact) -> dict[str, Any]:
    return {
        "name": m.name,
        "description": m.description,
        "parts": [part_doc(p) for p in m.parts],
        "metadata": from_struct(m.metadata),
    }


def artifact_info_pb(a: skift.ArtifactInfo) -> v1.ArtifactInfo:
    return v1.ArtifactInfo(
        id=a.id,
        node=a.node,
        name=a.name,
        description=a.description,
        parts=[part_pb(skift.part_to_dict(p)) for p in a.parts],
        metadata=to_struct(a.metadata),
        author=a.author,
        author_kind=a.author_kind,
        created_at=_utc(a.created_at),
    )


def artifact_info_view(m: v1.ArtifactInfo) -> skift.ArtifactInfo:
    return skift.ArtifactInfo(
        id=m.id,
        node=m.node,
        name=m.name,
        description=m.description,
        parts=tuple(skift.part_from_dict(part_doc(p)) for p in m.parts),
        metadata=from_struct(m.metadata),
        author=m.author,
        author_kind=m.author_kind,
        created_at=_ts(m.created_at),
    )


def blob_pb(b: skift.BlobInfo) -> v1.Blob:
    return v1.Blob(digest=b.digest, media_type=b.media_type, size=b.size)


def blob_view(m: v1.Blob) -> skift.BlobInfo:
    return skift.BlobInfo(digest=m.digest, media_type=m.media_type, size=m.size)


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
        principal_kind=u.principal_kind,
        model=u.model,
        input_tokens=u.input_tokens,
        output_tokens=u.output_tokens,
        cache_read_tokens=u.cache_read_tokens,
        cache_write_tokens=u.cache_write_tokens,
        kind=u.kind.value,
        basis=u.basis,
        created_at=_utc(u.created_at),
    )


def usage_view(m: v1.UsageRecord) -> skift.UsageInfo:
    return skift.UsageInfo(
        id=m.id,
        node=m.node,
        lease=m.lease,
        principal=m.principal,
        principal_kind=m.principal_kind,
        model=m.model,
        input_tokens=m.input_tokens,
        output_tokens=m.output_tokens,
        cache_read_tokens=m.cache_read_tokens,
        cache_write_tokens=m.cache_write_tokens,
        kind=skift.UsageKind(m.kind),
        basis=m.basis,
        created_at=_ts(m.created_at),
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


def report_view(m: v1.UsageReport) -> skift.UsageReport:
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
    return v1.Rate(
        model=r.model,
        input=str(r.input),
        output=str(r.output),
        cache_read=str(r.cache_read),
        cache_write=str(r.cache_write),
        currency=r.currency,
        updated_at=_utc(r.updated_at),
    )


def org_limits_pb(o: skift.OrgLimits) -> v1.OrgLimits:
    return v1.OrgLimits(
        effective={k: v for k in o.server if isinstance(v := getattr(o, k), int)},
        own=list(o.own),
        server=dict(o.server),
    )


def org_limits_view(m: v1.OrgLimits) -> skift.OrgLimits:
    return skift.OrgLimits(**dict(m.effective), own=tuple(m.own), server=dict(m.server))


def rate_view(m: v1.Rate) -> skift.RateInfo:
    return skift.RateInfo(
        model=m.model,
        input=Decimal(m.input),
        output=Decimal(m.output),
        cache_read=Decimal(m.cache_read),
        cache_write=Decimal(m.cache_write),
        currency=m.currency,
        updated_at=_ts(m.updated_at),
    )
