"""The shared edge of skift's views and the skift.v1 messages: JSON <-> Struct, time and enums.

The views move through one converter (``_convert_types``), which uses these leaves; the
patch operations have their own (``_convert_ops``), and a request's node filter becomes
keyword arguments in ``_convert_graph``. No rule lives in any of them: values are moved,
never judged (the engine validates).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

import betterproto2

import skift

from ._proto.google.protobuf import ListValue, NullValue, Struct, Value

E = TypeVar("E", bound=betterproto2.Enum)

# ------------------------------------------------------------------ JSON <-> Struct


def _jsonable(value: object) -> Any:
    """A JSON-shaped copy of ``value`` (what a Struct can carry)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, enum.Enum):
        return _jsonable(value.value)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Mapping):
        items: Mapping[object, object] = value  # pyright: ignore[reportUnknownVariableType]
        return {str(k): _jsonable(v) for k, v in items.items()}
    if isinstance(value, list | tuple | set | frozenset):
        seq: Sequence[object] = list(value)  # pyright: ignore[reportUnknownArgumentType]
        return [_jsonable(v) for v in seq]
    return str(value)


def jsonable(value: object) -> Any:
    """``value`` as plain JSON (dicts, lists, strings, numbers, booleans, None)."""
    return _jsonable(value)


def to_value(value: object) -> Value:
    v = _jsonable(value)
    if v is None:
        return Value(null_value=NullValue.NULL_VALUE)
    if isinstance(v, bool):
        return Value(bool_value=v)
    if isinstance(v, int | float):
        return Value(number_value=float(v))
    if isinstance(v, str):
        return Value(string_value=v)
    if isinstance(v, dict):
        return Value(struct_value=to_struct(v))  # pyright: ignore[reportUnknownArgumentType]
    items: list[object] = v
    return Value(list_value=ListValue(values=[to_value(x) for x in items]))


def to_struct(value: Mapping[str, Any]) -> Struct:
    return Struct(fields={str(k): to_value(v) for k, v in value.items()})


def from_value(value: Value) -> Any:
    """A Python value from a protobuf Value; whole numbers come back as ``int``."""
    if value.struct_value is not None:
        return from_struct(value.struct_value)
    if value.list_value is not None:
        return [from_value(v) for v in value.list_value.values]
    if value.string_value is not None:
        return value.string_value
    if value.bool_value is not None:
        return value.bool_value
    if value.number_value is not None:
        n = value.number_value
        # Struct numbers are doubles; the views carry counts as ints.
        if math.isfinite(n) and n == int(n) and abs(n) < 2**53:
            return int(n)
        return n
    return None


def from_struct(value: Struct | None) -> dict[str, Any]:
    if value is None:
        return {}
    return {k: from_value(v) for k, v in value.fields.items()}


# ------------------------------------------------------------------ time


def utc(value: datetime | None) -> datetime | None:
    """A timestamp for a message: naive values are UTC."""
    if value is None:
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def ts(value: datetime | None) -> datetime:
    """A message's timestamp as an aware UTC datetime (the epoch when unset)."""
    if value is None:
        return datetime.fromtimestamp(0, UTC)
    return value.astimezone(UTC)


def opt_ts(value: datetime | None) -> datetime | None:
    return value.astimezone(UTC) if value is not None else None


# ------------------------------------------------------------------ enums
#
# skift's closed sets are lowercase strings (``p0``, ``open``, ``agent``); on
# the wire they are enums whose values are the same words upper-cased under
# the enum's prefix (PRIORITY_P0, NODE_STATUS_OPEN). UNSPECIFIED is "not
# given".


def enum_pb(cls: type[E], value: object) -> E:
    """The enum value of ``cls`` for skift's word ``value`` (UNSPECIFIED for None or "")."""
    word = str(getattr(value, "value", value) or "")
    if not word:
        return cls(0)
    try:
        return cls[word.upper()]
    except KeyError:
        words = [m.name.lower() for m in cls if m.value]
        raise skift.Invalid(
            f"{word!r} is not a {cls.__name__}",
            next=f"Use one of: {', '.join(words[:-1])} or {words[-1]}.",
        ) from None


def enum_word(value: betterproto2.Enum | int | None, cls: type[E], field: str) -> str | None:
    """skift's word for an enum value from a message: None for UNSPECIFIED.

    A number the enum does not define (a client built from a newer proto, or
    garbage) is Invalid, naming the field.
    """
    if value is None:
        return None
    number = int(value)
    member = next((m for m in cls.__members__.values() if m.value == number), None)
    if member is None:
        # the names as the proto spells them (PRIORITY_P0), never Python's (Priority.P0)
        names = cls.betterproto_value_to_renamed_proto_names()  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportUnknownVariableType]
        spelled = [str(names.get(m.value, m.name)) for m in cls if m.value != 0]  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        raise skift.Invalid(
            f"{field} is {int(value)}, which is not a skift.v1.{cls.__name__} value",
            next="Use one of: " + ", ".join(spelled) + ", or leave it unset.",
            field=field,
        )
    return None if member.value == 0 else member.name.lower()


def kind_word(value: betterproto2.Enum | int | None) -> str | None:
    """A principal kind from a response (UNSPECIFIED: absent), leniently."""
    if value is None or int(value) == 0:
        return None
    name = getattr(value, "name", None)
    return name.lower() if isinstance(name, str) and name.isidentifier() else None


def page_size(limit: int | None) -> int:
    """``limit`` as a wire page size: None is 0 (the server's default); an explicit 0,
    which the wire cannot tell from "default", is sent as -1 so the server refuses it
    as the local API does."""
    if limit is None:
        return 0
    return limit if limit != 0 else -1
