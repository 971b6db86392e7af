"""The records the store protocol (``_store``) takes and returns (no rules).

What a prune run did and how big the store is (``_retention`` and ``_growth`` hold the
operations over them); the derived facts of a node, the queries a store answers (Ready,
search), positions in the change stream, and the other shapes that cross the seam.
``_store`` re-exports them, so ``from skift._store import Derived`` stays the way in.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from enum import Enum
from typing import Any, Final
from uuid import UUID

import attrs

from ._models import AssigneeKind, Event, Node, PrincipalKind, Project
from ._webhook_records import DeliveryStats

__all__ = [
    "NIL_ID",
    "NOT_SIMPLE",
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
    "StoreStats",
    "StoredRequest",
    "TableStat",
    "UpstreamCone",
    "Writer",
]


@attrs.frozen
class PruneReport:
    """What one prune run removed (or, with ``dry_run``, would remove).

    ``ran`` is False when another run held the lock (nothing was read or removed).
    ``requests_before`` / ``claim_cursors_before``: the cut-offs used.
    """

    at: datetime
    dry_run: bool
    ran: bool
    requests: int
    claim_cursors: int
    requests_before: datetime
    claim_cursors_before: datetime
    #: event partitions created ahead by this run (PostgreSQL; never on a dry run)
    partitions_created: int = 0
    #: blob rows untouched since ``blobs_before`` that no artifact names, and files of
    #: bytes no organization records any more (``Limits.blob_grace``)
    blobs: int = 0
    blob_files: int = 0
    blobs_before: datetime | None = None


@attrs.frozen
class TableStat:
    """One table: its name, rows (PostgreSQL: the planner's estimate, as of the last
    ANALYZE; memory: exact) and bytes on disk with indexes and TOAST (None in memory).
    ``bound``: a partition's range (empty for a table)."""

    name: str
    rows: int
    bytes: int | None
    bound: str = ""


@attrs.frozen
class StoreStats:
    """How big the store is and what waits in it (every organization)."""

    tables: tuple[TableStat, ...]
    event_partitions: tuple[TableStat, ...]
    deliveries: DeliveryStats
    oldest_parked_at: datetime | None
    last_prune: PruneReport | None


@attrs.frozen(kw_only=True)
class Derived:
    """Facts derived at read time, never stored."""

    blocked: bool
    held: bool
    claimed: bool
    open_children: bool
    archived: bool
    human_written: bool = False

    @property
    def ready(self) -> bool:
        return not (
            self.blocked or self.held or self.claimed or self.open_children or self.archived
        )


@attrs.frozen(kw_only=True)
class UpstreamCone:
    """Explain's cone as a store reads it in one go (:meth:`Tx.upstream_cone`).

    ``nodes``: the root first, then every node reached from it through edges into a
    node (to the edge's source) and through children, walking on only from the root
    and from open nodes outside the hidden projects; each with the sources of the
    edges into it that are among ``nodes``. ``above``: the parents above them that are
    not among ``nodes``, so every walked node's whole parent chain is in the two.
    ``leased``: whether the root holds a live lease (Explain reads the lease only then).
    """

    nodes: Sequence[tuple[Node, Sequence[UUID]]]
    above: Sequence[Node] = ()
    leased: bool = False


@attrs.frozen(kw_only=True)
class Writer:
    """Who made one write, as its event records it: the principal, its name and its kind."""

    principal_id: UUID
    name: str
    kind: PrincipalKind


@attrs.frozen(kw_only=True)
class Authors:
    """Who wrote a node's content, derived from its events (never stored).

    ``body``: the actor of the node's newest ``create_node`` event or
    ``update_node`` event whose ``after`` names ``body``. ``result``: the actor
    of its newest ``complete_node`` event; None if it was never completed.
    """

    body: Writer | None = None
    result: Writer | None = None


@attrs.frozen(kw_only=True)
class ReadyQuery:
    """What a Ready or ClaimNext asks for, with references already resolved.

    ``projects`` empty means every project of the organization. The turn
    order rotates across projects: each project's ready nodes are ranked by
    priority then age (then number), and the page interleaves one node per
    project per pass, starting with the first project (by id) after
    ``after_project``.
    """

    projects: tuple[UUID, ...] = ()
    kinds: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    any_labels: tuple[str, ...] = ()
    assignee_kind: AssigneeKind | None = None
    agent_only: bool = False
    # bookkeeping nodes (``_models.BOOKKEEPING_KIND``) match; Ready and ClaimNext set it
    # false unless the filter's kinds name that kind (``Reads.resolve_filter``)
    bookkeeping: bool = True
    max_priority_rank: int = 4
    parent: UUID | None = None
    after_project: UUID | None = None
    limit: int = 50
    after_keys: tuple[tuple[UUID, int, datetime, int], ...] = ()
    """Ready's walk (keyset): per project, the (priority, age, number) of the last node
    sent; only that project's nodes after it are read. A project not named: all of them."""
    after_node: tuple[UUID, int] | None = None
    """ListNodes: only the nodes after this (project id, number), in that order (keyset)."""
    # nodes left out whatever their state (ClaimNext: nodes under a spent cap)
    exclude: tuple[UUID, ...] = ()
    # projects left out whatever the filter: the caller may not read them (the
    # policy's read decision, ``Context.hidden``)
    hidden: tuple[UUID, ...] = ()


@attrs.frozen(kw_only=True)
class SearchQuery:
    """A search with its words already split and lowercased (``skift._search.words``).

    A node matches when every term occurs in its title, body, result or the
    body of one of its comments (together, not necessarily in one field).
    Archived projects are left out unless ``include_archived``; ``projects``
    empty means every project of the organization. Results are ranked best
    first (ties by project id, then number).
    """

    terms: tuple[str, ...]
    projects: tuple[UUID, ...] = ()
    include_archived: bool = False
    limit: int = 20
    hidden: tuple[UUID, ...] = ()
    """Projects left out: the caller may not read them."""
    after: tuple[float, UUID, int] | None = None
    """Only the results after this (rank, project id, number) in that order."""


NIL_ID = UUID(int=0)
"""The nil id: an :class:`EventPosition` with it is before every event of its ``seq``."""


@attrs.frozen(kw_only=True, order=True)
class EventPosition:
    """Where an event sits in commit order (see ``skift._stream`` and docs/events.md).

    ``seq`` orders transactions by when they became visible: the writing
    transaction's id (``xid8``) in PostgreSQL, a commit sequence in memory;
    ``id`` orders the events of one transaction. A nil ``id`` is the position
    just before every event of ``seq``. Positions compare as ``(seq, id)``.
    """

    seq: int
    id: UUID = NIL_ID


@attrs.frozen(kw_only=True)
class EventBatch:
    """What one change-stream read found.

    ``events``: those strictly after the position asked from and below the
    horizon, in commit order, each with its position. ``horizon``: a position
    below which every transaction has finished (committed or rolled back), so
    nothing can ever appear there again; a read never returns anything at or
    past it.
    """

    events: list[tuple[EventPosition, Event]]
    horizon: EventPosition


@attrs.frozen(kw_only=True)
class ProjectPage:
    """A page of projects by activity (:meth:`Tx.project_page`): each with its activity as
    of ``asof``, the position in the change stream the walk orders by."""

    projects: list[tuple[Project, datetime]]
    asof: EventPosition


@attrs.frozen(kw_only=True)
class Restriction:
    """A restricted project as the read decision reads it: its id, slug and readers
    (principal ids, with their names; a reader whose principal is gone has no name)."""

    project_id: UUID
    slug: str
    readers: tuple[UUID, ...]
    names: tuple[str, ...] = ()


class NotSimple(Enum):
    """:meth:`Tx.take_next_ready`'s answer when it took nothing because the filter has
    something the engine must work out first (restricted projects, a stored policy, caps)."""

    NOT_SIMPLE = "not_simple"


NOT_SIMPLE: Final = NotSimple.NOT_SIMPLE


@attrs.frozen(kw_only=True)
class StoredRequest:
    fingerprint: str
    response: dict[str, Any] | None
