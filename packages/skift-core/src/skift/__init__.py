"""skift: a work graph that AI agents and people share.

Work is a node in a project; nodes wait on each other (``blocks`` edges) and on
their children; readiness is derived, never stored; an agent takes ready work
with a lease whose id is a fencing token; a flat patch with aliases creates
and links many nodes atomically; a person parks work with a hold and answers
an agent through a gate; every change is an immutable event.

    import skift
    async with skift.open("memory:", principal=skift.User("ada")) as sk:
        proj = await sk.create_project("OAuth spike")
        res = await sk.patch(proj.slug, [skift.CreateNode(alias="a", title="Research")])
"""

from ._api import Agent, LocalSkift, PrincipalSpec, Service, Skift, User, open
from ._convert import from_json, to_json
from ._engine import Actor, Engine, NodeFilter
from ._errors import (
    Conflict,
    CycleError,
    FencingError,
    IdempotencyMismatch,
    Invalid,
    LimitExceeded,
    NotFound,
    NothingReady,
    Refused,
    SkiftError,
    Unauthenticated,
    Unavailable,
)
from ._limits import DEFAULT_LIMITS, Limits
from ._memory import MemoryStore
from ._models import (
    AssigneeKind,
    Edge,
    EdgeKind,
    Event,
    Hold,
    Lease,
    Node,
    Org,
    Principal,
    PrincipalKind,
    Priority,
    Project,
    ReleaseReason,
    Status,
)
from ._ops import (
    AddEdge,
    Cascade,
    CompleteNode,
    CreateNode,
    DropNode,
    HoldNode,
    Op,
    RemoveEdge,
    ReopenNode,
    UnholdNode,
    UpdateNode,
    op_to_dict,
    parse_op,
    parse_ops,
)
from ._refs import format_ref, new_id, parse_node_ref, slugify, ulid_str
from ._store import Derived, ReadyQuery, Store, StoredRequest, TransientError, Tx
from ._views import (
    Claim,
    CommentsHint,
    EventInfo,
    Explanation,
    FocusResult,
    Input,
    LeaseInfo,
    NodeInfo,
    PatchResult,
    ProjectInfo,
    ReadyPage,
    Reason,
    Resolved,
)

__all__ = [
    "DEFAULT_LIMITS",
    "Actor",
    "AddEdge",
    "Agent",
    "AssigneeKind",
    "Cascade",
    "Claim",
    "CommentsHint",
    "CompleteNode",
    "Conflict",
    "CreateNode",
    "CycleError",
    "Derived",
    "DropNode",
    "Edge",
    "EdgeKind",
    "Engine",
    "Event",
    "EventInfo",
    "Explanation",
    "FencingError",
    "FocusResult",
    "Hold",
    "HoldNode",
    "IdempotencyMismatch",
    "Input",
    "Invalid",
    "Lease",
    "LeaseInfo",
    "LimitExceeded",
    "Limits",
    "LocalSkift",
    "MemoryStore",
    "Node",
    "NodeFilter",
    "NodeInfo",
    "NotFound",
    "NothingReady",
    "Op",
    "Org",
    "PatchResult",
    "Principal",
    "PrincipalKind",
    "PrincipalSpec",
    "Priority",
    "Project",
    "ProjectInfo",
    "ReadyPage",
    "ReadyQuery",
    "Reason",
    "Refused",
    "ReleaseReason",
    "RemoveEdge",
    "ReopenNode",
    "Resolved",
    "Service",
    "Skift",
    "SkiftError",
    "Status",
    "Store",
    "StoredRequest",
    "TransientError",
    "Tx",
    "Unauthenticated",
    "Unavailable",
    "UnholdNode",
    "UpdateNode",
    "User",
    "format_ref",
    "from_json",
    "new_id",
    "op_to_dict",
    "open",
    "parse_node_ref",
    "parse_op",
    "parse_ops",
    "slugify",
    "to_json",
    "ulid_str",
]
