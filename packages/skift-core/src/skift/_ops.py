"""The patch format: a flat list of operations applied in one transaction.

Written for a model to generate correctly on the first try. The project is
hoisted to the patch; ``create_node`` takes an ``alias`` that any later
operation may use wherever a node reference is expected.

In ``update_node`` a field left ``None`` is unchanged; an empty string clears
``parent``, ``assignee`` and ``assignee_kind``.
"""

from __future__ import annotations

import enum
import functools
import hashlib
import json
import types
import typing
from collections.abc import Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

import attrs

from ._errors import Invalid
from ._models import AssigneeKind, Priority
from ._parts import Artifact, artifact_to_dict


def _amount(value: object) -> Decimal | str | None:
    """Money as a Decimal (numbers and numeric strings); None and "" (clear) pass through."""
    if value is None or isinstance(value, Decimal):
        return value
    if isinstance(value, str) and not value.strip():
        return ""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise Invalid(f"{value!r} is not an amount", next="Give a number such as 12.50.")
    try:
        return Decimal(str(value).strip())
    except InvalidOperation:
        raise Invalid(f"{value!r} is not an amount", next="Give a number such as 12.50.") from None


def _priority(value: object) -> Priority:
    """A priority from ``p0``..``p4`` (or a Priority); anything else is Invalid."""
    try:
        return Priority(value)
    except ValueError:
        raise Invalid(
            f"priority {value!r} is not one of p0, p1, p2, p3, p4",
            next="Give p0 (most urgent) to p4.",
            field="priority",
        ) from None


def _opt_priority(value: object) -> Priority | None:
    return None if value is None else _priority(value)


def _opt_assignee_kind(value: object) -> AssigneeKind | None:
    if value is None:
        return None
    try:
        return AssigneeKind(value)
    except ValueError:
        raise Invalid(
            f"assignee_kind {value!r} is not user or agent",
            next="Give user (a gate, for a person) or agent.",
            field="assignee_kind",
        ) from None


def _max_nodes(value: object) -> int:
    """A cascade's bound: a whole number, zero or more (it counts nodes)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise Invalid(
            f"cascade.max_nodes is {value!r}; it is a count of nodes, zero or more",
            next="State how many nodes the drop may take, e.g. cascade max_nodes 10.",
            field="cascade.max_nodes",
        )
    return value


@attrs.frozen(kw_only=True)
class Cascade:
    """The blast radius a cascading drop states before it runs."""

    max_nodes: int = attrs.field(converter=_max_nodes)


@attrs.frozen(kw_only=True)
class CreateNode:
    title: str
    alias: str | None = None
    body: str = ""
    kind: str = "task"
    priority: Priority = attrs.field(default=Priority.P2, converter=_priority)
    parent: str | None = None
    labels: tuple[str, ...] = ()
    assignee_kind: AssigneeKind | None = attrs.field(default=None, converter=_opt_assignee_kind)
    assignee: str | None = None
    blocked_by: tuple[str, ...] = ()
    op: str = attrs.field(default="create_node", init=False)


@attrs.frozen(kw_only=True)
class UpdateNode:
    node: str
    title: str | None = None
    body: str | None = None
    kind: str | None = None
    priority: Priority | None = attrs.field(default=None, converter=_opt_priority)
    parent: str | None = None
    labels: tuple[str, ...] | None = None
    assignee_kind: str | None = None
    assignee: str | None = None
    # money (see skift._usage): an amount, "" to clear; only a person may set a cap
    budget: Decimal | str | None = attrs.field(default=None, converter=_amount)
    cap: Decimal | str | None = attrs.field(default=None, converter=_amount)
    op: str = attrs.field(default="update_node", init=False)


@attrs.frozen(kw_only=True)
class DropNode:
    node: str
    reason: str
    cascade: Cascade | None = None
    op: str = attrs.field(default="drop_node", init=False)


@attrs.frozen(kw_only=True)
class CompleteNode:
    node: str
    result: str = ""
    artifacts: tuple[Artifact, ...] = attrs.field(default=(), converter=tuple)
    op: str = attrs.field(default="complete_node", init=False)


@attrs.frozen(kw_only=True)
class ReopenNode:
    node: str
    reason: str
    op: str = attrs.field(default="reopen_node", init=False)


@attrs.frozen(kw_only=True)
class HoldNode:
    node: str
    reason: str
    op: str = attrs.field(default="hold_node", init=False)


@attrs.frozen(kw_only=True)
class UnholdNode:
    node: str
    reason: str
    op: str = attrs.field(default="unhold_node", init=False)


@attrs.frozen(kw_only=True)
class AddEdge:
    from_: str
    to: str
    kind: str = "blocks"
    op: str = attrs.field(default="add_edge", init=False)


@attrs.frozen(kw_only=True)
class RemoveEdge:
    from_: str
    to: str
    kind: str = "blocks"
    op: str = attrs.field(default="remove_edge", init=False)


@attrs.frozen(kw_only=True)
class AddComment:
    """A comment on a node (an alias of this patch works); ``reply_to`` is a comment id."""

    node: str
    body: str
    reply_to: str | None = None
    op: str = attrs.field(default="add_comment", init=False)


@attrs.frozen(kw_only=True)
class AttachArtifact:
    """Attach an artifact to a node (an alias of this patch works); see skift._artifacts."""

    node: str
    artifact: Artifact
    op: str = attrs.field(default="attach_artifact", init=False)


Op = (
    CreateNode
    | UpdateNode
    | DropNode
    | CompleteNode
    | ReopenNode
    | HoldNode
    | UnholdNode
    | AddEdge
    | RemoveEdge
    | AttachArtifact
    | AddComment
)

OpLike = Op | dict[str, Any]
"""An operation, or its JSON form (what ``parse_op`` reads)."""

OP_TYPES: dict[str, type[Op]] = {
    "create_node": CreateNode,
    "update_node": UpdateNode,
    "drop_node": DropNode,
    "complete_node": CompleteNode,
    "reopen_node": ReopenNode,
    "hold_node": HoldNode,
    "unhold_node": UnholdNode,
    "add_edge": AddEdge,
    "remove_edge": RemoveEdge,
    "attach_artifact": AttachArtifact,
    "add_comment": AddComment,
}

STRUCTURAL_OPS = (AddEdge, RemoveEdge)


def _structure(value: object, tp: Any, path: str) -> Any:
    """Check ``value`` against the annotation ``tp``; raise Invalid naming ``path``."""
    origin = typing.get_origin(tp)
    if origin in (types.UnionType, typing.Union):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None:
            return None
        if len(args) > 1 and all(isinstance(a, type) and attrs.has(a) for a in args):
            return _structure_tagged(value, args, path)
        return _structure(value, args[0], path)
    if tp is Decimal:
        if isinstance(value, str) and not value.strip():
            return ""
        if isinstance(value, bool) or not isinstance(value, int | float | str | Decimal):
            raise _bad(path, f"expected an amount, got {_typename(value)}")
        try:
            return Decimal(str(value).strip())
        except InvalidOperation:
            raise _bad(path, f"{value!r} is not an amount") from None
    if origin is dict:
        if not isinstance(value, Mapping):
            raise _bad(path, f"expected an object, got {_typename(value)}")
        mapping: dict[Any, Any] = dict(value)  # pyright: ignore[reportUnknownArgumentType]
        if not all(isinstance(k, str) for k in mapping):
            raise _bad(path, "expected an object with string keys")
        return mapping
    if tp is str:
        if not isinstance(value, str):
            raise _bad(path, f"expected a string, got {_typename(value)}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _bad(path, f"expected a whole number, got {_typename(value)}")
        return value
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(value)
        except ValueError:
            choices = ", ".join(str(m.value) for m in tp)
            raise _bad(path, f"{value!r} is not one of {choices}") from None
    if origin is tuple:
        if isinstance(value, str | bytes) or not isinstance(value, Sequence):
            raise _bad(path, f"expected a list of strings, got {_typename(value)}")
        items: list[object] = list(value)  # pyright: ignore[reportUnknownArgumentType]
        item_tp = typing.get_args(tp)[0]
        if item_tp is not str:
            return tuple(_structure(v, item_tp, f"{path}[{i}]") for i, v in enumerate(items))
        return tuple(_structure(v, str, f"{path}[{i}]") for i, v in enumerate(items))
    if isinstance(tp, type) and attrs.has(tp):
        if isinstance(value, tp):
            return value
        return _structure_attrs(value, tp, path)
    raise AssertionError(f"no structure rule for {tp!r}")  # pragma: no cover


@functools.cache
def _hints(cls: type[Any]) -> dict[str, Any]:
    """A class's resolved annotations, once per class (resolving them per operation made
    a 5,000-operation patch take seconds)."""
    return typing.get_type_hints(cls)


def _structure_attrs(value: object, cls: type[Any], path: str) -> Any:
    if not isinstance(value, Mapping):
        raise _bad(path, f"expected an object, got {_typename(value)}")
    doc: dict[str, Any] = dict(value)  # pyright: ignore[reportUnknownArgumentType]
    hints = _hints(cls)
    kwargs: dict[str, Any] = {}
    known: set[str] = set()
    for f in attrs.fields(cls):
        if not f.init:
            if f.name == "type" and f.name in doc:  # a part's tag, checked by _structure_tagged
                known.add(f.name)
            continue
        key = "from" if f.name == "from_" else f.name
        known.add(key)
        if key not in doc:
            if f.default is attrs.NOTHING:
                raise _bad(f"{path}.{key}", "required field missing")
            continue
        kwargs[f.name] = _structure(doc[key], hints[f.name], f"{path}.{key}")
    extra = sorted(set(doc) - known)
    if extra:
        raise _bad(path, f"unknown field {', '.join(extra)}; known: {', '.join(sorted(known))}")
    return cls(**kwargs)


def _structure_tagged(value: object, classes: Sequence[Any], path: str) -> Any:
    """One of several attrs classes, chosen by the ``type`` field of the document."""
    if any(isinstance(value, c) for c in classes):
        return value
    if not isinstance(value, Mapping):
        raise _bad(path, f"expected an object, got {_typename(value)}")
    doc: dict[str, Any] = dict(value)  # pyright: ignore[reportUnknownArgumentType]
    tags = {str(attrs.fields_dict(c)["type"].default): c for c in classes}
    cls = tags.get(str(doc.get("type")))
    if cls is None:
        raise _bad(f"{path}.type", f"{doc.get('type')!r} is not one of {', '.join(tags)}")
    return _structure_attrs(doc, cls, path)


def _typename(value: object) -> str:
    return "null" if value is None else type(value).__name__


class _FieldError(Exception):
    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


def _bad(path: str, problem: str) -> _FieldError:
    return _FieldError(path, problem)


def parse_op(doc: object, index: int = 0) -> Op:
    """One operation from its JSON/YAML form, or :class:`Invalid` naming the index and field."""
    where = f"ops[{index}]"
    if not isinstance(doc, Mapping):
        raise Invalid(
            f"{where} is not an object", next="Each operation is an object with an 'op' field."
        )
    fields: dict[str, Any] = dict(doc)  # pyright: ignore[reportUnknownArgumentType]
    name = fields.pop("op", None)
    if name not in OP_TYPES:
        raise Invalid(
            f"{where}.op is {name!r}, which is not an operation",
            next="Use one of: " + ", ".join(OP_TYPES) + ".",
            index=index,
            field="op",
        )
    cls = OP_TYPES[str(name)]
    try:
        op: Op = _structure_attrs(fields, cls, where)
    except _FieldError as exc:
        raise Invalid(
            f"{exc.path} ({name}): {exc.problem}",
            next=f"Fix {where} and send the patch again; see 'Patch documents' in docs/concepts.md.",
            index=index,
            field=exc.path,
        ) from None
    return op


def parse_value(value: object, tp: Any, field: str) -> Any:
    """A value of an operation field's type from its JSON form, given outside a patch (a
    Complete's artifacts): :class:`Invalid` naming the path from ``field``."""
    try:
        return _structure(value, tp, field)
    except _FieldError as exc:
        raise Invalid(
            f"{exc.path}: {exc.problem}",
            next=f"Fix {field} and send it again; see 'Patch documents' in docs/concepts.md.",
            field=exc.path,
        ) from None


def parse_ops(docs: object) -> list[Op]:
    if isinstance(docs, str | bytes) or not isinstance(docs, Sequence):
        raise Invalid("ops must be a list of operations", next="Give 'ops' as a list.", field="ops")
    items: list[object] = list(docs)  # pyright: ignore[reportUnknownArgumentType]
    return [parse_op(d, i) for i, d in enumerate(items)]


def op_to_dict(op: Op) -> dict[str, Any]:
    out: dict[str, Any] = {"op": op.op}
    for f in attrs.fields(type(op)):
        value = getattr(op, f.name)
        if not f.init or value == f.default:
            continue
        key = "from" if f.name == "from_" else f.name
        if isinstance(value, Cascade):
            out[key] = {"max_nodes": value.max_nodes}
        elif isinstance(value, Artifact):
            out[key] = artifact_to_dict(value)
        elif isinstance(value, Decimal):
            out[key] = str(value)
        elif isinstance(value, tuple) and value and isinstance(value[0], Artifact):
            out[key] = [artifact_to_dict(a) for a in value]  # pyright: ignore[reportUnknownArgumentType,reportUnknownVariableType]
        elif isinstance(value, tuple):
            out[key] = list(value)  # pyright: ignore[reportUnknownArgumentType]
        else:
            out[key] = value
    return out


def canonical_digest(doc: Any) -> str:
    """The SHA-256 of a JSON document in canonical form (sorted keys, no whitespace):
    what an idempotent request is fingerprinted by."""
    canon = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canon.encode()).hexdigest()


def fingerprint(project: str, ops: Sequence[Op], lease: str | None) -> str:
    """A digest of what a patch asks for; key order and whitespace do not change it."""
    return canonical_digest(
        {"project": project, "lease": lease, "ops": [op_to_dict(o) for o in ops]}
    )
