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


def unknown_arguments(tool: str, given: Sequence[str], known: Sequence[str]) -> str | None:
    """The refusal of arguments the tool does not take, naming each and the closest known
    one; None when every argument is known. A misspelt filter (``label`` for ``labels``)
    silently ignored would widen a claim to work the agent never asked for."""
    import difflib

    unknown = [name for name in given if name not in known]
    if not unknown:
        return None
    parts: list[str] = []
    moves: list[str] = []
    for name in unknown[:3]:
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        if close:
            parts.append(f"`{name}` (did you mean `{close[0]}`?)")
            moves.append(f"`{close[0]}` for `{name}`")
        else:
            parts.append(f"`{name}`")
    which = "is not an argument" if len(unknown) == 1 else "are not arguments"
    more = f" (and {len(unknown) - 3} more)" if len(unknown) > 3 else ""
    move = f"use {', '.join(moves)}" if moves else "leave it out"
    return (
        f"invalid: {', '.join(parts)}{more} {which} of {tool}; nothing was done. "
        f"Next: call {tool} again and {move} (its input schema lists the arguments)."
    )


class SkiftTool(Tool):
    """A tool whose failures reach the agent as one sentence and a next move; arguments it
    does not take are refused before it runs (no lease taken, nothing written)."""

    async def run(
        self,
        arguments: dict[str, Any],
        context: Context[Any, Any],
        convert_result: bool = False,
    ) -> Any:
        known: dict[str, Any] = self.parameters.get("properties") or {}
        refusal = unknown_arguments(self.name, list(arguments), list(known))
        if refusal is not None:
            raise ToolError(refusal)
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
    out is how an agent says "none"), and drops a default that is the
    type's zero value (``null``, ``false``, ``""``, ``[]``): leaving the
    parameter out says the same.
    """
    if isinstance(schema, list):
        return [compact_schema(v) for v in schema]  # pyright: ignore[reportUnknownVariableType]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():  # pyright: ignore[reportUnknownVariableType]
        if key == "title" and isinstance(value, str):
            continue
        if key == "default" and (value is None or value is False or value == "" or value == []):
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


def compact_output_schema(schema: Any) -> Any:
    """An output schema two levels deep, without what costs tokens, still true of every answer.

    A client validates each result against it, so it may only widen:
    ``title``, ``description``, ``default`` and ``"additionalProperties":
    true`` go (the answers are what they are; more properties are allowed
    anyway), a shared shape keeps its required properties, an ``anyOf`` of one plain type and ``null`` becomes ``"type": [T,
    "null"]``, and a shape nested in a shared one (a node's attributed body
    inside the node) is only ``{"type": "object"}``: the tool descriptions
    and the server's instructions say what those carry, and every tool would
    otherwise repeat them.
    """
    if not isinstance(schema, dict) or "$defs" not in schema:
        return _compact_output(schema)
    defs: dict[str, Any] = dict(schema["$defs"])  # pyright: ignore[reportUnknownArgumentType]
    shallow = {name: _objects_for_refs(d) for name, d in defs.items()}
    top = {k: v for k, v in schema.items() if k != "$defs"}  # pyright: ignore[reportUnknownVariableType]
    used = _refs(top)
    pending = list(used)
    while pending:
        for ref in _refs(shallow.get(pending.pop(), {})):
            if ref not in used:
                used.add(ref)
                pending.append(ref)
    out = _compact_output(top)
    if used:
        out["$defs"] = {
            n: _compact_output(_required_only(shallow[n])) for n in sorted(used) if n in shallow
        }
    return out


def _required_only(schema: dict[str, Any]) -> dict[str, Any]:
    """A shared shape with its required properties only (the others stay allowed)."""
    required: list[str] = schema.get("required") or []
    props: dict[str, Any] = schema.get("properties") or {}
    if not props:
        return schema
    return {**schema, "properties": {k: v for k, v in props.items() if k in required}}


def _refs(schema: Any) -> set[str]:
    if isinstance(schema, list):
        return set().union(*(_refs(v) for v in schema)) if schema else set()  # pyright: ignore[reportUnknownVariableType]
    if not isinstance(schema, dict):
        return set()
    found: set[str] = set()
    for key, value in schema.items():  # pyright: ignore[reportUnknownVariableType]
        if key == "$ref" and isinstance(value, str):
            found.add(value.rsplit("/", 1)[-1])
        else:
            found |= _refs(value)
    return found


def _objects_for_refs(schema: Any) -> Any:
    """A shared shape whose own nested shapes are only ``{"type": "object"}``."""
    if isinstance(schema, list):
        return [_objects_for_refs(v) for v in schema]  # pyright: ignore[reportUnknownVariableType]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        return {"type": "object"}
    return {k: _objects_for_refs(v) for k, v in schema.items()}  # pyright: ignore[reportUnknownVariableType]


def _compact_output(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_compact_output(v) for v in schema]  # pyright: ignore[reportUnknownVariableType]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():  # pyright: ignore[reportUnknownVariableType]
        if key in ("title", "description") and isinstance(value, str):
            continue
        if key == "default" or (key == "additionalProperties" and value is True):
            continue  # (additional properties are allowed unless a schema says otherwise)
        if key in ("properties", "$defs") and isinstance(value, dict):
            out[key] = {k: _compact_output(v) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]
            continue
        out[key] = _compact_output(value)
    branches: list[Any] = out.get("anyOf") or []
    if len(branches) == 2 and {"type": "null"} in branches:
        other = next(b for b in branches if b != {"type": "null"})
        if isinstance(other, dict) and set(other) == {"type"} and isinstance(other["type"], str):  # pyright: ignore[reportUnknownArgumentType]
            del out["anyOf"]
            out["type"] = [other["type"], "null"]
    return out


def make_tool(fn: Callable[..., Any], *, name: str | None = None, read_only: bool = False) -> Tool:
    """``fn`` as a compact tool: its docstring without indentation, its schemas without noise."""
    t = SkiftTool.from_function(
        fn,
        name=name,
        description=inspect.cleandoc(fn.__doc__ or ""),
        annotations=READ_ONLY if read_only else None,
    )
    t.parameters = compact_schema(t.parameters)
    meta = t.fn_metadata
    if meta.output_schema is not None:
        meta.output_schema = compact_output_schema(meta.output_schema)
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
