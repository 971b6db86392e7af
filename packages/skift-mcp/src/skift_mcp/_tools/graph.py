"""The graph's tools: patch (change it atomically), get (one node), explain (why not ready)."""

from __future__ import annotations

from typing import Annotated, Any

import attrs
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

import skift

from .. import _render as r
from .._outputs import NodeOut, PatchOut
from .._tooling import (
    Project,
    Ref,
    ToolSet,
    Verbose,
    node_with_content,
)


class ExplainOut(BaseModel):
    ref: str
    title: str
    ready: bool
    reasons: list[dict[str, Any]]


def tools(sk: skift.Skift) -> list[Tool]:
    """The graph's tools, acting on ``sk``."""
    tool = ToolSet()

    @tool()
    async def patch(
        project: Annotated[str, Field(description="The project's slug.")],
        ops: Annotated[list[dict[str, Any]], Field(description=_ops_help())],
        lease: Annotated[
            str | None, Field(description="Your lease, to write a node you hold.")
        ] = None,
        request_id: Annotated[
            str | None, Field(description="Idempotency key: a resend applies once.")
        ] = None,
        verbose: Verbose = False,
    ) -> Annotated[CallToolResult, PatchOut]:
        """Change the graph atomically (all operations or none): create, link, update, drop, reopen.

        Decompose a node you hold: create children with parent set to it and
        your lease, then release it; it is ready again, to synthesize, when
        they close. alias names a new node for later operations; created maps
        aliases to refs.
        """
        parsed = skift.parse_ops(ops)
        res = await sk.patch(project, parsed, request_id=request_id, lease=lease)
        return r.result(r.patch_result(res, verbose=verbose))

    @tool(read_only=True)
    async def get(
        ref: Ref, project: Project = None, verbose: Verbose = False
    ) -> Annotated[CallToolResult, NodeOut]:
        """One node: its state, its body (the task) and its result, attributed to their authors."""
        n = await sk.get(ref, project=project)
        return r.result(node_with_content(n, verbose=verbose))

    @tool(read_only=True)
    async def explain(ref: Ref, project: Project = None) -> Annotated[CallToolResult, ExplainOut]:
        """Why a node is not ready (blockers, a lease, a hold, a person, open children): act on it."""
        return r.result(r.explanation(await sk.explain(ref, project=project)))

    return tool.tools


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
        "Each {op, ...}: "
        + "; ".join(lines)
        + ". Refs: slug#N, #N, or an earlier alias. cascade is {max_nodes: N}; "
        "assignee_kind user makes a gate; priority p0..p4."
    )
