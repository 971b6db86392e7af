"""``skift.to_json``: a view as JSON-shaped values, without cattrs.

The JSON shapes of SURFACE.md are the views' fields, in their order, with a few
special cases: a datetime (or date) is its ISO 8601 text, a UUID and a Decimal their
strings, bytes base85 text, a tuple, list or set a list, a mapping a dict, a
:class:`Reason` its ``kind`` beside its details, an artifact part :func:`part_to_dict`'s
form, a :class:`ReadyPage` without its keyset ``ends``, a ``Page`` the list of its
items. A StrEnum or IntEnum stays as it is (it is its string or number), any other enum
becomes its value; anything else is passed as it is.

This is what ``skift._convert.json_converter`` (cattrs, which also reads JSON back:
``from_json``) writes for the same values; tests/core/test_to_json.py holds the two to
the same output on every view. This one imports nothing heavy and makes no code:
``skift ready --json`` and the MCP tools' first answer pay for cattrs no more.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from datetime import date
from decimal import Decimal
from typing import Any
from uuid import UUID

from ._parts import PART_TYPES, part_to_dict

_Plain = Callable[[Any], Any]
_by_class: dict[type[Any], _Plain] = {}


def to_json(value: object) -> Any:
    """The JSON-shaped form of a view (dicts, lists, strings, numbers)."""
    cls = value.__class__
    if cls is str or cls is int or cls is bool or cls is float or value is None:
        return value
    got = _by_class.get(cls)
    if got is None:
        got = _by_class[cls] = _plain_for(cls)
    return got(value)


def _same(value: Any) -> Any:
    return value


def _sequence(value: Any) -> list[Any]:
    return [to_json(x) for x in value]


def _mapping(value: Any) -> dict[Any, Any]:
    return {to_json(k): to_json(v) for k, v in value.items()}


def _reason(r: Any) -> dict[str, Any]:
    return {"kind": r.kind, **r.detail}


def _base85(value: bytes) -> str:
    from base64 import b85encode

    return (b85encode(value) if value else b"").decode("utf8")


def _enum_value(value: enum.Enum) -> Any:
    return to_json(value.value)


def _fields(cls: type[Any], names: tuple[str, ...]) -> _Plain:
    shaped = _shaped(cls, names)
    if shaped:
        pairs = tuple((name, shaped.get(name, to_json)) for name in names)

        def plain(value: Any) -> dict[str, Any]:
            return {name: write(getattr(value, name)) for name, write in pairs}

    else:

        def plain(value: Any) -> dict[str, Any]:
            return {name: to_json(getattr(value, name)) for name in names}

    plain.__qualname__ = f"to_json<{cls.__qualname__}>"
    return plain


def _shaped(cls: type[Any], names: tuple[str, ...]) -> dict[str, _Plain]:
    """The fields whose declared type holds a fixed-length tuple (``tuple[int, UUID]``), which
    stays a tuple (any other tuple becomes a list): how each is written."""
    import typing

    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # a name only a type checker sees: every tuple a list
        return {}
    out: dict[str, _Plain] = {}
    for name in names:
        write = _shape(hints.get(name))
        if write is not None:
            out[name] = write
    return out


def _shape(hint: Any) -> _Plain | None:
    """How a value declared ``hint`` is written, where a fixed-length tuple is in it (else None:
    by its class)."""
    import types
    import typing

    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is tuple and args and args[-1] is not Ellipsis:
        items = tuple(_shape(a) or to_json for a in args)
        return lambda v: tuple(w(x) for w, x in zip(items, v, strict=False))
    if origin in (typing.Union, types.UnionType):
        shapes = [_shape(a) for a in args if a is not type(None)]
        if len(shapes) == 1 and shapes[0] is not None:
            inner = shapes[0]
            return lambda v: None if v is None else inner(v)
        return None
    from collections import abc

    if origin in (tuple, list, abc.Sequence) and args:
        item = _shape(args[0])
        if item is not None:
            return lambda v: [item(x) for x in v]
    return None


def _plain_for(cls: type[Any]) -> _Plain:
    """How a value of ``cls`` becomes JSON-shaped (made once per class)."""
    if issubclass(cls, str | int | float) and not issubclass(cls, enum.Enum):
        return _same
    if issubclass(cls, enum.Enum):
        return _same if issubclass(cls, str | int) else _enum_value
    if issubclass(cls, date):  # a datetime too
        return cls.isoformat
    if issubclass(cls, UUID | Decimal):
        return str
    if issubclass(cls, bytes):
        return _base85
    if cls.__module__ == "skift._views" and cls.__name__ == "Reason":
        return _reason
    if cls in PART_TYPES.values():
        return part_to_dict
    if issubclass(cls, list | tuple | set | frozenset):  # a Page is a list
        return _sequence
    if issubclass(cls, Mapping):
        return _mapping
    attributes: tuple[Any, ...] | None = getattr(cls, "__attrs_attrs__", None)
    if attributes is not None:
        names = tuple(a.name for a in attributes if a.init)  # as cattrs: init=False is left
        if cls.__module__ == "skift._views" and cls.__name__ == "ReadyPage":
            # a page's keyset positions stay on the server
            names = tuple(n for n in names if n != "ends")
        return _fields(cls, names)
    if hasattr(cls, "__dataclass_fields__"):
        import dataclasses

        return _fields(cls, tuple(f.name for f in dataclasses.fields(cls)))
    return _same
