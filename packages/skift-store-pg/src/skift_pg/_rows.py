"""How skift's records map to PostgreSQL rows and back (no SQL, no connection)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

import psycopg

from skift import (
    AssigneeKind,
    Budget,
    Comment,
    Edge,
    EdgeKind,
    Event,
    Hold,
    Identity,
    IdentityInvite,
    IdentityScheme,
    Lease,
    Node,
    NodeOrigin,
    Principal,
    PrincipalKind,
    Priority,
    Project,
    ReleaseReason,
    Revision,
    Status,
    UsageKind,
    UsageRecord,
)

Row = dict[str, Any]
Conn = psycopg.AsyncConnection[Row]

_PRIORITIES: list[Priority] = list(Priority)


def _priority(rank: int) -> Priority:
    """The stored rank 0..4 as p0..p4."""
    return _PRIORITIES[rank]


def _hold(row: Row) -> Hold | None:
    if row["held_at"] is None:
        return None
    return Hold(
        at=row["held_at"], by=row["held_by"], reason=row["held_reason"], group=row["hold_group"]
    )


def _hold_params(hold: Hold | None) -> Row:
    if hold is None:
        return {"held_at": None, "held_by": None, "held_reason": None, "hold_group": None}
    return {
        "held_at": hold.at,
        "held_by": hold.by,
        "held_reason": hold.reason,
        "hold_group": hold.group,
    }


def project_from_row(row: Row) -> Project:
    return Project(
        id=row["id"],
        org_id=row["org_id"],
        slug=row["slug"],
        title=row["title"],
        node_counter=row["node_counter"],
        priority=_priority(row["priority"]),
        vcs_url=row["vcs_url"],
        archived_at=row["archived_at"],
        hold=_hold(row),
        created_at=row["created_at"],
        readers=tuple(row["readers"]) if row.get("readers") is not None else None,
    )


def node_from_row(row: Row) -> Node:
    return Node(
        id=row["id"],
        org_id=row["org_id"],
        project_id=row["project_id"],
        number=row["number"],
        parent_id=row["parent_id"],
        kind=row["kind"],
        title=row["title"],
        body=row["body"],
        status=Status(row["status"]),
        priority=_priority(row["priority"]),
        assignee_kind=AssigneeKind(row["assignee_kind"]) if row["assignee_kind"] else None,
        assignee=row["assignee"],
        labels=tuple(row["labels"]),
        hold=_hold(row),
        result=row["result"],
        context_id=row["context_id"],
        created_by=row["created_by"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def edge_from_row(row: Row) -> Edge:
    return Edge(
        org_id=row["org_id"],
        from_id=row["from_id"],
        to_id=row["to_id"],
        kind=EdgeKind(row["kind"]),
        created_at=row["created_at"],
    )


def lease_from_row(row: Row) -> Lease:
    return Lease(
        id=row["id"],
        org_id=row["org_id"],
        node_id=row["node_id"],
        holder=row["holder"],
        harness=row["harness"],
        agent_ref=row["agent_ref"],
        session_ref=row["session_ref"],
        created_at=row["created_at"],
        expires_at=row["expires_at"],
        ttl=row["ttl"],
        on_behalf_of=row["on_behalf_of"],
        released_at=row["released_at"],
        release_reason=ReleaseReason(row["release_reason"]) if row["release_reason"] else None,
    )


def principal_from_row(row: Row) -> Principal:
    return Principal(
        id=row["id"],
        org_id=row["org_id"],
        name=row["name"],
        kind=PrincipalKind(row["kind"]),
        created_at=row["created_at"],
        admin=row["admin"],
    )


def invite_from_row(row: Row) -> IdentityInvite:
    return IdentityInvite(
        id=row["id"],
        org_id=row["org_id"],
        principal_id=row["principal_id"],
        scheme=IdentityScheme(row["scheme"]),
        value=row["value"],
        invited_by=row["invited_by"],
        created_at=row["created_at"],
        code_digest=row["code_digest"],
    )


def identity_from_row(row: Row) -> Identity:
    return Identity(
        id=row["id"],
        org_id=row["org_id"],
        principal_id=row["principal_id"],
        scheme=IdentityScheme(row["scheme"]),
        value=row["value"],
        created_at=row["created_at"],
        revoked_at=row["revoked_at"],
    )


def event_from_row(row: Row) -> Event:
    return Event(
        id=row["id"],
        org_id=row["org_id"],
        project_id=row["project_id"],
        node_id=row["node_id"],
        principal_id=row["principal_id"],
        principal_kind=PrincipalKind(row["principal_kind"]),
        on_behalf_of=row["on_behalf_of"],
        identity_scheme=row["identity_scheme"],
        request_id=row["request_id"],
        op=row["op"],
        reason=row["reason"],
        before=row["before"],
        after=row["after"],
        occurred_at=row["occurred_at"],
    )


def comment_from_row(row: Row, revisions: tuple[Revision, ...] = ()) -> Comment:
    return Comment(
        id=row["id"],
        org_id=row["org_id"],
        project_id=row["project_id"],
        node_id=row["node_id"],
        author_id=row["author_id"],
        body=row["body"],
        in_reply_to=row["in_reply_to"],
        created_at=row["created_at"],
        edited_at=row["edited_at"],
        resolved_at=row["resolved_at"],
        resolved_by=row["resolved_by"],
        revisions=revisions,
    )


def usage_from_row(row: Row) -> UsageRecord:
    return UsageRecord(
        id=row["id"],
        org_id=row["org_id"],
        project_id=row["project_id"],
        node_id=row["node_id"],
        lease_id=row["lease_id"],
        principal_id=row["principal_id"],
        model=row["model"],
        input_tokens=row["input_tokens"],
        output_tokens=row["output_tokens"],
        cache_read_tokens=row["cache_read_tokens"],
        cache_write_tokens=row["cache_write_tokens"],
        kind=UsageKind(row["kind"]),
        basis=row["basis"],
        created_at=row["created_at"],
    )


def budget_from_row(row: Row) -> Budget:
    return Budget(
        org_id=row["org_id"],
        scope_id=row["scope_id"],
        scope=row["scope"],
        budget=row["budget"],
        cap=row["cap"],
        updated_at=row["updated_at"],
    )


def origin_from_row(row: Row) -> NodeOrigin:
    return NodeOrigin(
        node_id=row["node_id"],
        org_id=row["org_id"],
        project_id=row["project_id"],
        source=row["source"],
        external_id=row["external_id"],
        extra=row["extra"],
    )


def comment_params(c: Comment) -> Row:
    return {
        "org": c.org_id,
        "id": c.id,
        "project_id": c.project_id,
        "node_id": c.node_id,
        "author_id": c.author_id,
        "body": c.body,
        "in_reply_to": c.in_reply_to,
        "created_at": c.created_at,
        "edited_at": c.edited_at,
        "resolved_at": c.resolved_at,
        "resolved_by": c.resolved_by,
    }


def node_params(n: Node) -> Row:
    return {
        "id": n.id,
        "org": n.org_id,
        "project_id": n.project_id,
        "number": n.number,
        "parent_id": n.parent_id,
        "kind": n.kind,
        "title": n.title,
        "body": n.body,
        "status": n.status.value,
        "priority": n.priority.rank,
        "assignee_kind": n.assignee_kind.value if n.assignee_kind else None,
        "assignee": n.assignee,
        "labels": list(n.labels),
        "result": n.result,
        "context_id": n.context_id,
        "created_by": n.created_by,
        "created_at": n.created_at,
        "updated_at": n.updated_at,
        **_hold_params(n.hold),
    }


def project_params(p: Project) -> Row:
    return {
        "id": p.id,
        "org": p.org_id,
        "slug": p.slug,
        "title": p.title,
        "node_counter": p.node_counter,
        "priority": p.priority.rank,
        "vcs_url": p.vcs_url,
        "archived_at": p.archived_at,
        "created_at": p.created_at,
        "readers": list(p.readers) if p.readers is not None else None,
        **_hold_params(p.hold),
    }


def lease_params(lease: Lease) -> Row:
    return {
        "id": lease.id,
        "org": lease.org_id,
        "node_id": lease.node_id,
        "holder": lease.holder,
        "harness": lease.harness,
        "agent_ref": lease.agent_ref,
        "session_ref": lease.session_ref,
        "created_at": lease.created_at,
        "expires_at": lease.expires_at,
        "ttl": lease.ttl,
        "on_behalf_of": lease.on_behalf_of,
        "released_at": lease.released_at,
        "release_reason": lease.release_reason.value if lease.release_reason else None,
    }


def ready_keys(keys: Sequence[tuple[UUID, int, datetime, int]]) -> Row:
    """A Ready walk's position in each project (``ReadyQuery.after_keys``) as ready_heads
    takes it: one array per part, an element per project."""
    parts = list(zip(*keys, strict=True)) if keys else [(), (), (), ()]
    return {name: list(col) for name, col in zip(("kp", "kr", "kc", "kn"), parts, strict=True)}


def org_lock_key(org_id: UUID) -> int:
    digest = hashlib.sha256(b"skift-graph:" + org_id.bytes).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def principals_lock_key(org_id: UUID) -> int:
    """The advisory lock that serializes adding people to one organization (its first
    person is its admin: two arriving at once must not both be)."""
    digest = hashlib.sha256(b"skift-principals:" + org_id.bytes).digest()
    return int.from_bytes(digest[:8], "big", signed=True)
