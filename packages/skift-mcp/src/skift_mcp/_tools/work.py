"""The work loop's tools: ready, list, claim, heartbeat, complete, release, gate."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

import skift

from .. import _render as r
from .._api import Api
from .._render import ContentOut, NodeOut, PatchOut
from .._tooling import (
    AnyLabels,
    AssigneeKind,
    Kinds,
    Labels,
    LeaseId,
    Limit,
    MinPriority,
    PageToken,
    Parent,
    Project,
    Projects,
    Ref,
    Verbose,
    as_list,
    input_,
    node_with_content,
    refusals,
    ttl,
)

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)


class LeaseOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str
    expires_at: str


class InputOut(BaseModel):
    """A blocking predecessor's result: the claim of the principal that completed it."""

    model_config = ConfigDict(extra="allow")
    ref: str
    title: str
    result: ContentOut | None = None
    artifacts: list[dict[str, Any]] = []


class CommentsHintOut(BaseModel):
    unresolved: int
    newest_at: str | None = None


class ClaimOut(BaseModel):
    node: NodeOut
    lease: LeaseOut
    inputs: list[InputOut] = []
    comments: CommentsHintOut | None = None


class PageOut(BaseModel):
    nodes: list[NodeOut]
    held_count: int
    held_count_exact: bool = True
    next_page: str | None


class ReleaseOut(BaseModel):
    node: NodeOut


def register(server: MCPServer, sk: Api) -> None:
    """Add the work loop's tools to ``server``, acting on ``sk``."""

    async def claim_out(c: skift.Claim, verbose: bool) -> CallToolResult:
        out: dict[str, Any] = {
            "node": node_with_content(c.node, verbose=verbose),
            "lease": r.lease(c.lease, verbose=verbose),
            "inputs": [input_(i, verbose) for i in c.inputs],
        }
        if c.comments.unresolved or verbose:
            out["comments"] = skift.to_json(c.comments)
        return r.result(out)

    @server.tool(annotations=READ_ONLY)
    @refusals
    async def ready(
        projects: Projects = None,
        kinds: Kinds = None,
        labels: Labels = None,
        any_labels: AnyLabels = None,
        assignee_kind: AssigneeKind = None,
        min_priority: MinPriority = None,
        parent: Parent = None,
        limit: Limit = None,
        page: PageToken = None,
        verbose: Verbose = False,
    ) -> Annotated[CallToolResult, PageOut]:
        """List work that is ready to claim now, without claiming it.

        Use it to look before you take; `claim` with no `ref` takes the next
        ready node in one step and is what a worker normally calls. Across
        several projects the order is a round-robin turn per project
        (priority, then age, within each). An agent never sees gates here.
        `held_count` says how many matching nodes are parked by a hold
        (at least that many when `held_count_exact` is false).
        """
        p = await sk.ready(
            limit=limit,
            page=page,
            projects=as_list(projects),
            kinds=as_list(kinds),
            labels=as_list(labels),
            any_labels=as_list(any_labels),
            assignee_kind=assignee_kind,
            min_priority=min_priority,
            parent=parent,
        )
        return r.result(r.page(p, [r.node(n, verbose=verbose) for n in p.nodes]))

    @server.tool(name="list", annotations=READ_ONLY)
    @refusals
    async def list_(
        projects: Projects = None,
        kinds: Kinds = None,
        labels: Labels = None,
        any_labels: AnyLabels = None,
        assignee_kind: AssigneeKind = None,
        min_priority: MinPriority = None,
        parent: Parent = None,
        status: Annotated[
            Literal["open", "done", "dropped"] | None, Field(description="Only this status.")
        ] = None,
        held: Annotated[
            bool | None, Field(description="true: only parked nodes; false: only unparked.")
        ] = None,
        limit: Limit = None,
        page: PageToken = None,
        verbose: Verbose = False,
    ) -> Annotated[CallToolResult, PageOut]:
        """List nodes in any state (open, done, dropped), with filters.

        Use it to see the shape of a project or the children of a node
        (`parent`); use `ready` for claimable work and `get` for one node's
        body and result.
        """
        p = await sk.list_nodes(
            limit=limit,
            page=page,
            projects=as_list(projects),
            kinds=as_list(kinds),
            labels=as_list(labels),
            any_labels=as_list(any_labels),
            assignee_kind=assignee_kind,
            min_priority=min_priority,
            parent=parent,
            status=status,
            held=held,
        )
        return r.result(r.page(p, [r.node(n, verbose=verbose) for n in p.nodes]))

    @server.tool()
    @refusals
    async def claim(
        ref: Annotated[
            str | None,
            Field(description="Claim this node. Leave it out to claim the next ready node."),
        ] = None,
        project: Project = None,
        projects: Projects = None,
        kinds: Kinds = None,
        labels: Labels = None,
        any_labels: AnyLabels = None,
        assignee_kind: AssigneeKind = None,
        min_priority: MinPriority = None,
        parent: Parent = None,
        ttl_seconds: Annotated[
            float | None,
            Field(description="How long the lease lasts before it expires (server-bounded).", gt=0),
        ] = None,
        wait_seconds: Annotated[
            float | None,
            Field(
                description="Without `ref`: wait up to this long for work to become ready.", ge=0
            ),
        ] = None,
        verbose: Verbose = False,
    ) -> Annotated[CallToolResult, ClaimOut]:
        """Take a node to work on: one by `ref`, or the next ready one matching the filters.

        Returns the node (its body is the task), a lease (keep `lease.id`:
        heartbeat, complete, release, gate and patches on this node need it),
        and `inputs`: results of the nodes it waited on, each attributed to the
        principal that wrote it. Filters apply only without `ref`. A parent
        whose children closed comes back for synthesis: read their results
        with `list` (`parent`) and `get`.
        A refusal says why the node is not claimable (blocked, leased, held,
        a gate for a person...) and what to do instead; "nothing_ready" means
        no matching work: wait (`wait_seconds`) or stop.
        """
        if ref:
            c = await sk.claim(ref, project=project, ttl=ttl(ttl_seconds))
        else:
            c = await sk.claim_next(
                ttl=ttl(ttl_seconds),
                wait=ttl(wait_seconds),
                projects=as_list(projects),
                kinds=as_list(kinds),
                labels=as_list(labels),
                any_labels=as_list(any_labels),
                assignee_kind=assignee_kind,
                min_priority=min_priority,
                parent=parent,
            )
        return await claim_out(c, verbose)

    @server.tool()
    @refusals
    async def heartbeat(
        ref: Ref,
        lease: LeaseId,
        ttl_seconds: Annotated[
            float | None, Field(description="The new lease length (server-bounded).", gt=0)
        ] = None,
        project: Project = None,
        verbose: Verbose = False,
    ) -> Annotated[CallToolResult, LeaseOut]:
        """Renew your lease on a node you are working on, before `expires_at`.

        A lease that expired is gone for good (the node went back to the ready
        set and someone else may hold it now): a refusal here means stop
        working on the node; claim it again if it is still ready.
        """
        info = await sk.heartbeat(ref, lease=lease, ttl=ttl(ttl_seconds), project=project)
        return r.result(r.lease(info, verbose=verbose))

    @server.tool()
    @refusals
    async def complete(
        ref: Ref,
        lease: LeaseId,
        result: Annotated[
            str,
            Field(
                description="What you did and found, in markdown: the input the next nodes get. "
                "Never a secret."
            ),
        ] = "",
        artifacts: Annotated[
            list[dict[str, Any]] | None,
            Field(
                description="What the work produced, beyond the result text: each "
                "{name, description?, parts: [{type: text, text, media_type?} | "
                "{type: reference, uri, digest?, media_type?, commit?} | "
                "{type: blob, digest, media_type, size}], metadata?}. A git branch reference "
                "needs its commit."
            ),
        ] = None,
        project: Project = None,
        verbose: Verbose = False,
    ) -> Annotated[CallToolResult, PatchOut]:
        """Finish a node you claimed, with its result; this ends your lease.

        Complete only when the node's work is done; if you split it into
        children instead, do not complete it (see `patch`). A "conflict"
        refusal about the lease means it is not the node's live lease any
        more (it expired or was released): your result was not recorded; do
        not retry with that lease.
        """
        res = await sk.complete(
            ref, lease=lease, result=result, artifacts=_artifacts(artifacts), project=project
        )
        return r.result(r.patch_result(res, verbose=verbose))

    @server.tool()
    @refusals
    async def release(
        ref: Ref,
        lease: LeaseId,
        reason: Annotated[
            Literal["crash", "budget", "preempted"],
            Field(
                description="crash: you cannot do it; budget: you ran out of budget; "
                "preempted: you stop for another reason (other work, or it now waits on "
                "children you filed)."
            ),
        ],
        project: Project = None,
        verbose: Verbose = False,
    ) -> Annotated[CallToolResult, ReleaseOut]:
        """Give a node back unfinished; it returns to the ready set for another attempt.

        To ask a person for something, use `gate` instead. After splitting
        the node into children with `patch`, release it with "preempted":
        it comes back (to you or another agent) when its children close.
        """
        n = await sk.release(ref, lease=lease, reason=reason, project=project)
        return r.result({"node": r.node(n, verbose=verbose)})

    @server.tool()
    @refusals
    async def gate(
        ref: Ref,
        lease: LeaseId,
        title: Annotated[
            str, Field(description="What the person must do or decide, as an imperative.")
        ],
        body: Annotated[
            str,
            Field(
                description="Context for the person: what you found, the options, what you "
                "recommend. Never ask for a secret to be written here."
            ),
        ] = "",
        project: Project = None,
        verbose: Verbose = False,
    ) -> Annotated[CallToolResult, PatchOut]:
        """Ask a person: file a gate (a node only a user can complete) that blocks your node, and release it.

        Use it when you need a credential placed, a UI action, a payment, or a
        decision. One atomic step: the gate is created, it blocks `ref`, and
        your lease ends (`gate` in the result is the new node). When the
        person completes the gate your node becomes ready again, with the
        gate's result in its inputs. You may not complete, drop or unlink a
        gate you filed.
        """
        res = await sk.gate(ref, lease=lease, title=title, body=body, project=project)
        out = r.patch_result(res, verbose=verbose)
        out["gate"] = res.created.get("gate")
        return r.result(out)


def _artifacts(docs: list[dict[str, Any]] | None) -> list[skift.Artifact]:
    """Artifacts from their JSON form, checked by skift's own patch parser."""
    out: list[skift.Artifact] = []
    for i, doc in enumerate(docs or ()):
        try:
            op = skift.parse_op({"op": "attach_artifact", "node": "-", "artifact": doc}, i)
        except skift.Invalid as exc:
            raise ToolError(
                f"invalid: artifacts[{i}]: {exc.message} Next: fix artifacts[{i}] and call again."
            ) from exc
        assert isinstance(op, skift.AttachArtifact)
        out.append(op.artifact)
    return out
