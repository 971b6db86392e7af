"""What every MCP tool shares: the parameter types, skift errors as tool errors, attributed nodes.

A tool module (``skift_mcp/_tools/<group>.py``) defines ``register(server,
sk)``, which adds its tools to the server; ``skift_mcp._server`` lists the
tool modules.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import Annotated, Any, Literal, ParamSpec

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult
from pydantic import Field

import skift

from . import _render as r

P = ParamSpec("P")


Ref = Annotated[
    str,
    Field(
        description="A node: 'slug#N', '#N' or 'N' with `project`, 'org/slug#N', or its id.",
        min_length=1,
    ),
]
Project = Annotated[
    str | None,
    Field(description="The project (slug) a bare '#N' in `ref` belongs to."),
]
LeaseId = Annotated[str, Field(description="The lease id `claim` returned (a fencing token).")]
Projects = Annotated[
    list[str] | None,
    Field(description="Only these projects (slugs); none: every project you can read."),
]
Kinds = Annotated[list[str] | None, Field(description="Only nodes of these kinds (task, bug...).")]
Labels = Annotated[list[str] | None, Field(description="Only nodes carrying ALL these labels.")]
AnyLabels = Annotated[
    list[str] | None, Field(description="Only nodes carrying at least one of these labels.")
]
AssigneeKind = Annotated[
    Literal["agent", "user"] | None,
    Field(description="Only nodes for agents, or only gates (user)."),
]
MinPriority = Annotated[
    Literal["p0", "p1", "p2", "p3", "p4"] | None,
    Field(description="Only nodes at least this urgent (p0 is the most urgent)."),
]
Parent = Annotated[str | None, Field(description="Only direct children of this node.")]
Limit = Annotated[int | None, Field(description="Page size.", ge=1)]
PageToken = Annotated[str | None, Field(description="`next_page` of the previous call.")]
Verbose = Annotated[
    bool, Field(description="The full record instead of the compact one (costs more tokens).")
]


def ttl(seconds: float | None) -> timedelta | None:
    return timedelta(seconds=seconds) if seconds is not None else None


def as_list(values: Sequence[str] | None) -> list[str]:
    return list(values or ())


def tool_error(exc: skift.SkiftError) -> ToolError:
    text = f"{exc.code}: {exc.message}"
    if exc.next:
        text += f" Next: {exc.next}"
    return ToolError(text)


def refusals(fn: Callable[P, Awaitable[CallToolResult]]) -> Callable[P, Awaitable[CallToolResult]]:
    """Turn skift's errors into tool errors an agent reads (rule + next move)."""

    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> CallToolResult:
        try:
            return await fn(*args, **kwargs)
        except skift.SkiftError as exc:
            raise tool_error(exc) from exc

    return wrapper


# ---------------------------------------------------------------- attribution


def who(name: str | None, kind: str | None) -> tuple[str, str] | None:
    return (name, kind) if name is not None and kind is not None else None


def node_with_content(n: skift.NodeInfo, *, verbose: bool) -> dict[str, Any]:
    """A node with its body and result fenced, attributed as skift attributes them."""
    return r.node(
        n,
        verbose=verbose,
        body=r.content(f"{n.ref} body", n.body, who(n.body_author, n.body_author_kind)),
        result_=r.content(f"{n.ref} result", n.result, who(n.result_author, n.result_author_kind)),
    )


def input_(i: skift.Input, verbose: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"ref": i.ref, "title": i.title}
    res = r.content(f"{i.ref} result", i.result, who(i.author, i.author_kind))
    if res is not None:
        out["result"] = res
    if i.artifacts or verbose:
        out["artifacts"] = [r.artifact(a, verbose=verbose) for a in i.artifacts]
    return out
