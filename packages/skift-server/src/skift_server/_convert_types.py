"""One converter between the views (attrs classes) and the skift.v1 messages, from their types.

A view and its message name their fields alike; the converter (cattrs) moves each field
by its type, with the special cases registered once: a Decimal travels as its string (an
unset one reads as 0), a timestamp leaves as UTC and comes back aware UTC (unset: the
epoch), a tuple is a repeated field. A message whose fields differ in more than that keeps
a function of its own (``_convert_graph``, ``_convert_ops``, ``_convert_records``) until its
differences are registered here.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any, TypeVar

import attrs
import betterproto2
import cattrs

from ._convert import ts, utc

V = TypeVar("V")
M = TypeVar("M", bound=betterproto2.Message)

converter = cattrs.Converter()
converter.register_unstructure_hook(Decimal, str)
converter.register_structure_hook(Decimal, lambda v, _: Decimal(v or "0"))
converter.register_unstructure_hook(datetime, utc)
converter.register_structure_hook(datetime, lambda v, _: ts(v))


def to_pb(view: attrs.AttrsInstance, cls: type[M]) -> M:
    """The message ``cls`` carrying ``view``'s fields."""
    raw: dict[str, Any] = converter.unstructure(view)
    fields: dict[str, Any] = {}
    for name, value in raw.items():
        fields[name] = list(value) if isinstance(value, tuple) else value  # pyright: ignore[reportUnknownArgumentType]
    return cls(**fields)


def from_pb(message: betterproto2.Message, cls: type[V]) -> V:
    """The view ``cls`` from ``message``'s fields of the same names."""
    names = [f.name for f in attrs.fields(cls)]  # pyright: ignore[reportArgumentType, reportUnknownVariableType, reportUnknownArgumentType]
    return converter.structure({n: getattr(message, n) for n in names}, cls)
