"""What every MCP tool shares: the parameter types, skift errors as tool errors, attributed nodes.

A tool module (``skift_mcp/_tools/<group>.py``) defines ``tools(sk)``,
which returns its tools (collected with :class:`ToolSet`); ``skift_mcp._server``
lists the tool modules. A tool's definition is compacted (no docstring
indentation, no pydantic titles, no ``null`` branches), and its failures
reach the agent as one sentence and a next move worded for an agent
(``skift_mcp._moves``), never a validator's dump.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import ToolAnnotations
from pydantic import Field, ValidationError

import skift

from . import _render as r
from ._moves import next_move

if TYPE_CHECKING:
    from mcp.server.mcpserver.context import Context

F = TypeVar("F", bound=Callable[..., Any])
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)


# Described once, in the server's instructions (skift_mcp._server.INSTRUCTIONS),
# rather than in every tool that takes them.
Ref = Annotated[str, Field(min_length=1)]
Project = str | None
LeaseId = str
Projects = list[str] | None
Kinds = list[str] | None
Labels = list[str] | None
AnyLabels = list[str] | None
AssigneeKind = Literal["agent", "user"] | None
MinPriority = Literal["p0", "p1", "p2", "p3", "p4"] | None
Parent = str | None
Limit = Annotated[int | None, Field(ge=1)]
PageToken = Annotated[str | None, Field(description="next_page of the previous call.")]
Verbose = bool


MAX_SECONDS = (
    1_000_000_000  # a duration argument's sanity bound; the server's ceilings apply below it
)


def ttl(seconds: float | None, name: str = "ttl_seconds") -> timedelta | None:
    """A duration argument as a timedelta; one that is not a finite number of seconds in
    range (``1e300``, NaN, infinity, negative) is Invalid naming the argument and the range."""
    if seconds is None:
        return None
    if not (0 <= seconds <= MAX_SECONDS):  # false for NaN too
        raise skift.Invalid(
            f"`{name}` is {seconds!r}; it must be a number of seconds from 0 to {MAX_SECONDS:,}",
            next=f"Call again with a `{name}` in that range, or leave it out for the default.",
            field=name,
        )
    return timedelta(seconds=seconds)


def as_list(values: Sequence[str] | None) -> list[str]:
    return list(values or ())


def tool_error(exc: skift.SkiftError) -> ToolError:
    """A skift error as the text an agent reads: the rule that refused, then the next move."""
    text = f"{exc.code}: {exc.message.rstrip('.')}."
    move = next_move(exc)
    if move:
        text += f" Next: {move}"
    return ToolError(text)


def bad_arguments(tool: str, exc: ValidationError) -> str:
    """Arguments the tool's schema rejects, as one sentence and a next move (no validator dump)."""
    problems: list[str] = []
    for err in exc.errors()[:3]:
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        if err["type"] == "missing":
            problems.append(f"`{where}` is required")
        else:
            problems.append(f"`{where}`: {err['msg'][:1].lower()}{err['msg'][1:]}")
    more = f" (and {len(exc.errors()) - 3} more)" if len(exc.errors()) > 3 else ""
    return (
        f"invalid: {'; '.join(problems)}{more}. "
        f"Next: call {tool} again with the arguments its input schema describes."
    )


class SkiftTool(Tool):
    """A tool whose failures reach the agent as one sentence and a next move."""

    async def run(
        self,
        arguments: dict[str, Any],
        context: Context[Any, Any],
        convert_result: bool = False,
    ) -> Any:
        try:
            return await super().run(arguments, context, convert_result)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, skift.SkiftError):
                raise tool_error(cause) from None
            if isinstance(cause, ValidationError):
                raise ToolError(bad_arguments(self.name, cause)) from None
            if isinstance(cause, ToolError) and not isinstance(exc, UnexpectedToolError):
                raise ToolError(str(cause)) from None
            raise


def compact_schema(schema: Any) -> Any:
    """A JSON schema without what costs tokens and says nothing to a model.

    Drops pydantic's ``title`` (it repeats the property name), folds an
    ``anyOf`` of one type and ``null`` into that type (leaving a parameter
    out is how an agent says "none"), and drops ``"default": null``.
    """
    if isinstance(schema, list):
        return [compact_schema(v) for v in schema]  # pyright: ignore[reportUnknownVariableType]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():  # pyright: ignore[reportUnknownVariableType]
        if key == "title" and isinstance(value, str):
            continue
        if key == "default" and value is None:
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {k: compact_schema(v) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]
            continue
        out[key] = compact_schema(value)
    branches: list[Any] = out.get("anyOf") or []
    if branches:
        kept: list[Any] = [b for b in branches if b != {"type": "null"}]
        if len(kept) == 1 and isinstance(kept[0], dict):
            del out["anyOf"]
            out = {**kept[0], **out}
        elif len(kept) < len(branches):
            out["anyOf"] = kept
    return out


def make_tool(fn: Callable[..., Any], *, name: str | None = None, read_only: bool = False) -> Tool:
    """``fn`` as a compact tool: its docstring without indentation, its schema without noise."""
    t = SkiftTool.from_function(
        fn,
        name=name,
        description=inspect.cleandoc(fn.__doc__ or ""),
        annotations=READ_ONLY if read_only else None,
    )
    t.parameters = compact_schema(t.parameters)
    return t


class ToolSet:
    """Collects the tools of one tool module: ``@tool()`` / ``@tool(name=..., read_only=True)``."""

    def __init__(self) -> None:
        self.tools: list[Tool] = []

    def __call__(self, *, name: str | None = None, read_only: bool = False) -> Callable[[F], F]:
        def deco(fn: F) -> F:
            self.tools.append(make_tool(fn, name=name, read_only=read_only))
            return fn

        return deco


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
