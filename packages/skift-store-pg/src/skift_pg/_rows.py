"""How skift's records map to PostgreSQL rows and back (no SQL, no connection).

Each mapper is derived from its record's attrs fields (:func:`from_row`, :func:`to_row`),
written and compiled once when this module is imported; the special cases are registered
by type, not written per table.
"""

from __future__ import annotations

import enum
import hashlib
import linecache
import types
import typing
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Final, TypeVar
from uuid import UUID

import attrs
import psycopg

from skift import (
    Budget,
    Comment,
    Edge,
    Event,
    Hold,
    Identity,
    IdentityInvite,
    Lease,
    Node,
    NodeOrigin,
    Principal,
    Priority,
    Project,
    Revision,
    UsageRecord,
)

Row = dict[str, Any]
Conn = psycopg.AsyncConnection[Row]
T = TypeVar("T")

_PRIORITIES: list[Priority] = list(Priority)


def _hold(row: Row) -> Hold | None:
    if row["held_at"] is None:
        return None
    return Hold(
        at=row["held_at"], by=row["held_by"], reason=row["held_reason"], group=row["hold_group"]
    )


def _hold_params(hold: Hold | None) -> Row:
    if hold is None:
        return {"held_at": None, "held_by": None, "held_reason": None, "hold_group": None}
    return {
        "held_at": hold.at,
        "held_by": hold.by,
        "held_reason": hold.reason,
        "hold_group": hold.group,
    }


# ------------------------------------------------------------------ derived from the types
#
# A record's row mapper is written from its attrs fields, once per class, when this module
# is imported, and compiled (as cattrs' generated hooks are: one function per class, visible
# in tracebacks through ``linecache``): the same expressions a hand-written mapper has, so
# the same speed on the claim's and Ready's paths (docs/benchmarks.md). A column is named
# as its field; by type, a closed set (a StrEnum) is its value (None or "" for an optional
# one unset), a priority its rank 0..4, a tuple an array, a hold its four ``held_*``
# columns. What differs is registered below (``_AS_PARAM``: the organization's id is the
# ``org`` parameter; an argument the row does not hold).

_FROM_ROW: Final[dict[Any, Callable[[str], str]]] = {
    Priority: lambda n: f'_PRIORITIES[row["{n}"]]',
    Hold: lambda n: "_hold(row)",
}
_TO_ROW: Final[dict[Any, Callable[[str], str]]] = {
    Priority: lambda n: f'"{n}": x.{n}.rank',
    Hold: lambda n: f"**_hold_params(x.{n})",
}
_AS_PARAM: Final = {"org_id": "org"}
"""A field passed to the queries under another name."""


def _optional(t: Any) -> tuple[Any, bool]:
    if typing.get_origin(t) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(t) if a is not type(None)]
        return args[0], len(args) != len(typing.get_args(t))
    return t, False


def _compile(name: str, src: str, ns: dict[str, Any]) -> Any:
    filename = f"<skift_pg row mapper {name}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    exec(compile(src, filename, "exec"), ns)
    return ns[name]


def _from_row_expr(name: str, hint: Any, ns: dict[str, Any]) -> str:
    t, opt = _optional(hint)
    col = f'row["{name}"]'
    if t in _FROM_ROW:
        return _FROM_ROW[t](name)
    if isinstance(t, type) and issubclass(t, enum.Enum):
        ns[t.__name__] = t
        return f"{t.__name__}({col}) if {col} else None" if opt else f"{t.__name__}({col})"
    if typing.get_origin(t) is tuple:
        if opt:  # a column some queries leave out
            return f'tuple(row["{name}"]) if row.get("{name}") is not None else None'
        return f"tuple({col})"
    return col


def from_row(cls: type[T], *, args: tuple[str, ...] = ()) -> Callable[..., T]:
    """The function that makes a ``cls`` from its row (``args``: fields given as arguments)."""
    hints = typing.get_type_hints(cls)
    ns: dict[str, Any] = {"_cls": cls, "_PRIORITIES": _PRIORITIES, "_hold": _hold}
    parts = [
        f"{f.name}={f.name if f.name in args else _from_row_expr(f.name, hints[f.name], ns)}"
        for f in attrs.fields(cls)
        if f.init
    ]
    fn = f"{cls.__name__.lower()}_from_row"
    params = "".join(f", {a}=()" for a in args)
    src = (
        f"def {fn}(row{params}):\n    return _cls(\n        "
        + ",\n        ".join(parts)
        + ",\n    )\n"
    )
    return _compile(fn, src, ns)


def _to_row_expr(name: str, hint: Any) -> str:
    t, opt = _optional(hint)
    if t in _TO_ROW:
        return _TO_ROW[t](name)
    key = f'"{_AS_PARAM.get(name, name)}": '
    v = f"x.{name}"
    if isinstance(t, type) and issubclass(t, enum.Enum):
        return key + (f"{v}.value if {v} else None" if opt else f"{v}.value")
    if typing.get_origin(t) is tuple:
        return key + (f"list({v}) if {v} is not None else None" if opt else f"list({v})")
    return key + v


def to_row(cls: type[Any], *, skip: tuple[str, ...] = ()) -> Callable[[Any], Row]:
    """The function that makes a record's query parameters (``skip``: fields not stored)."""
    hints = typing.get_type_hints(cls)
    ns: dict[str, Any] = {"_hold_params": _hold_params}
    parts = [_to_row_expr(f.name, hints[f.name]) for f in attrs.fields(cls) if f.name not in skip]
    fn = f"{cls.__name__.lower()}_params"
    src = f"def {fn}(x):\n    return {{\n        " + ",\n        ".join(parts) + ",\n    }\n"
    return _compile(fn, src, ns)


project_from_row: Final[Callable[[Row], Project]] = from_row(Project)
node_from_row: Final[Callable[[Row], Node]] = from_row(Node)
edge_from_row: Final[Callable[[Row], Edge]] = from_row(Edge)
lease_from_row: Final[Callable[[Row], Lease]] = from_row(Lease)
principal_from_row: Final[Callable[[Row], Principal]] = from_row(Principal)
invite_from_row: Final[Callable[[Row], IdentityInvite]] = from_row(IdentityInvite)
identity_from_row: Final[Callable[[Row], Identity]] = from_row(Identity)
event_from_row: Final[Callable[[Row], Event]] = from_row(Event)
usage_from_row: Final[Callable[[Row], UsageRecord]] = from_row(UsageRecord)
budget_from_row: Final[Callable[[Row], Budget]] = from_row(Budget)
origin_from_row: Final[Callable[[Row], NodeOrigin]] = from_row(NodeOrigin)
_comment_from_row: Final = from_row(Comment, args=("revisions",))


def comment_from_row(row: Row, revisions: tuple[Revision, ...] = ()) -> Comment:
    return _comment_from_row(row, revisions)


comment_params: Final = to_row(Comment, skip=("revisions",))
node_params: Final = to_row(Node)
project_params: Final = to_row(Project)
lease_params: Final = to_row(Lease)


def ready_keys(keys: Sequence[tuple[UUID, int, datetime, int]]) -> Row:
    """A Ready walk's position in each project (``ReadyQuery.after_keys``) as ready_heads
    takes it: one array per part, an element per project."""
    parts = list(zip(*keys, strict=True)) if keys else [(), (), (), ()]
    return {name: list(col) for name, col in zip(("kp", "kr", "kc", "kn"), parts, strict=True)}


def org_lock_key(org_id: UUID) -> int:
    digest = hashlib.sha256(b"skift-graph:" + org_id.bytes).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def principals_lock_key(org_id: UUID) -> int:
    """The advisory lock that serializes adding people to one organization (its first
    person is its admin: two arriving at once must not both be)."""
    digest = hashlib.sha256(b"skift-principals:" + org_id.bytes).digest()
    return int.from_bytes(digest[:8], "big", signed=True)
