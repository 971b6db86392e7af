"""The graph's tools: patch (change it atomically), get (one node), explain (why not ready)."""

from __future__ import annotations

from typing import Annotated, Any

import attrs
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, Field

import skift

from .. import _render as r
from .._api import Api
from .._render import NodeOut, PatchOut
from .._tooling import (
    Project,
    Ref,
    Verbose,
    node_with_content,
    refusals,
)

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)


class ExplainOut(BaseModel):
    ref: str
    title: str
    ready: bool
    reasons: list[dict[str, Any]]


def register(server: MCPServer, sk: Api) -> None:
    """Add the graph's tools to ``server``, acting on ``sk``."""

    @server.tool()
    @refusals
    async def patch(
        project: Annotated[str, Field(description="The project the patch applies to (slug).")],
        ops: Annotated[list[dict[str, Any]], Field(description=_ops_help())],
        lease: Annotated[
            str | None,
            Field(description="Your lease, when the patch writes to a node you hold."),
        ] = None,
        request_id: Annotated[
            str | None,
            Field(description="Idempotency key: resending the same patch with it applies it once."),
        ] = None,
        verbose: Verbose = False,
    ) -> Annotated[CallToolResult, PatchOut]:
        """Change the graph atomically: create, link, update, drop, reopen nodes, in one flat list.

        Decompose a node you hold by creating children with `parent` set to it
        (and `lease` set to your lease); then `release` it (or `gate` it): it
        becomes ready again when the children are all closed, to synthesize
        their results. `alias` on
        create_node names a new node for later operations of the same patch;
        `blocked_by` lists what must finish first. All operations apply or
        none does. `created` maps each alias to its new ref. An invalid
        operation is reported by its index and field (ops[2].title); a
        refusal names the rule and the next move.
        """
        parsed = skift.parse_ops(ops)
        res = await sk.patch(project, parsed, request_id=request_id, lease=lease)
        return r.result(r.patch_result(res, verbose=verbose))

    @server.tool(annotations=READ_ONLY)
    @refusals
    async def get(
        ref: Ref, project: Project = None, verbose: Verbose = False
    ) -> Annotated[CallToolResult, NodeOut]:
        """Read one node: its state, its body (the task) and its result, attributed to their authors."""
        n = await sk.get(ref, project=project)
        return r.result(node_with_content(n, verbose=verbose))

    @server.tool(annotations=READ_ONLY)
    @refusals
    async def explain(ref: Ref, project: Project = None) -> Annotated[CallToolResult, ExplainOut]:
        """Why a node is not ready: blocked by open nodes, leased until a time, held, waiting on a person, open children, archived.

        Use it when a node you expect to work on is not claimable; act on the
        reasons (complete or ask about the blockers, wait for the lease, ask a
        person to release a hold) rather than retrying the claim.
        """
        return r.result(r.explanation(await sk.explain(ref, project=project)))


def _ops_help() -> str:
    """The operations and their fields, read from skift's own op classes so they never drift."""
    classes: list[type[Any]] = [
        skift.CreateNode,
        skift.UpdateNode,
        skift.DropNode,
        skift.CompleteNode,
        skift.ReopenNode,
        skift.HoldNode,
        skift.UnholdNode,
        skift.AddEdge,
        skift.RemoveEdge,
    ]
    for extra in ("AddComment", "AttachArtifact"):
        cls = getattr(skift, extra, None)
        if isinstance(cls, type):
            classes.append(cls)  # pyright: ignore[reportUnknownArgumentType]
    lines: list[str] = []
    for cls in classes:
        fields: list[str] = []
        op = ""
        for f in attrs.fields(cls):
            if not f.init:
                op = str(f.default)
                continue
            key = "from" if f.name == "from_" else f.name
            fields.append(key if f.default is attrs.NOTHING else f"{key}?")
        lines.append(f"{op} {{{', '.join(fields)}}}")
    return (
        "Operations, each an object with an 'op' field: "
        + "; ".join(lines)
        + ". A node reference is 'slug#N', '#N' in this project, or an alias created earlier "
        "in the same patch. drop_node cascade is {max_nodes: N}. assignee_kind 'user' makes a "
        "gate. priority is p0..p4. Only a person may hold or unhold."
    )
