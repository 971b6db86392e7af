"""A view straight to its message's bytes: the converter of ``_convert_types`` and the
encoding of ``_wirecodec`` written as one function per pair, with no message in between.

A Ready page of 50 nodes made 50 ``v1.Node`` objects (``to_pb``) only to encode each at
once (``_paging.encoded``): ~1 ms of the server's CPU per page. :func:`wire_encoder` reads
the same pair the same way (``_convert_types``: the view's attrs fields and types, the
message's fields, the registered hooks) and writes a function that appends each field's
bytes as ``_wirecodec`` would send the message the converter makes: the same fields in
the same order, the same values, so the same bytes (tests/server/test_convert_wire.py
compares the two on every view an operation returns and on random nodes).

The common fields are written inline (a string, an integer, a bool, an enum word, a
timestamp, a nested view); any other (a map, a JSON struct, a Decimal, a list of views, a
hooked field) is converted by the converter's own expression and encoded by
``_wirecodec``'s own code for that field (:func:`_wirecodec.field_bytes`). A pair the
converter writes by hand (``register_pair``) or a union is encoded the old way.

No rule lives here: values are moved, never judged (the engine validates).
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable, Iterable
from typing import Any

import attrs
import betterproto2

from . import _convert_types as ct
from . import _wirecodec as wc
from ._convert import utc

_SMALL = [bytes((i,)) for i in range(128)]
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_SECONDS = wc.varint(1 << 3)  # google.protobuf.Timestamp: seconds = 1 (int64)
_NANOS = wc.varint(2 << 3)  # nanos = 2 (int32)
_INTS = frozenset(
    {
        betterproto2.TYPE_INT64,
        betterproto2.TYPE_INT32,
        betterproto2.TYPE_UINT32,
        betterproto2.TYPE_UINT64,
    }
)


def _timestamp(key: bytes, value: dt.datetime) -> bytes:
    """An aware datetime as a Timestamp field (``Timestamp.from_datetime``'s arithmetic)."""
    offset = value - _EPOCH
    seconds, us = divmod(
        (offset.days * 86_400 + offset.seconds) * 1_000_000 + offset.microseconds, 1_000_000
    )
    body = (_SECONDS + wc.varint(seconds) if seconds else b"") + (
        _NANOS + wc.varint(us * 1000) if us else b""
    )
    return key + _SMALL[len(body)] + body


class _EnumBytes(dict[Any, bytes]):
    """A view's word (or StrEnum) -> its enum field's bytes (b"" for UNSPECIFIED, not sent)."""

    def __init__(self, words: dict[Any, Any], key: bytes) -> None:
        super().__init__()
        self.words, self.key = words, key

    def __missing__(self, word: Any) -> bytes:
        number = int(self.words[word])  # a word the enum lacks: Invalid, as the converter says
        got = self.key + wc.varint(number) if number else b""
        self[word] = got
        return got


@functools.cache
def wire_encoder(view: type[Any], message: type[betterproto2.Message]) -> Callable[[Any], bytes]:
    """The function that encodes a ``view`` as ``message`` (``bytes(to_pb(message, v))``)."""
    if ct._is_union(view) or (view.__name__, message.__name__) in ct._PAIRS:  # pyright: ignore[reportPrivateUsage]
        enc = ct.encoder(view, message)
        return lambda v: bytes(enc(v))
    hints = ct._hints(view)  # pyright: ignore[reportPrivateUsage]
    vfields = ct._view_fields(view)  # pyright: ignore[reportPrivateUsage]
    meta = ct._meta(message)  # pyright: ignore[reportPrivateUsage]
    classes = ct._cls_by_field(message)  # pyright: ignore[reportPrivateUsage]
    ct.encoder(view, message)  # refuses a pair the converter refuses, naming the field
    g = ct._Gen()  # pyright: ignore[reportPrivateUsage]
    body: list[str] = []
    for name in wc.field_order(message):
        fm = meta[name]
        hook = ct._FIELD_HOOKS.get((view.__name__, name))  # pyright: ignore[reportPrivateUsage]
        if hook is not None and hook.encode is not None:
            put = g.bind(wc.field_bytes(message, name), "put")
            body.append(f"out.append({put}({g.bind(hook.encode, 'hook')}(v)))")
            continue
        if name not in vfields or (hook is not None and hook.skip):
            continue  # the message's default: not sent
        body.extend(_field(g, view, message, name, fm, classes[name], hints[name]))
    fn = f"wire_{message.__name__}"
    src = f"def {fn}(v):\n    out = []\n" + "".join(f"    {line}\n" for line in body)
    src += '    return b"".join(out)\n'
    return g.compile(fn, src)


def _field(
    g: Any,
    view: type[Any],
    message: type[Any],
    name: str,
    fm: betterproto2.FieldMetadata,
    wire: Any,
    hint: Any,
) -> list[str]:
    """The lines that append field ``name``'s bytes (``x``: its value)."""
    t, _ = ct._optional(hint)  # pyright: ignore[reportPrivateUsage]
    kind = fm.proto_type
    key = g.bind(wc.field_key(message, name), "key")
    v = f"v.{name}"
    if fm.repeated or kind == betterproto2.TYPE_MAP:
        pass
    elif kind == betterproto2.TYPE_ENUM and not fm.optional:
        table = g.bind(_EnumBytes(ct._Words(wire), wc.field_key(message, name)), "enum")  # pyright: ignore[reportPrivateUsage]
        return [f"out.append({table}[{v}])"]
    elif wire is dt.datetime:
        ts = g.bind(_timestamp, "ts")
        return [f"x = {g.bind(utc, 'utc')}({v})", f"if x is not None: out.append({ts}({key}, x))"]
    elif (
        ct._is_message(wire)  # pyright: ignore[reportPrivateUsage]
        and not ct._is_struct(wire)  # pyright: ignore[reportPrivateUsage]
        and fm.unwrap is None
        and isinstance(t, type)
        and attrs.has(t)
    ):
        sub = g.bind(wire_encoder(t, wire), "sub")
        return [
            f"x = {v}",
            f"if x is not None: b = {sub}(x); n = len(b); "
            f"out.append({key} + ({g.bind(_SMALL, 'small')}[n] if n < 128 else "
            f"{g.bind(wc.varint, 'varint')}(n)) + b)",
        ]
    elif (kind in (betterproto2.TYPE_STRING, betterproto2.TYPE_BOOL) or kind in _INTS) and t in (
        str,
        int,
        bool,
    ):
        sent = "x is not None" if fm.optional else "x"
        if kind == betterproto2.TYPE_STRING:
            small, varint = g.bind(_SMALL, "small"), g.bind(wc.varint, "varint")
            put = (
                f"b = x.encode(); n = len(b); "
                f"out.append({key} + ({small}[n] if n < 128 else {varint}(n)) + b)"
            )
        elif kind == betterproto2.TYPE_BOOL:
            put = f'out.append({key} + (b"\\x01" if x else b"\\x00"))'
        else:
            put = f"out.append({key} + {g.bind(wc.varint, 'varint')}(int(x)))"
        return [f"x = {v}", f"if {sent}: {put}"]
    # anything else: the converter's expression, encoded by _wirecodec's code for the field
    expr = ct._encode_field(g, view, message, name, fm, wire, hint)  # pyright: ignore[reportPrivateUsage]
    put = g.bind(wc.field_bytes(message, name), "put")
    return [f"out.append({put}({expr}))"]


def encoded(message: type[betterproto2.Message], views: Iterable[Any]) -> list[Any]:
    """``views`` each encoded as ``message``, as ``_wirecodec.Encoded`` stand-ins (see
    ``_paging.encoded``)."""
    Encoded = wc.Encoded
    return [Encoded(wire_encoder(x.__class__, message)(x)) for x in views]
