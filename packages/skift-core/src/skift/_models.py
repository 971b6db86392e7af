"""The domain entities: what skift stores.

Frozen, keyword-only attrs classes. Derived facts (blocked, held, claimed,
ready) are never fields here; they are computed by readiness at read time.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any
from uuid import UUID

import attrs

from ._lazy import frozen, on_first_use


class Status(enum.StrEnum):
    """A node's stored status. Nothing else is stored; readiness is derived."""

    OPEN = "open"
    DONE = "done"
    DROPPED = "dropped"


class Priority(enum.StrEnum):
    """Advisory, comparable only within a project. p0 sorts first."""

    P0 = "p0"
    P1 = "p1"
    P2 = "p2"
    P3 = "p3"
    P4 = "p4"

    @property
    def rank(self) -> int:
        return int(self.value[1])


class AssigneeKind(enum.StrEnum):
    """Who may take a node. Unset means agent-eligible; ``user`` makes it a gate."""

    AGENT = "agent"
    USER = "user"


class PrincipalKind(enum.StrEnum):
    USER = "user"
    AGENT = "agent"
    SERVICE = "service"


class EdgeKind(enum.StrEnum):
    """``blocks`` is the only kind that affects readiness."""

    BLOCKS = "blocks"


class ReleaseReason(enum.StrEnum):
    """Why a lease ended, so an orchestrator can tell a gate from a crash."""

    COMPLETE = "complete"
    GATE = "gate"
    CRASH = "crash"
    BUDGET = "budget"
    EXPIRED = "expired"
    PREEMPTED = "preempted"


@frozen(kw_only=True)
class Org:
    id: UUID
    name: str
    created_at: datetime


@frozen(kw_only=True)
class Principal:
    id: UUID
    org_id: UUID
    name: str
    kind: PrincipalKind
    created_at: datetime
    admin: bool = False
    """The organization's ``admin`` role (people only): an admin mints and revokes tokens
    for others, adds principals, invites identities, sets the stored policy and restricts
    projects (``skift._principals``, ``policy/default.rego``)."""


class IdentityScheme(enum.StrEnum):
    """How a transport names who is calling. One principal may hold many identities."""

    UNIX = "unix"  # a uid on a host, from SO_PEERCRED
    TOKEN = "token"  # a bearer credential; only its SHA-256 digest is stored
    OIDC = "oidc"  # an issuer and subject (defined for later)
    TAILSCALE = "tailscale"  # a node identity from WhoIs (defined for later)
    LOCAL = "local"  # an in-process embedder naming its principal


@frozen(kw_only=True)
class Identity:
    """One way of reaching skift as a principal; keyed by scheme and value across the store."""

    id: UUID
    org_id: UUID
    principal_id: UUID
    scheme: IdentityScheme
    value: str
    created_at: datetime
    revoked_at: datetime | None = None


@frozen(kw_only=True)
class IdentityInvite:
    """An admin's invitation: the external identity ``value`` (an OIDC ``issuer|subject``)
    becomes ``principal``'s when its holder signs in with it presenting the invitation's
    code (``code_digest``: ``sha256:<hex>`` of it; None for an invitation made before
    codes, which binds nothing). Deleted when used or cancelled."""

    id: UUID
    org_id: UUID
    principal_id: UUID
    scheme: IdentityScheme
    value: str
    invited_by: UUID
    created_at: datetime
    code_digest: str | None = None


@frozen(kw_only=True)
class Hold:
    """A stored decision to park work: who, when, why, and the focus sweep if any."""

    at: datetime
    by: UUID
    reason: str
    group: UUID | None = None


@frozen(kw_only=True)
class Project:
    id: UUID
    org_id: UUID
    slug: str
    title: str
    node_counter: int = 0
    priority: Priority = Priority.P2
    vcs_url: str = ""
    archived_at: datetime | None = None
    hold: Hold | None = None
    created_at: datetime
    readers: tuple[UUID, ...] | None = None
    """Who may read a restricted project (principal ids); None: unrestricted (everyone of
    the organization, as the default policy reads it)."""


BOOKKEEPING_KIND = "sweep-state"
"""The one kind skift reads: a node that keeps a tool's state (the ce-sweep's state node,
used as its write lock), not work. Ready, ClaimNext and a person's *Waiting on me* leave it
out unless the filter's kinds name it; listings, show and claim by ref treat it as any node."""


@frozen(kw_only=True)
class Node:
    id: UUID
    org_id: UUID
    project_id: UUID
    number: int
    parent_id: UUID | None = None
    kind: str = "task"
    title: str
    body: str = ""
    status: Status = Status.OPEN
    priority: Priority = Priority.P2
    assignee_kind: AssigneeKind | None = None
    assignee: str | None = None
    labels: tuple[str, ...] = ()
    hold: Hold | None = None
    result: str | None = None
    context_id: UUID
    created_by: UUID
    created_at: datetime
    updated_at: datetime

    @property
    def is_gate(self) -> bool:
        return self.assignee_kind is AssigneeKind.USER

    @property
    def is_bookkeeping(self) -> bool:
        """A tool's state, not work (``BOOKKEEPING_KIND``)."""
        return self.kind == BOOKKEEPING_KIND

    def satisfies_edge(self) -> bool:
        """Does this node, as the source of a ``blocks`` edge, let its target go?

        Done satisfies. Dropped satisfies too, except for a gate: a gate is
        satisfied only by completion, so an agent cannot drop its way past one.
        """
        if self.status is Status.DONE:
            return True
        return self.status is Status.DROPPED and not self.is_gate


@frozen(kw_only=True)
class Edge:
    org_id: UUID
    from_id: UUID
    to_id: UUID
    kind: EdgeKind = EdgeKind.BLOCKS
    created_at: datetime


@frozen(kw_only=True)
class Lease:
    """The contract between skift and whatever executes work; ``id`` is the fencing token."""

    id: UUID
    org_id: UUID
    node_id: UUID
    holder: UUID
    harness: str = ""
    agent_ref: str = ""
    session_ref: str = ""
    created_at: datetime
    expires_at: datetime
    ttl: timedelta
    on_behalf_of: UUID | None = None
    released_at: datetime | None = None
    release_reason: ReleaseReason | None = None

    def live(self, now: datetime) -> bool:
        return self.released_at is None and self.expires_at > now


@frozen(kw_only=True)
class Revision:
    """A comment's body as it was before an edit: what it said, who wrote it, when."""

    body: str
    author_id: UUID
    at: datetime


@frozen(kw_only=True)
class Comment:
    """Content attached to a node: its own entity, never an event.

    ``resolved_at``/``resolved_by`` are set once; ``revisions`` keeps every
    prior body, oldest first.
    """

    id: UUID
    org_id: UUID
    project_id: UUID
    node_id: UUID
    author_id: UUID
    body: str
    in_reply_to: UUID | None = None
    created_at: datetime
    edited_at: datetime | None = None
    resolved_at: datetime | None = None
    resolved_by: UUID | None = None
    revisions: tuple[Revision, ...] = ()


@frozen(kw_only=True)
class Event:
    """Immutable record of one change: who, what, why, before and after."""

    id: UUID
    org_id: UUID
    project_id: UUID | None = None
    node_id: UUID | None = None
    principal_id: UUID
    principal_kind: PrincipalKind
    on_behalf_of: UUID | None = None
    identity_scheme: str = "local"
    request_id: str | None = None
    op: str
    reason: str | None = None
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None
    occurred_at: datetime


@frozen(kw_only=True)
class NodeOrigin:
    """One imported node: its source, its id there, and the source's last word (``extra``)."""

    node_id: UUID
    org_id: UUID
    project_id: UUID
    source: str
    external_id: str
    extra: Mapping[str, Any] = attrs.field(factory=dict[str, Any])


if not TYPE_CHECKING:
    __getattr__ = on_first_use(globals())
