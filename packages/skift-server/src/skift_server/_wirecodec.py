"""A faster binary codec for the generated betterproto2 messages, both ways.

betterproto2 encodes and decodes in pure Python one byte at a time: a varint
read through ``BytesIO.read(1)``, a field default made under
``warnings.catch_warnings()`` for every field of every message it encodes,
and the classes of a message's fields found with ``typing.get_type_hints``
once per field (each call compiles every annotation of the class again). A
Ready page of 50 nodes took ~2.6 ms to encode and ~2 ms to decode, as long
as the query behind it; a one-shot ``skift ready`` spent ~100 ms compiling
annotations.

:func:`install` replaces ``Message.__bytes__`` and ``Message.parse`` with
table-driven versions over the same per-class metadata (``_betterproto``)
and the same wire format, and caches each class's type hints. Anything the
fast path does not expect (a wire type that does not match the field, a
truncated message) is handed to betterproto2's own code, so errors and
edge cases stay betterproto2's. tests/server/test_wirecodec.py checks both
directions against betterproto2 on every generated message.
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Callable
from typing import Any, Final, get_type_hints

import betterproto2
from betterproto2 import (
    TYPE_BOOL,
    TYPE_BYTES,
    TYPE_DOUBLE,
    TYPE_ENUM,
    TYPE_FIXED32,
    TYPE_FIXED64,
    TYPE_FLOAT,
    TYPE_INT32,
    TYPE_INT64,
    TYPE_MAP,
    TYPE_MESSAGE,
    TYPE_SFIXED32,
    TYPE_SFIXED64,
    TYPE_SINT32,
    TYPE_SINT64,
    TYPE_STRING,
    TYPE_UINT32,
    TYPE_UINT64,
)

Message = betterproto2.Message

_ORIGINAL_BYTES: Callable[[Any], bytes] = Message.__bytes__
_ORIGINAL_PARSE: Callable[[Any, bytes], Any] = Message.parse.__func__  # pyright: ignore[reportFunctionMemberAccess]
_ORIGINAL_HINTS: Callable[[Any], dict[str, Any]] = Message._type_hints.__func__  # pyright: ignore[reportFunctionMemberAccess, reportPrivateUsage]

_VARINT = 0
_FIXED64 = 1
_LEN = 2
_FIXED32 = 5

_STRUCT = {
    TYPE_DOUBLE: struct.Struct("<d"),
    TYPE_FLOAT: struct.Struct("<f"),
    TYPE_FIXED32: struct.Struct("<I"),
    TYPE_FIXED64: struct.Struct("<Q"),
    TYPE_SFIXED32: struct.Struct("<i"),
    TYPE_SFIXED64: struct.Struct("<q"),
}
_WIRE = {
    TYPE_ENUM: _VARINT,
    TYPE_BOOL: _VARINT,
    TYPE_INT32: _VARINT,
    TYPE_INT64: _VARINT,
    TYPE_UINT32: _VARINT,
    TYPE_UINT64: _VARINT,
    TYPE_SINT32: _VARINT,
    TYPE_SINT64: _VARINT,
    TYPE_FLOAT: _FIXED32,
    TYPE_FIXED32: _FIXED32,
    TYPE_SFIXED32: _FIXED32,
    TYPE_DOUBLE: _FIXED64,
    TYPE_FIXED64: _FIXED64,
    TYPE_SFIXED64: _FIXED64,
    TYPE_STRING: _LEN,
    TYPE_BYTES: _LEN,
    TYPE_MESSAGE: _LEN,
    TYPE_MAP: _LEN,
}
_SMALL = [bytes((i,)) for i in range(128)]


class Encoded:
    """A message already encoded, standing in for it as an item of a response.

    A page measures each item's size by encoding it (``_paging.fit``); the
    response then carries these stand-ins, and encoding it copies their bytes
    instead of encoding every item a second time. ``bytes()`` of one is its
    message's encoding. Only the fast codec knows them: a response holding
    them is encoded, never read.
    """

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data

    def __bytes__(self) -> bytes:
        return self.data


class _Fallback(Exception):
    """The fast path met something it leaves to betterproto2."""


def _varint(value: int) -> bytes:
    if 0 <= value < 128:
        return _SMALL[value]
    if value < 0:
        if value < -(1 << 63):
            raise ValueError(
                "Negative value is not representable as a 64-bit integer - "
                "unable to encode a varint within 10 bytes."
            )
        value += 1 << 64
    # up to five bytes (a timestamp's seconds and nanos, lengths, numbers) made at once
    if value < 1 << 14:
        return bytes(((value & 0x7F) | 0x80, value >> 7))
    if value < 1 << 21:
        return bytes(((value & 0x7F) | 0x80, ((value >> 7) & 0x7F) | 0x80, value >> 14))
    if value < 1 << 28:
        return bytes(
            (
                (value & 0x7F) | 0x80,
                ((value >> 7) & 0x7F) | 0x80,
                ((value >> 14) & 0x7F) | 0x80,
                value >> 21,
            )
        )
    if value < 1 << 35:
        return bytes(
            (
                (value & 0x7F) | 0x80,
                ((value >> 7) & 0x7F) | 0x80,
                ((value >> 14) & 0x7F) | 0x80,
                ((value >> 21) & 0x7F) | 0x80,
                value >> 28,
            )
        )
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _read_varint(buf: bytes, i: int) -> tuple[int, int]:
    b = buf[i]
    if b < 0x80:
        return b, i + 1
    # up to five bytes (a timestamp's seconds and nanos) read without the loop
    result = b & 0x7F
    b = buf[i + 1]
    if b < 0x80:
        return result | (b << 7), i + 2
    result |= (b & 0x7F) << 7
    b = buf[i + 2]
    if b < 0x80:
        return result | (b << 14), i + 3
    result |= (b & 0x7F) << 14
    b = buf[i + 3]
    if b < 0x80:
        return result | (b << 21), i + 4
    result |= (b & 0x7F) << 21
    b = buf[i + 4]
    if b < 0x80:
        return result | (b << 28), i + 5
    result |= (b & 0x7F) << 28
    shift = 35
    i += 5
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            if shift == 63 and b > 1:  # a tenth byte past bit 64
                raise _Fallback
            return result, i
        shift += 7
        if shift >= 64:
            raise _Fallback


# ------------------------------------------------------------------ per-class plans


class _Field:
    __slots__ = (
        "cls",
        "default",
        "fast",
        "key",
        "kind",
        "map_meta",
        "members",
        "name",
        "packed_key",
        "presence",
        "repeated",
        "unwrap",
        "wire",
    )

    def __init__(self, msg: type[Any], name: str, meta: Any) -> None:
        proto = meta.proto_type
        self.name = name
        self.kind: str = proto
        self.repeated: bool = bool(meta.repeated)
        self.presence: bool = bool(meta.optional or meta.group)  # default None: 0 is sent
        self.unwrap: Callable[[], type[Any]] | None = meta.unwrap
        self.map_meta = meta.map_meta
        self.wire = _WIRE[proto]
        self.key = _varint(
            (meta.number << 3) | (_LEN if self.repeated and proto in _PACKED else self.wire)
        )
        self.packed_key = _varint((meta.number << 3) | _LEN)
        by_field = msg._betterproto.cls_by_field  # pyright: ignore[reportPrivateUsage]
        self.cls: Any = by_field.get(name) if proto in (TYPE_ENUM, TYPE_MESSAGE, TYPE_MAP) else None
        self.default: Any = None
        if not (self.repeated or proto in (TYPE_MAP, TYPE_MESSAGE) or self.presence):
            self.default = msg._betterproto.default_gen[name]()  # pyright: ignore[reportPrivateUsage]
        # how _decode reads the field without _value: a singular string, or a singular
        # varint whose one-byte values are themselves (an enum's through ``members``)
        self.fast = 0
        if not self.repeated:
            if proto == TYPE_STRING:
                self.fast = _FAST_STRING
            elif proto in _SMALL_IS_ITSELF:
                self.fast = _FAST_VARINT
        self.members: dict[int, Any] | None = (
            {int(m): m for m in self.cls} if proto == TYPE_ENUM else None
        )


_FAST_STRING = 1
_FAST_VARINT = 2
_SMALL_IS_ITSELF = frozenset(
    {TYPE_INT32, TYPE_INT64, TYPE_UINT32, TYPE_UINT64, TYPE_ENUM, TYPE_BOOL}
)

_PACKED = frozenset(
    {
        TYPE_ENUM,
        TYPE_BOOL,
        TYPE_INT32,
        TYPE_INT64,
        TYPE_UINT32,
        TYPE_UINT64,
        TYPE_SINT32,
        TYPE_SINT64,
        TYPE_FLOAT,
        TYPE_DOUBLE,
        TYPE_FIXED32,
        TYPE_SFIXED32,
        TYPE_FIXED64,
        TYPE_SFIXED64,
    }
)


class _Plan:
    __slots__ = ("by_number", "consts", "fields", "lists", "maps")

    def __init__(self, msg: type[Any]) -> None:
        meta = msg._betterproto  # pyright: ignore[reportPrivateUsage]
        self.fields = [_Field(msg, name, m) for name, m in meta.meta_by_field_name.items()]
        self.by_number = {
            m.number: f for f, m in zip(self.fields, meta.meta_by_field_name.values(), strict=True)
        }
        self.lists = [f.name for f in self.fields if f.repeated and f.kind != TYPE_MAP]
        self.maps = [f.name for f in self.fields if f.kind == TYPE_MAP]
        self.consts: dict[str, Any] = {"_unknown_fields": b""}
        for f in self.fields:
            if not f.repeated and f.kind != TYPE_MAP:
                self.consts[f.name] = f.default


def _plan(msg: type[Any]) -> _Plan:
    plan = msg.__dict__.get("_skift_plan")
    if plan is None:
        plan = _Plan(msg)
        msg._skift_plan = plan
    return plan


# --------------------------------------------------------------------------- encode


def _scalar(kind: str, value: Any) -> bytes:
    if kind == TYPE_STRING:
        return value.encode("utf-8")
    if kind in (TYPE_INT64, TYPE_INT32, TYPE_ENUM, TYPE_UINT32, TYPE_UINT64):
        return _varint(int(value))
    if kind == TYPE_BOOL:
        return b"\x01" if value else b"\x00"
    if kind == TYPE_BYTES:
        return bytes(value)
    if kind in (TYPE_SINT32, TYPE_SINT64):
        return _varint(value << 1 if value >= 0 else (value << 1) ^ (~0))
    return _STRUCT[kind].pack(value)


def _len_delim(key: bytes, data: bytes) -> bytes:
    n = len(data)
    return key + (_SMALL[n] if n < 128 else _varint(n)) + data


def _message_bytes(f: _Field, value: Any) -> bytes:
    if value.__class__ is Encoded:
        return value.data
    if f.unwrap is not None:
        value = f.unwrap().from_wrapped(value)
    return _encode(value)


def _encode(msg: Any) -> bytes:
    plan = _plan(msg.__class__)
    d = msg.__dict__
    out: list[bytes] = []
    for f in plan.fields:
        value = d[f.name]
        if value is not None:
            _put(out, f, value)
    out.append(msg._unknown_fields)
    return b"".join(out)


def _put(out: list[bytes], f: _Field, value: Any) -> None:
    """Field ``f`` holding ``value`` (not None), appended to ``out`` as ``_encode`` sends it."""
    kind = f.kind
    if f.repeated:
        if not value:
            return
        if kind == TYPE_MESSAGE:
            key = f.key
            for item in value:
                # a page's items are stand-ins: their bytes, with no call per item
                data = item.data if item.__class__ is Encoded else _message_bytes(f, item)
                n = len(data)
                out.append(key + (_SMALL[n] if n < 128 else _varint(n)) + data)
        elif kind in _PACKED:
            out.append(_len_delim(f.key, b"".join(_scalar(kind, item) for item in value)))
        else:  # strings, bytes
            key = f.key
            for item in value:
                out.append(_len_delim(key, _scalar(kind, item)))
        return
    if kind == TYPE_MESSAGE:
        out.append(_len_delim(f.key, _message_bytes(f, value)))
        return
    if kind == TYPE_MAP:
        if not value:
            return
        km, vm = f.map_meta
        for k, v in value.items():
            sk = betterproto2._serialize_single(1, km.proto_type, k)  # pyright: ignore[reportPrivateUsage]
            sv = betterproto2._serialize_single(2, vm.proto_type, v, unwrap=vm.unwrap)  # pyright: ignore[reportPrivateUsage]
            out.append(_len_delim(f.key, sk + sv))
        return
    if not f.presence and value == f.default:
        return
    if f.wire == _LEN:
        out.append(_len_delim(f.key, _scalar(kind, value)))
    else:
        out.append(f.key + _scalar(kind, value))


def field_bytes(message: type[Any], name: str) -> Callable[[Any], bytes]:
    """The function that encodes field ``name`` of ``message`` holding a value as the
    message's own encoding sends it (b"" for what it leaves out: None, a default)."""
    f = next(f for f in _plan(message).fields if f.name == name)

    def encode(value: Any) -> bytes:
        if value is None:
            return b""
        out: list[bytes] = []
        _put(out, f, value)
        return b"".join(out)

    return encode


def field_key(message: type[Any], name: str) -> bytes:
    """The tag ``message`` sends field ``name`` under (its packed key for a packed list)."""
    return next(f for f in _plan(message).fields if f.name == name).key


varint: Final = _varint
"""``varint(value)``: ``value`` as a protobuf varint (a negative one in ten bytes, as int64
is sent); the encoder itself, not a function calling it (the view encoders call it per field)."""


def field_order(message: type[Any]) -> list[str]:
    """The fields of ``message`` in the order its encoding sends them."""
    return [f.name for f in _plan(message).fields]


def _fast_bytes(self: Any) -> bytes:
    if self._is_pydantic():
        return _ORIGINAL_BYTES(self)
    return _encode(self)


# --------------------------------------------------------------------------- decode


def _value(f: _Field, wire: int, buf: bytes, i: int) -> tuple[Any, int]:
    """One value of field ``f`` at ``buf[i:]`` sent with ``wire``; the value and the next index."""
    kind = f.kind
    if wire == _VARINT:
        v, i = _read_varint(buf, i)
        if kind in (TYPE_INT64, TYPE_ENUM):
            v &= 0xFFFFFFFFFFFFFFFF
            v = (v ^ 0x8000000000000000) - 0x8000000000000000
            if kind == TYPE_ENUM:
                v = f.cls(v)
        elif kind == TYPE_INT32:
            v &= 0xFFFFFFFF
            v = (v ^ 0x80000000) - 0x80000000
        elif kind == TYPE_BOOL:
            v = v > 0
        elif kind == TYPE_UINT32:
            v &= 0xFFFFFFFF
        elif kind == TYPE_UINT64:
            v &= 0xFFFFFFFFFFFFFFFF
        else:  # sint
            v &= 0xFFFFFFFF if kind == TYPE_SINT32 else 0xFFFFFFFFFFFFFFFF
            v = (v >> 1) ^ (-(v & 1))
        return v, i
    if wire in (_FIXED32, _FIXED64):
        s = _STRUCT[kind]
        j = i + s.size
        if j > len(buf):
            raise _Fallback
        return s.unpack_from(buf, i)[0], j
    # length-delimited
    n, i = _read_varint(buf, i)
    j = i + n
    if j > len(buf):
        raise _Fallback
    if kind == TYPE_STRING:
        return str(buf[i:j], "utf-8"), j
    if kind == TYPE_MESSAGE:
        if f.unwrap is not None:
            return _decode(f.unwrap(), buf[i:j]).to_wrapped(), j
        return _decode(f.cls, buf[i:j]), j
    if kind == TYPE_MAP:
        return _decode(f.cls, buf[i:j]), j
    return bytes(buf[i:j]), j  # bytes


def _decode(cls: Any, buf: bytes) -> Any:
    plan = _plan(cls)
    obj = cls.__new__(cls)
    d = obj.__dict__
    d.update(plan.consts)
    for name in plan.lists:
        d[name] = []
    for name in plan.maps:
        d[name] = {}
    unknown: list[bytes] = []
    by_number = plan.by_number
    i = 0
    end = len(buf)
    while i < end:
        start = i
        tag = buf[i]
        if tag < 0x80:
            i += 1
        else:
            tag, i = _read_varint(buf, i)
        wire = tag & 7
        f = by_number.get(tag >> 3)
        if f is not None and f.fast and wire == f.wire and i < end:
            n = buf[i]
            if n < 0x80:  # a one-byte length or value: the common case, read here
                i += 1
                if f.fast == _FAST_STRING:
                    j = i + n
                    if j > end:
                        raise _Fallback
                    d[f.name] = str(buf[i:j], "utf-8")
                    i = j
                    continue
                members = f.members
                if members is not None:
                    member = members.get(n)
                    d[f.name] = member if member is not None else f.cls(n)
                else:
                    d[f.name] = n > 0 if f.kind == TYPE_BOOL else n
                continue
        if f is None:
            if tag < 8 or tag >= 1 << 32:  # field number 0, or past protobuf's 2**29 - 1
                raise _Fallback
            if wire == _VARINT:
                _, i = _read_varint(buf, i)
            elif wire == _LEN:
                n, i = _read_varint(buf, i)
                i += n
            elif wire == _FIXED64:
                i += 8
            elif wire == _FIXED32:
                i += 4
            else:
                raise _Fallback
            if i > end:
                raise _Fallback
            unknown.append(buf[start:i])
            continue
        if f.repeated:
            if wire == _LEN and f.kind in _PACKED:
                n, i = _read_varint(buf, i)
                j = i + n
                if j > end:
                    raise _Fallback
                items = d[f.name]
                item_wire = f.wire
                while i < j:
                    v, i = _value(f, item_wire, buf, i)
                    items.append(v)
                if i != j:
                    raise _Fallback
                continue
            if wire != f.wire:
                raise _Fallback
            v, i = _value(f, wire, buf, i)
            d[f.name].append(v)
            continue
        if wire != f.wire:
            raise _Fallback
        v, i = _value(f, wire, buf, i)
        if f.kind == TYPE_MAP:
            d[f.name][v.key] = v.value
        else:
            d[f.name] = v
    if i != end:
        raise _Fallback
    if unknown:
        d["_unknown_fields"] = b"".join(unknown)
    return obj


def read_exactly(cls: Any, data: bytes) -> Any:
    """``cls`` read from ``data`` by the fast decoder alone, where ``Message.parse`` falls
    back to betterproto2's own parser, which reads a truncated message or a varint that
    never ends as some other message: anything this decoder does not take raises
    (:class:`Fallback`, IndexError, UnicodeDecodeError; an enum number its class refuses,
    ValueError). The remote client's answers (``_client_base.strict_parse``)."""
    return _decode(cls, bytes(data))


def _fast_parse(cls: Any, data: bytes) -> Any:
    try:
        return _decode(cls, bytes(data))
    except (_Fallback, IndexError):
        return _ORIGINAL_PARSE(cls, data)


# ---------------------------------------------------------------------- type hints


def _cached_hints(cls: Any) -> dict[str, Any]:
    """A class's type hints, computed once (betterproto2 recomputes them per field)."""
    hints = cls.__dict__.get("_skift_hints")
    if hints is None:
        hints = get_type_hints(cls, sys.modules[cls.__module__].__dict__, {})
        cls._skift_hints = hints
    return hints


def install() -> None:
    """Put the fast codec and the cached type hints on ``betterproto2.Message`` (idempotent)."""
    Message.__bytes__ = _fast_bytes  # type: ignore[method-assign]
    Message.parse = classmethod(_fast_parse)  # type: ignore[method-assign, assignment]
    Message._type_hints = classmethod(_cached_hints)  # type: ignore[method-assign, assignment]  # pyright: ignore[reportPrivateUsage]


def uninstall() -> None:
    """betterproto2's own codec again (the tests compare the two)."""
    Message.__bytes__ = _ORIGINAL_BYTES  # type: ignore[method-assign]
    Message.parse = classmethod(_ORIGINAL_PARSE)  # type: ignore[method-assign, assignment]
    Message._type_hints = classmethod(_ORIGINAL_HINTS)  # type: ignore[method-assign, assignment]  # pyright: ignore[reportPrivateUsage]


Fallback = _Fallback
"""Raised by a reader that meets what it leaves to the general decoder (``_convert_wire``)."""

read_varint = _read_varint
"""The varint at ``buf[i:]`` and the index after it (:class:`Fallback` past 64 bits)."""
