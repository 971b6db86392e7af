"""What the API returns: nodes as a caller sees them, pages, results, explanations.

These are the shapes of SURFACE.md. References are ``slug#N`` strings and ids
are ULID strings, so a caller never handles a store's internal form.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import attrs

from ._lazy import frozen, on_first_use
from ._models import AssigneeKind, Priority, ReleaseReason, Status
from ._parts import ArtifactInfo


@frozen(kw_only=True)
class NodeInfo:
    """A node with its derived state, as every response carries it.

    ``body_author``/``body_author_kind`` name who created the node or last set
    its body; ``result_author``/``result_author_kind`` who completed it last
    (None if it never was). Both are derived from the node's events. They are
    filled where the node's content is what the call is for (``get``, a claimed
    node, ``list_nodes(attributed=True)``) and None elsewhere (Ready pages,
    listings, patch results, search hits), which keeps that cost off the Ready path.
    """

    ref: str
    id: str
    number: int
    project: str
    title: str
    body: str
    kind: str
    status: Status
    priority: Priority
    parent: str | None
    labels: tuple[str, ...]
    assignee_kind: AssigneeKind | None
    assignee: str | None
    context_id: str
    created_at: datetime
    blocked: bool
    held: bool
    claimed: bool
    ready: bool
    result: str | None = None
    human_written: bool = False
    body_author: str | None = None
    body_author_kind: str | None = None
    result_author: str | None = None
    result_author_kind: str | None = None
    lease: LeaseInfo | None = None
    """``get`` only: the live lease while the node is claimed (its ``id`` only to its holder)."""


@frozen(kw_only=True)
class ProjectInfo:
    id: str
    slug: str
    title: str
    priority: Priority
    vcs_url: str
    archived: bool
    archived_at: datetime | None
    held: bool
    hold_reason: str | None
    created_at: datetime
    active_at: datetime
    node_count: int
    readers: tuple[str, ...] | None = None
    """A restricted project's readers (principal names); None: unrestricted."""


@frozen(kw_only=True)
class Resolved:
    """What a reference resolves to, with the title so a caller can check itself."""

    ref: str
    id: str
    title: str


@frozen(kw_only=True)
class PatchResult:
    request_id: str
    created: dict[str, str]
    dropped: tuple[str, ...]
    nodes: tuple[NodeInfo, ...]
    parked: int = 0


@frozen(kw_only=True)
class FocusResult:
    """What a focus sweep (or clearing one) did in its scope.

    ``scope`` is ``org`` or the project's slug; ``held`` and ``released`` name
    projects (org scope) or node refs (project scope); ``parked`` counts the
    open nodes the new holds park.
    """

    scope: str
    group: str | None
    held: tuple[str, ...]
    released: tuple[str, ...]
    parked: int


@frozen(kw_only=True)
class ReadyPage:
    """A page of nodes. ``held_count`` counts the nodes matching the filter that a
    hold parks, up to ``Limits.held_count_bound``; past it the count stops there
    and ``held_count_exact`` is False ("at least held_count")."""

    nodes: tuple[NodeInfo, ...]
    held_count: int
    next_page: str | None
    held_count_exact: bool = True
    ends: Sequence[str] = attrs.field(default=(), eq=False, repr=False)
    """The page's position after each node (a transport that sends fewer nodes than the
    page holds goes on from there)."""


@frozen(kw_only=True)
class Reason:
    """One reason a node is not ready: ``kind`` plus details (see SURFACE.md)."""

    kind: str
    detail: dict[str, Any] = attrs.field(factory=dict[str, Any])


@frozen(kw_only=True)
class Explanation:
    ref: str
    title: str
    ready: bool
    reasons: tuple[Reason, ...]

    def kinds(self) -> list[str]:
        return [r.kind for r in self.reasons]


@frozen(kw_only=True)
class LeaseInfo:
    id: str
    node: str
    holder: str
    expires_at: datetime
    created_at: datetime
    harness: str = ""
    agent_ref: str = ""
    session_ref: str = ""
    released_at: datetime | None = None
    release_reason: ReleaseReason | None = None
    title: str = ""
    """The node's title (``live_leases`` fills it)."""


@frozen(kw_only=True)
class Input:
    """A predecessor's result, attributed to who completed it (``author``, ``author_kind``:
    ``agent``, ``user`` or ``service``; None if it was never completed)."""

    ref: str
    title: str
    result: str | None
    author: str | None
    author_kind: str | None = None
    artifacts: tuple[ArtifactInfo, ...] = ()


@frozen(kw_only=True)
class CommentsHint:
    unresolved: int = 0
    newest_at: datetime | None = None


@frozen(kw_only=True)
class CommentRevision:
    """A comment's body before one of its edits, attributed to who wrote it."""

    body: str
    author: str
    author_kind: str
    at: datetime


@frozen(kw_only=True)
class CommentInfo:
    """A comment as a caller sees it: ``in_reply_to`` threads it, ``revisions`` are prior bodies."""

    id: str
    node: str
    node_title: str
    author: str
    author_kind: str
    body: str
    in_reply_to: str | None
    created_at: datetime
    edited_at: datetime | None = None
    resolved_at: datetime | None = None
    resolved_by: str | None = None
    revisions: tuple[CommentRevision, ...] = ()


@frozen(kw_only=True)
class SearchHit:
    """One node a search found: ``matched`` names the fields holding a query word."""

    node: NodeInfo
    rank: float
    matched: tuple[str, ...]
    snippet: str


@frozen(kw_only=True)
class Claim:
    node: NodeInfo
    lease: LeaseInfo
    inputs: tuple[Input, ...]
    comments: CommentsHint
    input_ends: Sequence[str] = attrs.field(default=(), eq=False, repr=False)
    """The position after each input (``inputs(page=...)`` goes on from it: a transport
    that sends fewer inputs than the claim holds)."""


@frozen(kw_only=True)
class EventInfo:
    """One change. ``cursor`` is its place in the change stream: ``watch_events(after=cursor)``
    returns what committed after it (docs/events.md)."""

    id: str
    op: str
    project: str | None
    node: str | None
    principal: str
    principal_kind: str
    identity_scheme: str
    reason: str | None
    request_id: str | None
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    occurred_at: datetime
    # Not part of equality: the same event read twice is the same event, while the
    # cursor of one not yet below the horizon is that moment's horizon.
    cursor: str = attrs.field(default="", eq=False)


@frozen(kw_only=True)
class EventPage:
    """A read of the change stream: events in commit order, and where to read next.

    ``cursor`` is the position to pass as ``after`` next time; it moves past
    what the filters left out, so nothing is read twice or skipped.
    """

    events: tuple[EventInfo, ...]
    cursor: str


@frozen(kw_only=True)
class IdentityInfo:
    """One identity of a principal. A token shows its id, never its secret or digest."""

    id: str
    scheme: str
    value: str
    created_at: datetime
    revoked: bool


@frozen(kw_only=True)
class WhoAmI:
    """Who the caller is to this skift and what it serves (``skift status``).

    ``admin`` is None where the server does not say (no organization admin role yet).
    ``database`` names the store without a password: ``memory:`` or the PostgreSQL DSN.
    """

    principal: str
    kind: str
    org: str
    admin: bool | None
    version: str
    database: str


@frozen(kw_only=True)
class PrincipalInfo:
    id: str
    name: str
    kind: str
    identities: tuple[IdentityInfo, ...]
    created_at: datetime
    admin: bool = False
    """An admin of the organization (``grant_admin``; people only)."""


@frozen(kw_only=True)
class InviteInfo:
    """An admin's pending invitation: ``value`` (an OIDC ``issuer|subject``) becomes
    ``principal``'s identity when its holder signs in with it and presents ``code``.

    ``code`` is the invitation's secret, in the answer to the invitation only (the admin
    gives it to the person; it is stored as a digest): empty in a listing, and for an
    invitation made before codes existed (it binds nothing: invite again)."""

    id: str
    principal: str
    scheme: str
    value: str
    invited_by: str
    created_at: datetime
    code: str = ""


@frozen(kw_only=True)
class TokenInfo:
    """A new bearer token. ``token`` is the secret: shown here once, stored only as a digest."""

    id: str
    principal: str
    token: str
    created_at: datetime


if not TYPE_CHECKING:
    __getattr__ = on_first_use(globals())
