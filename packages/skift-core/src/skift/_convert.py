"""Serialization at the edges: one cattrs converter for JSON-shaped dicts.

Models never grow ``to_dict`` methods; the CLI, the server, the MCP tools and
the idempotency record all go through this converter. Writing goes through
``to_json`` (``_json``: the same output without cattrs, kept equal to this
converter's by tests/core/test_to_json.py); reading through ``from_json``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, TypeVar
from uuid import UUID

from cattrs.gen import make_dict_unstructure_fn, override
from cattrs.preconf.json import make_converter

from ._json import to_json as to_json
from ._pages import Page
from ._parts import PART_TYPES, Part, part_from_dict, part_to_dict
from ._views import ReadyPage, Reason

T = TypeVar("T")

json_converter = make_converter()
json_converter.register_unstructure_hook(UUID, str)
json_converter.register_structure_hook(UUID, lambda v, _: UUID(str(v)))
json_converter.register_unstructure_hook(datetime, lambda d: d.isoformat())
json_converter.register_structure_hook(datetime, lambda v, _: datetime.fromisoformat(str(v)))
json_converter.register_unstructure_hook(Reason, lambda r: {"kind": r.kind, **r.detail})


def _structure_reason(value: Any, _: type) -> Reason:
    fields = dict(value)
    kind = fields.pop("kind")
    return Reason(kind=kind, detail=fields)


json_converter.register_structure_hook(Reason, _structure_reason)


# money is exact: a Decimal travels as its string
json_converter.register_unstructure_hook(Decimal, str)
json_converter.register_structure_hook(Decimal, lambda v, _: Decimal(str(v)))
# an artifact part is one of three shapes, told apart by its "type"
json_converter.register_unstructure_hook_func(
    lambda t: t in PART_TYPES.values(), lambda p: part_to_dict(p)
)
json_converter.register_structure_hook(Part, lambda v, _: part_from_dict(v))
# a page is a list of its items (its positions travel apart, as next_page)
json_converter.register_unstructure_hook(
    ReadyPage, make_dict_unstructure_fn(ReadyPage, json_converter, ends=override(omit=True))
)
json_converter.register_unstructure_hook_func(
    lambda t: isinstance(t, type) and issubclass(t, Page),
    lambda p: [json_converter.unstructure(x) for x in p],
)


def from_json(value: Any, cls: type[T]) -> T:
    return json_converter.structure(value, cls)


def seconds(span: timedelta) -> str:
    """A duration in words every surface reads alike: ``1 second``, ``86,400 seconds``
    (never Python's ``0:00:01``)."""
    n = span.total_seconds()
    return "1 second" if n == 1 else f"{n:,g} seconds"
