"""The seam between the engine and a store.

A store is a transactional unit of work with graph primitives: load and lock
rows, walk the wait relation, allocate node numbers, write rows, append
events. It holds no rules. The rules live in the engine (``_engine``); the one
exception allowed is readiness and the turn order, which a store must be able
to compute where its rows are (SQL in PostgreSQL, the reference Python in
``_readiness`` for the in-memory store). A hypothesis state machine keeps the
two equal.

Every transaction is scoped to one organization; a store never returns a row
of another organization from it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from contextvars import ContextVar
from datetime import datetime, timedelta
from typing import Any, Protocol
from uuid import UUID

from ._blobs import BlobStore
from ._models import (
    Comment,
    Edge,
    Event,
    Identity,
    IdentityInvite,
    Lease,
    Node,
    NodeOrigin,
    Org,
    Principal,
    PrincipalKind,
    Project,
    Revision,
    Status,
)
from ._parts import ArtifactRecord, BlobRecord
from ._policy_records import StoredPolicy
from ._signin import SigninStore
from ._store_records import (
    NIL_ID,
    NOT_SIMPLE,
    Authors,
    Derived,
    EventBatch,
    EventPosition,
    NotSimple,
    ProjectPage,
    PruneReport,
    ReadyQuery,
    Restriction,
    SearchQuery,
    StoredRequest,
    StoreStats,
    UpstreamCone,
    Writer,
)
from ._usage_records import Budget, Rate, UsageRecord, UsageScope, UsageTotal
from ._webhook_records import Delivery, DeliveryStats, DueDelivery, Endpoint

WAITING: ContextVar[bool] = ContextVar("skift_waiting", default=False)
"""True while a long poll (ClaimNext or WatchEvents with a wait) runs: a store may give
such calls fewer of its connections, keeping the rest for ordinary calls (PostgreSQL
does: ``skift_pg.PgStore``'s ``poll_connections``)."""


__all__ = [
    "NIL_ID",
    "NOT_SIMPLE",
    "WAITING",
    "Authors",
    "Derived",
    "EventBatch",
    "EventPosition",
    "NotSimple",
    "ProjectPage",
    "PruneReport",
    "ReadyQuery",
    "Restriction",
    "SearchQuery",
    "Store",
    "StoreStats",
    "StoredRequest",
    "TransientError",
    "Tx",
    "UpstreamCone",
    "Writer",
]


class TransientError(Exception):
    """A store failure that is safe to retry as a whole transaction.

    A deadlock, a serialization failure, or a row claimed concurrently between
    a statement's snapshot and its lock.
    """


class Tx(Protocol):
    """One transaction in one organization."""

    @property
    def org_id(self) -> UUID: ...

    async def secret(self, name: str) -> bytes:
        """The store's server secret ``name`` (see :meth:`Store.secret`)."""
        ...

    async def now(self) -> datetime:
        """The store's clock (the database's in PostgreSQL), fixed for the transaction."""
        ...

    async def expect_identity(
        self, scheme: str, value: str, check: Callable[[Principal | None], None]
    ) -> None:
        """Have ``check`` judge who holds the live identity ``scheme``/``value`` now (None:
        nobody), before this transaction hands back any row or commits; ``check`` raises
        to refuse. PostgreSQL sends the read with the transaction's first statement, so it
        costs no round trip of its own (a transport's per-call identity check)."""
        ...

    # principals
    async def principal_by_name(self, name: str) -> Principal | None: ...
    async def principals_by_id(self, ids: Collection[UUID]) -> dict[UUID, Principal]: ...
    async def insert_principal(self, principal: Principal) -> None: ...

    async def list_principals(self) -> list[Principal]: ...
    async def insert_identity(self, identity: Identity) -> None:
        """Attach an identity; :class:`~skift.Conflict` if a live one has the same scheme and value."""
        ...

    async def identities_of(self, principal_id: UUID) -> list[Identity]: ...
    async def identity_by_id(self, identity_id: UUID) -> Identity | None: ...
    async def revoke_identity(self, identity_id: UUID) -> bool: ...
    async def set_admin(self, principal_id: UUID, admin: bool) -> None:
        """Give or take the organization's ``admin`` role."""
        ...

    async def lock_principals(self) -> None:
        """Serialize adding people to the organization until the transaction ends: whoever
        looks after this sees every person added before (the first person is its admin,
        and :meth:`Store.ensure_principal` takes the same lock)."""
        ...

    async def admins(self, *, lock: bool = False) -> list[UUID]:
        """The organization's admins; ``lock`` holds their rows until the transaction ends
        (so two revocations cannot each leave the other as the last admin and both go)."""
        ...

    async def put_invite(self, invite: IdentityInvite) -> None:
        """Record an invitation, replacing the organization's invitation of the same
        identity if any."""
        ...

    async def invites(self) -> list[IdentityInvite]:
        """The organization's pending invitations, oldest first."""
        ...

    async def take_invite(self, invite_id: UUID) -> bool:
        """Use up an invitation (delete it); False when it is gone already."""
        ...

    async def human_written(self, ids: Collection[UUID]) -> set[UUID]:
        """Which of these nodes a user principal has ever written to (from events)."""
        ...

    async def authors(self, ids: Collection[UUID]) -> dict[UUID, Authors]:
        """Who wrote the body and the result of each of these nodes (see :class:`Authors`).

        One read for all of them (one statement in PostgreSQL); a node with no
        such events maps to an empty :class:`Authors`.
        """
        ...

    # projects
    async def project_by_id(self, project_id: UUID, *, lock: bool = False) -> Project | None: ...
    async def project_by_slug(self, slug: str) -> Project | None:
        """The project a current or retired slug names."""
        ...

    async def projects_by_id(self, ids: Collection[UUID]) -> dict[UUID, Project]: ...
    async def slugs_like(self, base: str) -> set[str]:
        """Every slug, current or retired, equal to ``base`` or starting ``base-``."""
        ...

    async def insert_project(self, project: Project) -> None: ...
    async def update_project(self, project: Project) -> None:
        """Write the row; a changed slug is added to the project's slugs, the old one kept."""
        ...

    async def list_projects(
        self, *, archived: bool, limit: int, offset: int, hidden: Collection[UUID] = ()
    ) -> list[Project]:
        """Projects in activity order, most recent first; archived ones only when asked;
        never those in ``hidden``."""
        ...

    async def project_page(
        self,
        *,
        archived: bool,
        limit: int,
        hidden: Collection[UUID] = (),
        asof: EventPosition | None = None,
        after: tuple[datetime, UUID] | None = None,
    ) -> ProjectPage:
        """Up to ``limit`` projects by activity as of ``asof`` (the store's horizon when
        None): each project's last event below that position in the change stream, else
        its creation, most recent first, then by id descending; only those after
        ``after`` (an (activity, id) key) in that order. Events at or past ``asof`` do not
        move a project, so every page of one walk orders the projects alike."""
        ...

    async def restricted_projects(self) -> list[Restriction]:
        """The projects that carry a reader list (``Project.readers``), archived or not,
        by id. Asked once per request; PostgreSQL brings it along with the transaction's
        first statement (its clock, or Ready's claim cursor), so it costs no round trip."""
        ...

    async def project_activity(self, ids: Collection[UUID]) -> dict[UUID, datetime]:
        """When each project last saw an event (its activity time, derived from events)."""
        ...

    async def allocate_numbers(self, project_id: UUID, count: int) -> int:
        """Reserve ``count`` node numbers on the project row; returns the first."""
        ...

    # nodes
    async def nodes_by_id(
        self, ids: Collection[UUID], *, lock: bool = False
    ) -> dict[UUID, Node]: ...
    async def node_by_number(
        self, project_id: UUID, number: int, *, lock: bool = False
    ) -> Node | None: ...
    async def insert_nodes(self, nodes: Sequence[Node]) -> None: ...
    async def update_node(self, node: Node) -> None: ...
    async def children_of(self, ids: Collection[UUID]) -> list[Node]: ...
    async def ancestors(self, node_id: UUID) -> list[Node]:
        """The parent chain of a node, nearest first."""
        ...

    async def upstream_cone(
        self, root_id: UUID, bound: int, *, hidden: Collection[UUID] = ()
    ) -> UpstreamCone:
        """Explain's cone (see :class:`UpstreamCone`): at most ``bound`` nodes in it (an
        edge from outside them is left out), and the parents above them. One statement
        in PostgreSQL."""
        ...

    # edges
    async def edges_into(self, ids: Collection[UUID]) -> list[Edge]: ...
    async def edges_out_of(self, ids: Collection[UUID]) -> list[Edge]: ...
    async def input_sources(
        self,
        node_id: UUID,
        *,
        after: tuple[UUID, int] | None,
        limit: int | None,
        hidden: Collection[UUID] = (),
    ) -> list[Node]:
        """The nodes with an edge into ``node_id`` (its inputs' sources) by project then
        number, after that (project id, number) key, at most ``limit`` (None: all), none
        in ``hidden`` projects."""
        ...

    async def insert_edges(self, edges: Sequence[Edge]) -> None: ...
    async def delete_edge(self, from_id: UUID, to_id: UUID, kind: str) -> bool: ...
    async def wait_arcs_from(self, ids: Collection[UUID]) -> list[tuple[UUID, UUID]]:
        """Every arc (waiter, waited_on) reachable from ``ids`` along the wait relation.

        The wait relation is the union of ``blocks`` edges (the target waits on
        the source) and containment (a parent waits on each child).
        """
        ...

    # leases
    async def live_leases(self, node_ids: Collection[UUID]) -> dict[UUID, Lease]: ...
    async def lease_by_id(self, lease_id: UUID, *, lock: bool = False) -> Lease | None: ...
    async def unreleased_lease(self, node_id: UUID) -> Lease | None: ...
    async def insert_lease(self, lease: Lease) -> None: ...
    async def update_lease(self, lease: Lease) -> None: ...
    async def lease_history(self, node_id: UUID) -> list[Lease]: ...
    async def org_live_leases(
        self, project_ids: Collection[UUID] | None, limit: int
    ) -> list[Lease]:
        """The organization's live leases (of these projects when given), oldest first."""
        ...

    async def expired_leases(self, limit: int) -> list[Lease]:
        """Unreleased leases whose time has run out, oldest first, locked, skipping locked."""
        ...

    # derived state: the rule that may exist twice
    async def derive(self, ids: Collection[UUID]) -> dict[UUID, Derived]: ...
    async def ready(self, query: ReadyQuery) -> list[Node]: ...
    async def list_nodes(
        self, query: ReadyQuery, *, status: Status | None, held: bool | None
    ) -> list[Node]:
        """Nodes matching the filter in any state, by project (ascending id) then number."""
        ...

    async def held_count(self, query: ReadyQuery, *, at_most: int | None = None) -> int:
        """How many nodes in the query's scope would be ready but for a hold.

        With ``at_most``, the count stops there: the answer is the smaller of the
        true count and ``at_most`` (the caller asks for one more than it shows to
        know whether the count is exact).
        """
        ...

    async def lock_next_ready(self, query: ReadyQuery) -> Node | None:
        """Lock and return the first node of the turn order, skipping rows others hold.

        That is the top ready node (priority, age, number) of the first project
        after ``query.after_project`` that has one, wrapping around.
        """
        ...

    def expect_complete(
        self, ref: str, *, lease: str | None, principal_id: UUID, request_id: str, sized: bool
    ) -> None:
        """A hint, before anything is read: this transaction is a patch of one complete_node
        on ``ref``, under ``lease``, by ``principal_id`` with ``request_id`` (``sized``: its
        result is checked against the organization's sizes). A store may send the reads the
        engine will ask next with its first read (PostgreSQL: one round trip for the project,
        the request's reservation, the node, the lease and the node's derived facts); the
        answers are the same either way. The in-memory store ignores it."""
        ...

    async def take_next_ready(
        self, principal_id: UUID, filter_hash: str, query: ReadyQuery
    ) -> Node | NotSimple | None:
        """ClaimNext's take in one step where nothing needs deciding first: the caller's
        cursor for ``filter_hash`` read, and :meth:`lock_next_ready` of ``query`` after it.

        Only when nothing in the organization makes ``query.hidden`` or ``query.exclude``
        other than empty (no restricted project, no stored policy, no cap; the caller
        sends them empty): otherwise nothing is locked and the answer is ``NOT_SIMPLE``,
        and the caller reads the cursor, works the filter out and calls lock_next_ready.
        A store may always answer ``NOT_SIMPLE`` (the in-memory store, the reference,
        does): it is a shortcut of the same rule, never another rule.
        """
        ...

    # claim cursors
    async def get_cursor(self, principal_id: UUID, filter_hash: str) -> UUID | None: ...
    async def set_cursor(self, principal_id: UUID, filter_hash: str, project_id: UUID) -> None: ...

    # idempotency
    async def reserve_request(
        self, principal_id: UUID, request_id: str, fingerprint: str
    ) -> StoredRequest | None:
        """Reserve a request id; if it was already used, return what was stored."""
        ...

    async def save_response(
        self, principal_id: UUID, request_id: str, response: dict[str, Any]
    ) -> None: ...

    async def request_applied_at(self, principal_id: UUID, request_id: str) -> datetime | None:
        """When this principal's events first carried this request id (its record may
        have been pruned: ``skift._retention``), or None if none does."""
        ...

    # comments
    async def insert_comment(self, comment: Comment) -> None: ...
    async def update_comment(self, comment: Comment, *, revision: Revision | None = None) -> None:
        """Write a comment's body, edit and resolution; ``revision`` (the prior body) is appended."""
        ...

    async def comment_by_id(self, comment_id: UUID, *, lock: bool = False) -> Comment | None: ...
    async def comments_of(self, node_ids: Collection[UUID]) -> list[Comment]:
        """The comments on these nodes, with their revisions, oldest first."""
        ...

    async def comment_hint(self, node_id: UUID) -> tuple[int, datetime | None]:
        """How many of a node's comments are unresolved, and when the newest of them was written."""
        ...

    # search
    async def search(self, query: SearchQuery) -> list[tuple[Node, float]]:
        """The matching nodes with their rank, best first (see :class:`SearchQuery`)."""
        ...

    # usage and cost (skift._usage)
    async def insert_usage(self, record: UsageRecord) -> None: ...
    async def usage_records(self, scope: UsageScope, limit: int) -> list[UsageRecord]:
        """The newest ``limit`` usage records in the scope, newest first."""
        ...

    async def usage_totals(self, scope: UsageScope) -> list[UsageTotal]:
        """Token sums per kind and model: every actual, and each node's newest estimate only."""
        ...

    async def rates(self) -> list[Rate]: ...
    async def org_limits(self) -> dict[str, int]:
        """The size limits this organization set itself (name to value); {} when none."""
        ...

    async def set_org_limits(self, limits: Mapping[str, int]) -> None:
        """Replace the organization's own size limits ({} clears them all)."""
        ...

    async def org_policy_digest(self) -> str:
        """The digest of the organization's stored policy modules ("" when none are stored):
        read by every transaction that asks the policy, so it must be one cheap lookup."""
        ...

    async def org_policy(self) -> StoredPolicy | None:
        """The organization's stored policy record (None: never set)."""
        ...

    async def set_org_policy(self, policy: StoredPolicy) -> None:
        """Replace the organization's stored policy record (no modules: the base alone)."""
        ...

    async def upsert_rate(self, rate: Rate) -> None: ...
    async def budgets(self, scope_ids: Collection[UUID]) -> dict[UUID, Budget]:
        """The budget rows of these nodes or projects (by id)."""
        ...

    async def set_budget(self, budget: Budget) -> None: ...
    async def capped_nodes(self) -> list[Budget]:
        """Every node budget row that carries a cap."""
        ...

    async def subtree_ids(self, root: UUID) -> list[UUID]:
        """A node and all its descendants (through parent_id)."""
        ...

    # artifacts and blob metadata (skift._artifacts); the bytes live in Store.blobs
    async def insert_artifacts(self, artifacts: Sequence[ArtifactRecord]) -> None: ...
    async def artifacts_of(self, node_ids: Collection[UUID]) -> list[ArtifactRecord]:
        """The artifacts of these nodes, oldest first."""
        ...

    async def count_artifacts(self, node_id: UUID) -> int: ...

    # keyset pages (skift._pages): the rows after the key ``after`` in the list's order,
    # ``limit`` of them (every one when None); the rules of a page are the caller's
    async def comment_page(
        self, node_id: UUID, *, after: tuple[datetime, UUID] | None, limit: int | None
    ) -> list[Comment]:
        """A node's comments with their revisions, by (created_at, id)."""
        ...

    async def artifact_page(
        self, node_id: UUID, *, after: tuple[datetime, UUID] | None, limit: int | None
    ) -> list[ArtifactRecord]:
        """A node's artifacts, by (created_at, id)."""
        ...

    async def lease_page(
        self, node_id: UUID, *, after: tuple[datetime, UUID] | None, limit: int | None
    ) -> list[Lease]:
        """Every attempt on a node, by (created_at, id)."""
        ...

    async def live_lease_page(
        self,
        project_ids: Collection[UUID] | None,
        *,
        holder: UUID | None,
        hidden: Collection[UUID],
        after: tuple[datetime, UUID] | None,
        limit: int | None,
    ) -> list[Lease]:
        """The organization's live leases by (created_at, id): of nodes of ``project_ids``
        (any when None) outside the ``hidden`` projects, held by ``holder`` when given."""
        ...

    async def principal_page(
        self, *, after: tuple[str, UUID] | None, limit: int | None
    ) -> list[Principal]:
        """The organization's principals, by (name, id)."""
        ...

    async def rate_page(self, *, after: str | None, limit: int | None) -> list[Rate]:
        """The organization's rates, by model."""
        ...

    async def endpoint_page(
        self,
        project_id: UUID | None,
        *,
        hidden: Collection[UUID],
        after: UUID | None,
        limit: int | None,
    ) -> list[Endpoint]:
        """A project's endpoints (every project's outside ``hidden`` when None), by id."""
        ...

    async def blob(self, digest: str) -> BlobRecord | None:
        """This organization's record of a blob, if it uploaded one with this digest."""
        ...

    async def readable_blob(
        self, digest: str, principal_id: UUID, hidden: Collection[UUID]
    ) -> BlobRecord | None:
        """This organization's record of a blob if the principal may read it: an artifact of
        a node outside the ``hidden`` projects names it, or no artifact names it and the
        principal uploaded it; else None, as for a digest nobody stored (one read either way)."""
        ...

    async def insert_blob(self, blob: BlobRecord) -> None:
        """Record a blob for this organization; a digest already recorded keeps its row,
        touched (``touched_at`` = ``blob.created_at``: its sweep grace starts over)."""
        ...

    async def touch_blob(self, digest: str) -> BlobRecord | None:
        """This organization's record of a blob, touched now (an artifact is about to name
        it), or None. A sweep running at the same time either keeps the row (it sees the
        touch) or removed it first (then None): never a row removed under an attach."""
        ...

    async def lock_blob(self, digest: str) -> None:
        """Hold off a blob sweep from these bytes until this transaction ends (an upload
        writes them and records its row inside it)."""
        ...

    # imports (skift._importer): where imported nodes came from; many rows at once
    async def origins_of_project(self, project_id: UUID, source: str) -> list[NodeOrigin]: ...
    async def origins_by_external_id(self, external_id: str) -> list[NodeOrigin]:
        """Every origin with this external id, in any project of the organization."""
        ...

    async def upsert_origins(self, origins: Sequence[NodeOrigin]) -> None: ...
    async def insert_comments(self, comments: Sequence[Comment]) -> None:
        """Add many comments at once (an import), each with its own author and time."""
        ...

    # events
    async def append_events(self, events: Sequence[Event]) -> None: ...
    async def events(
        self,
        *,
        node_id: UUID | None = None,
        limit: int = 1000,
        hidden: Collection[UUID] = (),
        before: UUID | None = None,
    ) -> list[Event]:
        """The newest ``limit`` events (of one node, when given), oldest first, none of a
        project in ``hidden``; with ``before``, only events older than that one (the next
        page back: only its own rows are read)."""
        ...

    # the change stream (skift._stream): commit-ordered positions
    async def events_after(
        self,
        after: EventPosition,
        *,
        projects: Collection[UUID] = (),
        ops: Collection[str] = (),
        limit: int,
        hidden: Collection[UUID] = (),
        whole: bool = False,
    ) -> EventBatch:
        """At most ``limit`` events strictly after ``after`` and below the horizon, in
        commit order, of these projects (all when empty) and operations (all when
        empty), none of a project in ``hidden``, read together with the horizon (one
        statement in PostgreSQL).

        ``whole``: every event this transaction sees, above the horizon too. For a reader
        that takes everything in one snapshot (an archive export); a stream must not, as a
        transaction still running anywhere on the server may yet commit below it."""
        ...

    async def replay_start(self, since: datetime) -> EventPosition:
        """The position just before the oldest event that occurred at or after ``since``
        or that may still commit: the lower of its ``seq`` and the horizon's, nil id."""
        ...

    async def event_positions(
        self, ids: Collection[UUID]
    ) -> tuple[dict[UUID, EventPosition], EventPosition]:
        """The positions of these events, and the horizon (read together)."""
        ...

    # webhooks (skift._webhooks). append_events also coalesces what it appends into
    # the open delivery of every endpoint (enabled or not) of the events' projects
    # that wants their operations and was created before them: counts added,
    # ``through`` moved to the newest of them (a new open delivery when none is).
    async def insert_endpoint(self, endpoint: Endpoint, *, start_event: UUID) -> None:
        """Write an endpoint whose watermark is the position of ``start_event``, an event
        this transaction appended."""
        ...

    async def endpoint_by_id(self, endpoint_id: UUID, *, lock: bool = False) -> Endpoint | None: ...
    async def endpoint_by_url(self, project_id: UUID, url: str) -> Endpoint | None: ...
    async def endpoints(self, project_id: UUID | None) -> list[Endpoint]:
        """A project's endpoints (every project's when None), oldest first."""
        ...

    async def update_endpoint(self, endpoint: Endpoint) -> None:
        """Write an endpoint's secret, events and disabled_at."""
        ...

    async def deliveries(
        self,
        *,
        endpoint_id: UUID | None,
        project_id: UUID | None,
        parked_only: bool,
        limit: int,
        hidden: Collection[UUID] = (),
        after: tuple[datetime, UUID] | None = None,
    ) -> list[Delivery]:
        """Deliveries newest first (created_at, id descending), of one endpoint and/or
        project (all when None), none of the ``hidden`` projects, only those after the
        (created_at, id) key ``after`` in that order."""
        ...

    async def delivery_by_id(self, delivery_id: UUID, *, lock: bool = False) -> Delivery | None: ...
    async def insert_delivery(self, delivery: Delivery) -> None: ...
    async def update_delivery(self, delivery: Delivery) -> None:
        """Write a delivery's attempts, next_attempt_at, delivered_at and parked_at."""
        ...


class Store(Protocol):
    """A place skift keeps its graph."""

    @property
    def blobs(self) -> BlobStore:
        """Where blob bytes live (content-addressed, shared by every organization)."""
        ...

    @property
    def signins(self) -> SigninStore:
        """Board sign-in codes and sessions (``skift._signin``), shared by every organization."""
        ...

    def transaction(
        self, org_id: UUID, *, graph_lock: bool = False
    ) -> AbstractAsyncContextManager[Tx]:
        """Begin a transaction in one organization.

        ``graph_lock`` serializes writes that change the wait relation within
        the organization, so two concurrent patches cannot each add half of a
        cycle.
        """
        ...

    async def ensure_org(self, name: str) -> Org: ...
    async def org_by_id(self, org_id: UUID) -> Org | None: ...
    async def list_orgs(self) -> list[Org]:
        """Every organization, oldest first (the first is the server's own)."""
        ...

    async def org_page(self, *, after: tuple[datetime, str] | None, limit: int | None) -> list[Org]:
        """The organizations by (created_at, name), after the key ``after``, ``limit`` of
        them (every one when None)."""
        ...

    async def principal_by_identity(self, scheme: str, value: str) -> Principal | None:
        """Authentication: who holds this live identity, in any organization."""
        ...

    async def invites_for_identity(self, scheme: str, value: str) -> list[IdentityInvite]:
        """Sign-in of an identity nobody holds: the invitations of it, in any organization."""
        ...

    async def ensure_principal(self, org_id: UUID, name: str, kind: PrincipalKind) -> Principal:
        """The principal of this name, created on first use; the organization's first person
        is created with the ``admin`` role."""
        ...

    async def wait_for_change(self, org_id: UUID, timeout: timedelta) -> None:
        """Return when something in the organization may have changed, or at the timeout."""
        ...

    async def secret(self, name: str) -> bytes:
        """A server secret of 32 random bytes, made on first use and the same ever after
        for every server over this store (kept in the database by PostgreSQL)."""
        ...

    def set_clock_offset(self, offset: timedelta) -> None:
        """Move this store's clock (tests only): every ``now()`` is shifted by ``offset``."""
        ...

    # the webhook delivery worker (skift_server), across organizations
    async def claim_deliveries(self, *, limit: int, lease: timedelta) -> list[DueDelivery]:
        """Claim up to ``limit`` deliveries due now, of enabled endpoints, skipping rows
        others hold, for one attempt each: ``attempts`` + 1, ``next_attempt_at`` pushed
        ``lease`` ahead (so no other worker sends it meanwhile; a worker that dies
        mid-attempt leaves it to be retried after that). An endpoint's deliveries go one
        at a time, oldest first. An open delivery is sealed when claimed, once every
        transaction that could add to its window has finished (its ``through`` is below
        the change stream's horizon): ``after`` becomes the endpoint's watermark and the
        watermark its ``through``."""
        ...

    async def settle_delivery(
        self,
        delivery: Delivery,
        *,
        delivered: bool,
        status: int | None,
        error: str | None,
        retry_in: timedelta | None,
    ) -> bool:
        """Record an attempt's outcome (if the delivery is still on that attempt):
        delivered, or retried after ``retry_in``, or parked (``retry_in`` None).
        ``error`` is cut to 512 bytes. False when the attempt was no longer current."""
        ...

    async def delivery_stats(self) -> DeliveryStats: ...

    # retention (skift._retention), across organizations
    async def prune(
        self, *, request_retention: timedelta, claim_cursor_retention: timedelta, dry_run: bool
    ) -> PruneReport:
        """Delete (or with ``dry_run`` count) request records created before now minus
        ``request_retention`` and claim cursors last moved before now minus
        ``claim_cursor_retention``, in every organization, and record the run. A run
        that finds another holding the store's prune lock does nothing (``ran`` False)."""
        ...

    async def last_prune(self) -> PruneReport | None:
        """The last prune run that was not a dry run, if any."""
        ...

    async def sweep_blobs(
        self, *, grace: timedelta, dry_run: bool, run_at: datetime | None = None
    ) -> tuple[int, int]:
        """Remove (or with ``dry_run`` count) blob rows untouched for ``grace`` that no
        artifact of their organization names, then the stored bytes no organization
        records, skipping bytes an upload is writing (``lock_blob``). Returns (rows,
        files); ``run_at`` names the prune run to add the counts to."""
        ...

    async def store_stats(self) -> StoreStats:
        """Table sizes, event partitions, deliveries, the last prune (``skift._growth``)."""
        ...

    async def wait_for_any_change(self, timeout: timedelta) -> None:
        """Return when something in any organization may have changed, or at the timeout."""
        ...

    async def close(self) -> None: ...
