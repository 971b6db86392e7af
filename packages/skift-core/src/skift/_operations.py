"""Every operation of skift, declared once: what each surface needs to know about it.

One :class:`Operation` per public method of :class:`skift.LocalSkift` (the library
is the first product; gRPC, the remote client, MCP and the CLI are its surfaces).
The surfaces derive their facts from :data:`OPERATIONS` instead of keeping copies:
the server its dispatch, the admin checks at the edge and the long polls drained on
shutdown; the remote client which calls it may retry; ``tools/gen_surface.py`` the
:class:`skift.Skift` protocol. ``tests/server/test_operations.py`` checks the table
against LocalSkift, RemoteSkift, the proto's service, the MCP tools and the CLI.

No rules here, and nothing imported from the rest of skift: every package may read it.
"""

from __future__ import annotations

import enum
from typing import Final

import attrs


class Retry(enum.Enum):
    """Whether a client may send the call again after a failure that may have reached the server."""

    READ = "read"
    """Changes nothing: retried."""
    REQUEST_ID = "request_id"
    """A write made idempotent by its request id (the client makes one before the first
    attempt, so every attempt is the same request and the server applies it once): retried."""
    IDEMPOTENT = "idempotent"
    """A write whose second application changes nothing (sets a value, stores content by its
    digest, ends what is ended): retried."""
    NEVER = "never"
    """A write a retry could apply twice: never retried once it may have been sent."""

    @property
    def safe(self) -> bool:
        return self is not Retry.NEVER


class RpcStream(enum.Enum):
    """How the RPC's messages flow (gRPC cardinality)."""

    UNARY = "unary"
    SERVER = "server"  # one request, a stream of answers
    BIDI = "bidi"  # a stream of requests, a stream of answers


class LeaseEffect(enum.Enum):
    """What the operation does to a lease (the server counts them)."""

    TAKES = "takes"
    ENDS = "ends"


SERVER_ADMIN: Final = "server_admin"
"""Not a policy action: the caller must administer the server (a person of its first
organization); ``LocalSkift.check_action`` knows it."""


@attrs.frozen
class Operation:
    """One operation of the skift API and what every surface needs to know about it."""

    method: str
    """The :class:`skift.LocalSkift` method."""
    rpc: str | None
    """Its RPC in skift.v1.SkiftService; None: no RPC of its own (see ``via`` and ``local``)."""
    retry: Retry = Retry.NEVER
    stream: RpcStream = RpcStream.UNARY
    long_poll: bool = False
    """It may wait for something to happen: the server wakes it on shutdown."""
    admin: str | None = None
    """The policy action checked at the edge, as soon as the caller is known, before the
    call does any work (the seed's coarse method checks); the engine checks again."""
    page_key: str | None = None
    """A paged list: the sort key its pages follow (AIP-158 page tokens)."""
    whole: bool = False
    """A paged list that ``limit=None`` reads whole (every item; over the wire a page at a
    time), where the others read one page of the default size."""
    limits: tuple[str, ...] = ()
    """The :class:`skift.Limits` it is checked against."""
    mcp: str | None = None
    """The MCP tool that calls it."""
    cli: str | None = None
    """The CLI command that calls it (space-separated: ``project create``)."""
    also: tuple[str, ...] = ()
    """Further RPCs the operation is served by (the same facts apply)."""
    via: str | None = None
    """A convenience over another operation (the method named): no RPC of its own."""
    local: str | None = None
    """Why it is in-process only: not an RPC, and not in the :class:`skift.Skift` protocol."""
    lease: LeaseEffect | None = None

    @property
    def rpcs(self) -> tuple[str, ...]:
        return ((self.rpc,) if self.rpc else ()) + self.also

    @property
    def request(self) -> str | None:
        """The request message's name (skift.v1)."""
        return f"{self.rpc}Request" if self.rpc else None

    @property
    def response(self) -> str | None:
        """The response message's name (skift.v1)."""
        return f"{self.rpc}Response" if self.rpc else None


R, RID, IDEM = Retry.READ, Retry.REQUEST_ID, Retry.IDEMPOTENT
PAGE = ("page_size",)
Op = Operation

OPERATIONS: Final[tuple[Operation, ...]] = (
    # ---------------------------------------------------------------- projects
    Op("create_project", "CreateProject", cli="project create", limits=("title_chars",)),
    Op("get_project", "GetProject", R, cli="project show"),
    Op(
        "list_projects",
        "ListProjects",
        R,
        page_key="activity as of the walk's first page (last event, else created_at) desc, id desc",
        limits=PAGE,
        cli="project list",
    ),
    Op("update_project", "UpdateProject", limits=("title_chars",)),
    Op("rename_project", None, via="update_project", cli="project rename"),
    Op("archive_project", "ArchiveProject", cli="project archive", limits=("reason_chars",)),
    Op("restrict_project", "RestrictProject", cli="project restrict", limits=("reason_chars",)),
    Op(
        "unrestrict_project",
        "UnrestrictProject",
        cli="project unrestrict",
        limits=("reason_chars",),
    ),
    Op("hold_project", "HoldProject", RID, cli="hold", limits=("reason_chars",)),
    Op("unhold_project", "UnholdProject", RID, cli="unhold", limits=("reason_chars",)),
    # ---------------------------------------------------------------- the graph
    Op(
        "patch",
        "Patch",
        RID,
        mcp="patch",
        cli="patch",
        limits=("ops_per_patch", "nodes_per_patch", "edges_per_patch", "request_id_chars"),
    ),
    Op("create", None, via="patch", cli="create"),
    Op("get", "GetNode", R, mcp="get", cli="show"),
    Op("resolve", "ResolveNode", R),
    Op(
        "ready",
        "Ready",
        R,
        page_key="the turn order (one node per project per pass): a queue, paged by count",
        limits=PAGE,
        mcp="ready",
        cli="ready",
    ),
    Op(
        "list_nodes",
        "ListNodes",
        R,
        page_key="project, number",
        limits=PAGE,
        mcp="list",
        cli="list",
    ),
    Op("explain", "Explain", R, mcp="explain", cli="explain"),
    Op(
        "edges",
        "ListEdges",
        R,
        page_key="target ref, source ref",
        whole=True,
        limits=PAGE,
    ),
    Op("drop", "DropNode", RID, cli="drop", limits=("reason_chars",)),
    Op("reopen", "ReopenNode", RID, cli="reopen", limits=("reason_chars",)),
    Op("hold", "HoldNode", RID, cli="hold", limits=("reason_chars",)),
    Op("unhold", "UnholdNode", RID, cli="unhold", limits=("reason_chars",)),
    Op("focus", "Focus", RID, cli="focus", limits=("keep_set", "reason_chars")),
    Op("clear_focus", "ClearFocus", RID, cli="focus", limits=("reason_chars",)),
    # ---------------------------------------------------------------- the work protocol
    Op("claim", "Claim", mcp="claim", cli="claim", lease=LeaseEffect.TAKES),
    Op(
        "claim_next",
        "ClaimNext",
        long_poll=True,
        mcp="claim",
        cli="claim",
        lease=LeaseEffect.TAKES,
    ),
    Op("inputs", "ListInputs", R, page_key="project, number (of each input's node)", limits=PAGE),
    Op("heartbeat", "Heartbeat", IDEM, mcp="heartbeat", cli="heartbeat"),
    Op(
        "complete",
        "Complete",
        RID,
        mcp="complete",
        cli="complete",
        lease=LeaseEffect.ENDS,
        limits=("result_bytes", "artifacts_per_node"),
    ),
    Op("release", "Release", mcp="release", cli="release", lease=LeaseEffect.ENDS),
    Op(
        "gate",
        "Gate",
        RID,
        mcp="gate",
        cli="gate",
        lease=LeaseEffect.ENDS,
        limits=("title_chars", "body_bytes"),
    ),
    Op(
        "leases",
        "ListLeases",
        R,
        also=("ListLiveLeases",),
        page_key="created_at, id",
        whole=True,
        limits=PAGE,
        cli="leases",
    ),
    Op("sweep_expired", "SweepExpired", admin="sweep"),
    # ---------------------------------------------------------------- events
    Op("events", "ListEvents", R, page_key="id desc", limits=PAGE, cli="events"),
    Op("watch_events", "WatchEvents", R, long_poll=True, limits=PAGE, cli="events"),
    # ---------------------------------------------------------------- principals and tokens
    Op("add_principal", "AddPrincipal", admin="admin", cli="principal add"),
    Op(
        "list_principals",
        "ListPrincipals",
        R,
        admin="list_principals",
        page_key="name, id",
        whole=True,
        limits=PAGE,
        cli="principal list",
    ),
    Op("attach_identity", "AttachIdentity", admin="admin", cli="principal attach"),
    Op(
        "invite_identity",
        "InviteIdentity",
        admin="admin",
        cli="principal invite",
    ),
    Op("invites", "ListInvites", R, admin="admin", cli="principal invites"),
    Op("cancel_invite", "CancelInvite", admin="admin", cli="principal cancel-invite"),
    Op(
        "grant_admin",
        "GrantAdmin",
        admin="admin",
        cli="principal grant-admin",
        limits=("reason_chars",),
    ),
    Op(
        "revoke_admin",
        "RevokeAdmin",
        admin="admin",
        cli="principal revoke-admin",
        limits=("reason_chars",),
    ),
    # a person's own token, or (decided in the engine) an admin's for anyone
    Op("create_token", "CreateToken", admin="own_token", cli="token create"),
    Op("revoke_token", "RevokeToken", admin="own_token", cli="token revoke"),
    Op("mint_signin_code", "MintSigninCode", cli="board"),
    Op(
        "authenticate",
        None,
        local="a transport's own step: the server authenticates every call before it",
    ),
    Op(
        "confirm_identity",
        None,
        local="a transport's own step: a remembered identity confirmed before a large body",
    ),
    Op(
        "long_poll_refusal",
        None,
        local="a transport's own step: a long poll past its principal's cap answered early",
    ),
    Op("bootstrap_owner", None, local="the server's start-up names its owner, in process"),
    Op("check_action", None, local="the server's edge check; remote callers are checked by it"),
    Op("session", None, local="the board's sign-in session, served by the server's HTTP side"),
    Op("end_session", None, local="the board's sign-out, served by the server's HTTP side"),
    Op("board_sessions", "ListBoardSessions", R, cli="board sessions"),
    Op("end_board_sessions", "EndBoardSessions", IDEM, cli="board sign-out"),
    Op("signin_code_owner", None, local="the board's sign-in page, served over HTTP"),
    Op(
        "redeem_signin_code",
        None,
        local="the board redeems a sign-in code over HTTP, not over gRPC",
    ),
    # ---------------------------------------------------------------- comments and search
    Op(
        "add_comment",
        "AddComment",
        RID,
        mcp="comment",
        cli="comment add",
        limits=("comment_bytes",),
    ),
    Op("edit_comment", "EditComment", cli="comment edit", limits=("comment_bytes",)),
    Op("resolve_comment", "ResolveComment", IDEM, mcp="comment", cli="comment resolve"),
    Op(
        "comments",
        "ListComments",
        R,
        page_key="created_at, id",
        whole=True,
        limits=PAGE,
        mcp="comment",
        cli="comments",
    ),
    Op(
        "search",
        "Search",
        R,
        page_key="rank desc, project, number",
        limits=("query_chars", "page_size"),
        mcp="search",
        cli="search",
    ),
    # ---------------------------------------------------------------- usage and cost
    Op("record_usage", "RecordUsage", mcp="usage", cli="usage add"),
    Op("usage", "GetUsage", R, mcp="usage", cli="usage show"),
    Op("project_usage", "GetProjectUsage", R, cli="usage show"),
    Op("set_rate", "SetRate", IDEM, admin="set_rate", cli="rate set"),
    Op("rates", "ListRates", R, page_key="model", whole=True, limits=PAGE, cli="rate list"),
    Op("set_org_limits", "SetOrgLimits", IDEM, admin="set_org_limits", cli="org limits"),
    Op("org_limits", "GetOrgLimits", R),
    Op("whoami", "WhoAmI", R, cli="status"),
    Op("policy", "GetPolicy", R, cli="policy show"),
    Op("set_policy", "SetPolicy", IDEM, admin="set_policy", cli="policy set"),
    Op("reset_policy", "ResetPolicy", IDEM, admin="set_policy", cli="policy reset"),
    Op("create_org", "CreateOrg", admin=SERVER_ADMIN, cli="org create"),
    Op(
        "list_orgs",
        "ListOrgs",
        R,
        admin=SERVER_ADMIN,
        page_key="created_at, name",
        whole=True,
        limits=PAGE,
        cli="org list",
    ),
    # ---------------------------------------------------------------- artifacts and blobs
    Op("put_blob", "PutBlob", IDEM, admin="put_blob", limits=("blob_bytes",)),
    Op("get_blob", "GetBlob", R, cli="blob get"),
    Op(
        "attach_artifact",
        "AttachArtifact",
        RID,
        limits=("artifacts_per_node", "parts_per_artifact", "artifact_metadata_bytes"),
    ),
    Op(
        "artifacts",
        "ListArtifacts",
        R,
        page_key="created_at, id",
        whole=True,
        limits=PAGE,
        cli="show",
    ),
    # ---------------------------------------------------------------- webhooks
    Op("add_webhook", "AddWebhook", cli="webhook add", limits=("webhooks_per_project",)),
    Op("webhooks", "ListWebhooks", R, page_key="id", whole=True, limits=PAGE, cli="webhook list"),
    Op("rotate_webhook_secret", "RotateWebhookSecret", cli="webhook rotate"),
    Op("disable_webhook", "DisableWebhook", IDEM, cli="webhook disable"),
    Op("enable_webhook", "EnableWebhook", IDEM, cli="webhook enable"),
    Op(
        "webhook_deliveries",
        "ListWebhookDeliveries",
        R,
        page_key="created_at desc, id desc",
        limits=PAGE,
        cli="webhook deliveries",
    ),
    Op("redeliver", "RedeliverWebhook", cli="webhook redeliver"),
    Op("test_webhook", "TestWebhook", cli="webhook test"),
    # ---------------------------------------------------------------- import and export
    Op("import_beads", "ImportBeads", stream=RpcStream.BIDI, cli="import beads"),
    Op("export_beads", "ExportBeads", stream=RpcStream.SERVER, cli="export beads"),
    Op("import_archive", "ImportArchive", stream=RpcStream.BIDI, cli="import archive"),
    Op("export_archive", "ExportArchive", stream=RpcStream.SERVER, cli="export archive"),
)
"""Every operation, in the order the :class:`skift.Skift` protocol lists them."""

NOT_OPERATIONS: Final = frozenset({"acting_as", "close", "check_ops_count"})
"""Public methods of LocalSkift or RemoteSkift that are no operation: handles and the
client's own checks."""

OPERATIONS_BY_METHOD: Final[dict[str, Operation]] = {op.method: op for op in OPERATIONS}
"""Each operation by its LocalSkift method."""


def _by_rpc() -> dict[str, Operation]:
    out: dict[str, Operation] = {}
    for op in OPERATIONS:
        for rpc in op.rpcs:
            if rpc in out:
                raise AssertionError(f"{rpc} is declared by {out[rpc].method} and {op.method}")
            out[rpc] = op
    return out


OPERATIONS_BY_RPC: Final[dict[str, Operation]] = _by_rpc()
"""Each RPC's operation (an operation served by two RPCs is under both)."""
