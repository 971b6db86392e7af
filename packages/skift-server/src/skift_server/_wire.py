"""Strict decoding of protobuf messages received from the network.

betterproto2's parser is lenient: a truncated length, a string field sent as
a varint or bytes that are not UTF-8 either pass silently (leaving, say, an
``int`` in a ``str`` field for the handler to trip over) or raise whatever
Python raises. A server must answer each of those with INVALID_ARGUMENT, so
every request is parsed by protobuf's compiled parser (``_upbcodec``), which
refuses what the walk here refuses, and taken from it only when it met nothing
it is lenient about; anything else is walked here against its message's field
table: tags, wire types, lengths, UTF-8 and nesting depth are checked,
recursively into sub-messages and map entries. Only then is it parsed.

A message larger than :data:`INLINE_BYTES` is checked and parsed on a worker
thread (:func:`decode_off_loop`, at most :data:`DECODERS` at once), never on
the event loop, within a time budget: past it (queueing included) the request
is :class:`TooExpensive`, which the service answers RESOURCE_EXHAUSTED. This
is the seam for a faster parser: whatever :func:`decode` becomes, the service
calls it through here.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import functools
import time
from typing import Any, Final, TypeVar

import betterproto2
from grpclib.const import Status
from grpclib.encoding.proto import ProtoCodec
from grpclib.exceptions import GRPCError

from . import _upbcodec
from ._wirecodec import Encoded

T = TypeVar("T", bound=betterproto2.Message)

MAX_DEPTH: Final = 64
"""Nesting deeper than this is refused (protobuf's own default recursion limit is 100)."""

_VARINT: Final = 0
_FIXED64: Final = 1
_LEN: Final = 2
_FIXED32: Final = 5

_VARINT_TYPES: Final = frozenset(
    {
        betterproto2.TYPE_INT32,
        betterproto2.TYPE_INT64,
        betterproto2.TYPE_UINT32,
        betterproto2.TYPE_UINT64,
        betterproto2.TYPE_SINT32,
        betterproto2.TYPE_SINT64,
        betterproto2.TYPE_BOOL,
        betterproto2.TYPE_ENUM,
    }
)
_FIXED32_TYPES: Final = frozenset(
    {betterproto2.TYPE_FLOAT, betterproto2.TYPE_FIXED32, betterproto2.TYPE_SFIXED32}
)
_FIXED64_TYPES: Final = frozenset(
    {betterproto2.TYPE_DOUBLE, betterproto2.TYPE_FIXED64, betterproto2.TYPE_SFIXED64}
)


INLINE_BYTES: Final = 64 * 1024
"""Messages up to this size are decoded on the event loop (well under a millisecond)."""

DECODERS: Final = 2
"""Worker threads decoding larger messages; more wait their turn (within their budget)."""

DECODE_BUDGET: Final = 5.0
"""Seconds a large message may take to be decoded, its wait for a worker included."""

_pool: concurrent.futures.ThreadPoolExecutor | None = None


class WireError(ValueError):
    """The bytes are not a valid encoding of the expected message."""


class TooExpensive(Exception):
    """Decoding the message would take longer than its budget."""


def decode(cls: type[T], data: bytes, *, deadline: float | None = None) -> T:
    """``cls`` parsed from ``data``, or :class:`WireError` saying what is wrong
    (:class:`TooExpensive` once ``time.monotonic()`` passes ``deadline``).

    protobuf's compiled parser reads it first (``_upbcodec``); what that parser does not
    take as this walk would (a malformed message, unknown fields) is walked here."""
    try:
        return _upbcodec.decode(cls, data, deadline=deadline)
    except _upbcodec.TooSlow:
        raise TooExpensive("its fields took longer than the budget to convert") from None
    except _upbcodec.Unsure:
        pass
    return decode_strictly(cls, data, deadline=deadline)


def decode_strictly(cls: type[T], data: bytes, *, deadline: float | None = None) -> T:
    """:func:`decode` by the strict walk alone, then the pure-Python parser."""
    _check(cls, memoryview(data), 0, "", _Clock(deadline))
    try:
        return cls.parse(data)
    except Exception as exc:  # the walk above should make this unreachable
        raise WireError(f"cannot parse {cls.__name__}: {exc}") from None


async def decode_off_loop(cls: type[T], data: bytes, *, budget: float = DECODE_BUDGET) -> T:
    """:func:`decode`, on a worker thread when ``data`` is larger than :data:`INLINE_BYTES`."""
    if len(data) <= INLINE_BYTES:
        return decode(cls, data)
    global _pool
    if _pool is None:
        _pool = concurrent.futures.ThreadPoolExecutor(DECODERS, thread_name_prefix="skift-decode")
    deadline = time.monotonic() + budget
    job = functools.partial(_decode_before, cls, data, deadline)
    return await asyncio.get_running_loop().run_in_executor(_pool, job)


def _decode_before(cls: type[T], data: bytes, deadline: float) -> T:
    if time.monotonic() > deadline:
        raise TooExpensive("it waited its whole budget for a decoder")
    return decode(cls, data, deadline=deadline)


class _Clock:
    """Checks a deadline every so many fields (reading the clock costs more than a field)."""

    __slots__ = ("deadline", "n")

    def __init__(self, deadline: float | None) -> None:
        self.deadline = deadline
        self.n = 0

    def tick(self) -> None:
        if self.deadline is None:
            return
        self.n += 1
        if self.n & 1023 == 0 and time.monotonic() > self.deadline:
            raise TooExpensive("its fields took longer than the budget to check")


def _varint(buf: memoryview, pos: int, path: str) -> tuple[int, int]:
    result = 0
    for shift in range(0, 70, 7):
        if pos >= len(buf):
            raise WireError(f"{path or 'message'}: truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            if result >= 1 << 64:
                raise WireError(f"{path or 'message'}: varint out of range")
            return result, pos
    raise WireError(f"{path or 'message'}: varint longer than 10 bytes")


def _fields(cls: type[betterproto2.Message]) -> dict[int, tuple[str, betterproto2.FieldMetadata]]:
    out: dict[int, tuple[str, betterproto2.FieldMetadata]] = {}
    for f in dataclasses.fields(cls):  # pyright: ignore[reportArgumentType]
        meta: betterproto2.FieldMetadata = f.metadata["betterproto"]
        out[meta.number] = (f.name, meta)
    return out


def _sub_cls(
    cls: type[betterproto2.Message], name: str, meta: betterproto2.FieldMetadata
) -> type[betterproto2.Message]:
    if meta.unwrap is not None:
        wrapped: type[betterproto2.Message] = meta.unwrap()
        return wrapped
    info: Any = getattr(cls, "_betterproto")  # noqa: B009 (betterproto2's per-class field table)
    sub: type[betterproto2.Message] = info.cls_by_field[name]
    return sub


def _check(
    cls: type[betterproto2.Message], buf: memoryview, depth: int, path: str, clock: _Clock
) -> None:
    if depth > MAX_DEPTH:
        raise WireError(f"{path}: nested deeper than {MAX_DEPTH}")
    table = _fields(cls)
    pos = 0
    while pos < len(buf):
        clock.tick()
        key, pos = _varint(buf, pos, path)
        number, wire = key >> 3, key & 7
        if number == 0 or number >= 1 << 29:
            raise WireError(f"{path or cls.__name__}: invalid field number {number}")
        known = table.get(number)
        where = f"{path}.{known[0]}" if known else f"{path}.#{number}"
        where = where.lstrip(".")
        if wire == _VARINT:
            _, pos = _varint(buf, pos, where)
            payload = None
        elif wire == _FIXED64:
            pos += 8
            payload = None
        elif wire == _FIXED32:
            pos += 4
            payload = None
        elif wire == _LEN:
            length, pos = _varint(buf, pos, where)
            if pos + length > len(buf):
                raise WireError(f"{where}: length {length} runs past the end of the message")
            payload = buf[pos : pos + length]
            pos += length
        else:
            raise WireError(f"{where}: unsupported wire type {wire}")
        if pos > len(buf):
            raise WireError(f"{where}: truncated")
        if known is None:
            continue  # an unknown field from a newer client: skipped, as protobuf does
        name, meta = known
        _check_field(cls, name, meta, wire, payload, depth, where, clock)


def _check_field(
    cls: type[betterproto2.Message],
    name: str,
    meta: betterproto2.FieldMetadata,
    wire: int,
    payload: memoryview | None,
    depth: int,
    where: str,
    clock: _Clock,
) -> None:
    ptype = meta.proto_type
    if ptype in _VARINT_TYPES | _FIXED32_TYPES | _FIXED64_TYPES:
        want = (
            _VARINT if ptype in _VARINT_TYPES else _FIXED32 if ptype in _FIXED32_TYPES else _FIXED64
        )
        if wire == want:
            return
        if wire == _LEN and meta.repeated and payload is not None:
            _check_packed(payload, want, where)
            return
        raise WireError(f"{where}: wrong wire type {wire} for a {ptype} field")
    if wire != _LEN or payload is None:
        raise WireError(f"{where}: wrong wire type {wire} for a {ptype} field")
    if ptype == betterproto2.TYPE_STRING:
        try:
            bytes(payload).decode("utf-8")
        except UnicodeDecodeError:
            raise WireError(f"{where}: not valid UTF-8") from None
    elif ptype in (betterproto2.TYPE_MESSAGE, betterproto2.TYPE_MAP):
        _check(_sub_cls(cls, name, meta), payload, depth + 1, where, clock)


def _check_packed(payload: memoryview, wire: int, where: str) -> None:
    if wire == _VARINT:
        pos = 0
        while pos < len(payload):
            _, pos = _varint(payload, pos, where)
    elif len(payload) % (4 if wire == _FIXED32 else 8):
        raise WireError(f"{where}: packed field length is not a multiple of its element size")


class StrictCodec(ProtoCodec):
    """grpclib's proto codec, decoding skift's messages strictly: a bad message is
    INVALID_ARGUMENT. Other messages (server reflection's) decode as protobuf does. A reply
    already encoded off the loop (``_encode``: an ``Encoded``) is sent as it is."""

    def encode(self, message: Any, message_type: type[Any]) -> bytes:
        if isinstance(message, Encoded):
            return message.data
        return super().encode(message, message_type)

    def decode(self, data: bytes, message_type: type[Any]) -> Any:
        if not issubclass(message_type, betterproto2.Message):
            return super().decode(data, message_type)  # reflection's protobuf messages
        try:
            return decode(message_type, data)
        except WireError as exc:
            raise GRPCError(
                Status.INVALID_ARGUMENT, f"not a valid {message_type.__name__} message: {exc}"
            ) from None
