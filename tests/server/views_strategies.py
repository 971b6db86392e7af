"""Hypothesis strategies for the views, from their attrs types and their messages' fields.

A view field is drawn by its type; where its message says more (a plain string that is an
enum on the wire takes one of the enum's words; an optional view field over a plain proto3
field is None or a non-zero value, since the wire cannot tell None from zero), the message
decides. Used by the converter's round-trip tests.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import typing
from decimal import Decimal
from typing import Any

import attrs
import betterproto2
from hypothesis import strategies as st

import skift
from skift_server._convert_types import _cls_by_field, _is_union, _optional  # pyright: ignore[reportPrivateUsage]
from skift_server._proto.skift import v1

_TEXT = st.text(max_size=6)
_WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_#0123456789", min_size=1, max_size=8)
_INT = st.integers(min_value=0, max_value=2**40)
_WHEN = st.datetimes(
    min_value=dt.datetime(1971, 1, 1), max_value=dt.datetime(2200, 1, 1), timezones=st.just(dt.UTC)
)
_JSON: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**52), 2**52) | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_WORDS, inner, max_size=3),
    max_leaves=6,
)


def _org_limits() -> st.SearchStrategy[skift.OrgLimits]:
    sizes = [f.name for f in attrs.fields(skift.OrgLimits) if f.type in ("int", int)][:-1]
    values = st.fixed_dictionaries({k: st.integers(1, 2**31) for k in sizes})
    return values.flatmap(
        lambda d: st.builds(
            skift.OrgLimits,
            **{k: st.just(v) for k, v in d.items()},
            own=st.lists(st.sampled_from(sizes), unique=True, max_size=3).map(tuple),
            server=st.just(dict(d)),
            ops_per_patch=_INT,
        )
    )


_SPECIAL: dict[type[Any], st.SearchStrategy[Any]] = {}


def views(view: type[Any], message: type[Any]) -> st.SearchStrategy[Any]:
    """Instances of ``view`` whose every field the wire can carry back as it was."""
    if view is skift.OrgLimits:
        return _org_limits()
    if view is skift.WebhookInfo and message is not v1.Webhook:  # the secret beside it
        return st.builds(
            attrs.evolve, views(view, v1.Webhook), secret=st.none() | _TEXT.filter(bool)
        )
    if _is_union(view):
        classes = _cls_by_field(message)
        return st.one_of(
            [
                views(v, next(c for c in classes.values() if c.__name__ == v.__name__))
                for v in typing.get_args(view)
            ]
        )
    hints = typing.get_type_hints(view)
    meta = {f.name: f.metadata["betterproto"] for f in dataclasses.fields(message)}
    classes = _cls_by_field(message)
    kw: dict[str, st.SearchStrategy[Any]] = {}
    for f in attrs.fields(view):
        if not f.init:
            continue
        if f.name in meta:
            kw[f.name] = _field(hints[f.name], meta[f.name], classes[f.name])
        elif f.default is attrs.NOTHING:  # carried by a hook under another name: its zero
            t, opt = _optional(hints[f.name])
            kw[f.name] = st.none() if opt else st.just(t())
    if view is skift.ProjectInfo:
        kw["readers"] = st.none() | st.lists(_WORDS, max_size=3).map(tuple)
    if view is skift.EdgeInfo:
        kw["kind"] = _WORDS
    if view is skift.TextPart:
        kw["media_type"] = _WORDS
    if view is skift.DeliveryInfo:
        kw["counts"] = st.dictionaries(_WORDS, _INT, max_size=3).map(
            lambda d: dict(sorted(d.items()))
        )
    return st.builds(view, **kw)


def _field(hint: Any, fm: betterproto2.FieldMetadata, wire: Any) -> st.SearchStrategy[Any]:
    t, opt = _optional(hint)
    if fm.proto_type == betterproto2.TYPE_MAP:
        assert fm.map_meta is not None
        value = fm.map_meta[1].proto_type
        return st.dictionaries(_WORDS, _WORDS if value == "string" else _INT, max_size=3)
    if fm.repeated:
        item = typing.get_args(t)[0]
        inner = (
            views(item, wire)
            if isinstance(wire, type) and issubclass(wire, betterproto2.Message)
            else _scalar(item, fm, wire)
        )
        seq = st.lists(inner, max_size=3)
        return seq if typing.get_origin(t) is list else seq.map(tuple)
    base = _scalar(t, fm, wire)
    if not opt:
        return base
    if fm.optional or fm.proto_type == betterproto2.TYPE_MESSAGE:
        return st.none() | base
    return st.none() | base.filter(bool)


def _scalar(t: Any, fm: betterproto2.FieldMetadata, wire: Any) -> st.SearchStrategy[Any]:
    if fm.proto_type == betterproto2.TYPE_ENUM:
        words = [m.name.lower() for m in wire if m.value]
        if isinstance(t, type) and issubclass(t, enum.Enum):
            return st.sampled_from([m for m in t if m.value in words])
        return st.sampled_from(words)
    if t is dt.datetime:
        return _WHEN
    if t is dt.timedelta:
        return st.timedeltas(min_value=dt.timedelta(0), max_value=dt.timedelta(days=9))
    if t is Decimal:
        return st.decimals(
            allow_nan=False, allow_infinity=False, places=4, min_value=0, max_value=10**6
        )
    if t is bool:
        return st.booleans()
    if t is int:
        return st.integers(0, 2**31 - 1) if fm.proto_type.endswith("32") else _INT
    if t is float:
        return st.floats(allow_nan=False, allow_infinity=False)
    if t is str:
        return _TEXT
    if typing.get_origin(t) is dict or t is dict:
        return st.dictionaries(_WORDS, _JSON, max_size=3)
    if attrs.has(t) or _is_union(t):
        return views(t, wire)
    raise TypeError(f"no strategy for {t}")


EDITS = st.lists(
    st.tuples(
        st.sampled_from(["flip", "cut", "insert", "swap", "repeat", "twice"]),
        st.integers(0, 10**6),
        st.binary(max_size=3),
    ),
    min_size=1,
    max_size=3,
)
"""Edits to a message's bytes (:func:`mutate`), for the tests that read mutated bytes through a
fast path and through the general one and expect the same outcome."""


def mutate(data: bytes, edits: list[tuple[str, int, bytes]]) -> bytes:
    """``data`` with ``edits`` (:data:`EDITS`) applied in turn: a byte flipped, the rest cut
    off, bytes inserted, a stretch repeated (fields sent twice), the whole sent twice, or the
    two halves swapped (fields out of order)."""
    out = bytearray(data)
    for what, at, more in edits:
        at %= len(out) or 1
        if what == "flip" and out:
            out[at] ^= more[0] if more else 0x80
        elif what == "cut":
            del out[at:]
        elif what == "insert":
            out[at:at] = more
        elif what == "repeat":
            out[at:at] = out[at : at + 1 + (more[0] if more else 40)]
        elif what == "twice":
            out = out + out
        elif out:
            out = out[at:] + out[:at]
    return bytes(out)
