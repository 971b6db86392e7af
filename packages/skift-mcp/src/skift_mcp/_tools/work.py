"""The work loop's tools: ready, list, claim, heartbeat, complete, release, gate."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult
from pydantic import BaseModel, ConfigDict, Field

import skift

from .. import _render as r
from .._outputs import ContentOut, NodeOut, PatchOut
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
    ToolSet,
    Verbose,
    as_list,
    input_,
    node_with_content,
    ttl,
)


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


def tools(sk: skift.Skift) -> list[Tool]:
    """The work loop's tools, acting on ``sk``."""
    tool = ToolSet()

    async def claim_out(c: skift.Claim, verbose: bool) -> CallToolResult:
        out: dict[str, Any] = {
            "node": node_with_content(c.node, verbose=verbose),
            "lease": r.lease(c.lease, verbose=verbose),
            "inputs": [input_(i, verbose) for i in c.inputs],
        }
        if c.comments.unresolved or verbose:
            out["comments"] = skift.to_json(c.comments)
        return r.result(out)

    @tool(read_only=True)
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
        """Work ready to claim now, in turn order (round-robin across projects), without claiming it.

        A worker normally calls claim without ref instead. held_count: matching
        nodes parked by a hold.
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

    @tool(name="list", read_only=True)
    async def list_(
        projects: Projects = None,
        kinds: Kinds = None,
        labels: Labels = None,
        any_labels: AnyLabels = None,
        assignee_kind: AssigneeKind = None,
        min_priority: MinPriority = None,
        parent: Parent = None,
        status: Annotated[
            Literal["open", "done", "dropped"] | None, Field(description="Default: open and done.")
        ] = None,
        held: Annotated[bool | None, Field(description="Only parked (true) or unparked.")] = None,
        limit: Limit = None,
        page: PageToken = None,
        verbose: Verbose = False,
    ) -> Annotated[CallToolResult, PageOut]:
        """Nodes in any state: a project's shape, or a node's children (parent). get reads one."""
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

    @tool()
    async def claim(
        ref: Annotated[str | None, Field(description="Default: the next ready node.")] = None,
        project: Project = None,
        projects: Projects = None,
        kinds: Kinds = None,
        labels: Labels = None,
        any_labels: AnyLabels = None,
        assignee_kind: AssigneeKind = None,
        min_priority: MinPriority = None,
        parent: Parent = None,
        ttl_seconds: Annotated[float | None, Field(description="Lease length.", gt=0)] = None,
        wait_seconds: Annotated[
            float | None, Field(description="Without ref: wait this long for work.", ge=0)
        ] = None,
        harness: Annotated[str, Field(description="What runs you (claude-code...).")] = "",
        agent_ref: Annotated[str, Field(description="Where this attempt runs (a URI).")] = "",
        verbose: Verbose = False,
    ) -> Annotated[CallToolResult, ClaimOut]:
        """Take a node to work on: ref, or the next ready node matching the filters (never a gate).

        Returns the node (its body is the task), a lease (keep lease.id for
        heartbeat, complete, release, gate, patch) and inputs: the results of
        what it waited on. A parent whose children closed returns for
        synthesis (list with parent). A refusal says why and what to do.
        """
        if ref:
            c = await sk.claim(
                ref, project=project, ttl=ttl(ttl_seconds), harness=harness, agent_ref=agent_ref
            )
        else:
            c = await sk.claim_next(
                ttl=ttl(ttl_seconds),
                wait=ttl(wait_seconds, "wait_seconds"),
                harness=harness,
                agent_ref=agent_ref,
                projects=as_list(projects),
                kinds=as_list(kinds),
                labels=as_list(labels),
                any_labels=as_list(any_labels),
                assignee_kind=assignee_kind,
                min_priority=min_priority,
                parent=parent,
                agent_work=True,  # without a ref, never a gate: a person's work waits for them
            )
        return await claim_out(c, verbose)

    @tool()
    async def heartbeat(
        ref: Ref,
        lease: LeaseId,
        ttl_seconds: Annotated[float | None, Field(description="New lease length.", gt=0)] = None,
        project: Project = None,
        verbose: Verbose = False,
    ) -> Annotated[CallToolResult, LeaseOut]:
        """Renew your lease before expires_at. An expired lease is gone for good: stop that work."""
        info = await sk.heartbeat(ref, lease=lease, ttl=ttl(ttl_seconds), project=project)
        return r.result(r.lease(info, verbose=verbose))

    @tool()
    async def complete(
        ref: Ref,
        lease: LeaseId,
        result: Annotated[
            str,
            Field(
                description="What you did and found (markdown), the next nodes' input. No secrets."
            ),
        ] = "",
        artifacts: Annotated[
            list[dict[str, Any]] | None,
            Field(
                description="Each {name, description?, parts: [{type: text, text} | {type: "
                "reference, uri, commit?} | {type: blob, digest, media_type, size}]}; a git "
                "branch reference needs its commit."
            ),
        ] = None,
        project: Project = None,
        verbose: Verbose = False,
    ) -> Annotated[CallToolResult, PatchOut]:
        """Finish a node you claimed, with its result; ends your lease. Split work is released, not completed."""
        res = await sk.complete(
            ref, lease=lease, result=result, artifacts=_artifacts(artifacts), project=project
        )
        return r.result(r.patch_result(res, verbose=verbose))

    @tool()
    async def release(
        ref: Ref,
        lease: LeaseId,
        reason: Annotated[
            Literal["crash", "budget", "preempted"],
            Field(description="crash: cannot do it; budget: out of budget; preempted: other."),
        ],
        project: Project = None,
        verbose: Verbose = False,
    ) -> Annotated[CallToolResult, ReleaseOut]:
        """Give a node back unfinished. After splitting it into children, release it (preempted).

        To ask a person for something, use gate instead.
        """
        n = await sk.release(ref, lease=lease, reason=reason, project=project)
        return r.result({"node": r.node(n, verbose=verbose)})

    @tool()
    async def gate(
        ref: Ref,
        lease: LeaseId,
        title: Annotated[str, Field(description="What the person must do or decide.")],
        body: Annotated[
            str, Field(description="Context, options, your advice. Never ask for a secret here.")
        ] = "",
        project: Project = None,
        verbose: Verbose = False,
    ) -> Annotated[CallToolResult, PatchOut]:
        """Ask a person (a credential, a UI action, a payment, a decision): one atomic step.

        Files a gate node blocking ref and ends your lease. When the person
        completes the gate, ref is ready again with the gate's result as input.
        """
        res = await sk.gate(ref, lease=lease, title=title, body=body, project=project)
        out = r.patch_result(res, verbose=verbose)
        out["gate"] = res.created.get("gate")
        return r.result(out)

    return tool.tools


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
