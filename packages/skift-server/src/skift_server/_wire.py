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
from grpclib.encoding.proto import ProtoCodec

from ._errors import invalid
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
    """The bytes are not a valid encoding of the expected message. ``field`` is the path
    into the request (as BadRequest names it) of the field whose bytes are wrong: the
    deepest known field the walk was in (``ops[1].create_node.title``, ``filter.status``);
    bytes that belong to no known field at the top (a field number 0, a truncated key)
    name the last field read before them, or the message's first field when none was."""

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.field = field


class TooExpensive(Exception):
    """Decoding the message would take longer than its budget."""


def decode(cls: type[T], data: bytes, *, deadline: float | None = None) -> T:
    """``cls`` parsed from ``data``, or :class:`WireError` saying what is wrong
    (:class:`TooExpensive` once ``time.monotonic()`` passes ``deadline``).

    protobuf's compiled parser reads it first (``_upbcodec``); what that parser does not
    take as this walk would (a malformed message, unknown fields) is walked here."""
    # imported here: the server loads it as it starts (``_server``), a remote client only
    # for an answer of a page's size (``_client_base.strict_parse``), not every command
    from . import _upbcodec

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
        raise WireError(f"cannot parse {cls.__name__}: {exc}", first_field(cls)) from None


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


def _varint(buf: memoryview, pos: int, path: str, field: str) -> tuple[int, int]:
    """A varint at ``pos`` (``path`` words where it is, ``field`` is what BadRequest names)."""
    result = 0
    for shift in range(0, 70, 7):
        if pos >= len(buf):
            raise WireError(f"{path or 'message'}: truncated varint", field)
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            if result >= 1 << 64:
                raise WireError(f"{path or 'message'}: varint out of range", field)
            return result, pos
    raise WireError(f"{path or 'message'}: varint longer than 10 bytes", field)


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


def first_field(cls: type[betterproto2.Message]) -> str:
    """The field a decoder reads first (the lowest number): what BadRequest names for bytes
    that break before any field of the request could be read."""
    table = _fields(cls)
    return table[min(table)][0] if table else ""


def _check(
    cls: type[betterproto2.Message],
    buf: memoryview,
    depth: int,
    path: str,
    clock: _Clock,
    *,
    entry: bool = False,
) -> None:
    """Walk one message at ``path`` (a map's ``entry``: its key and value are named by the
    map field's path)."""
    if depth > MAX_DEPTH:
        raise WireError(f"{path}: nested deeper than {MAX_DEPTH}", path)
    table = _fields(cls)
    seen: dict[int, int] = {}  # elements of each repeated field so far: their index
    here = path  # the field BadRequest names for bytes that belong to no known field
    pos = 0
    while pos < len(buf):
        clock.tick()
        key, pos = _varint(buf, pos, path, here or first_field(cls))
        number, wire = key >> 3, key & 7
        if number == 0 or number >= 1 << 29:
            raise WireError(
                f"{path or cls.__name__}: invalid field number {number}", here or first_field(cls)
            )
        known = table.get(number)
        if known is None:
            where = f"{path}.#{number}".lstrip(".")
            field = here or first_field(cls)
        elif entry:
            where = field = path
        else:
            name, meta = known
            step = name
            if meta.repeated and meta.proto_type != betterproto2.TYPE_MAP:
                packed = wire == _LEN and meta.proto_type not in _NESTED | _TEXT
                if not packed:  # one element: its index (a packed run: the field as a whole)
                    index = seen.get(number, 0)
                    seen[number] = index + 1
                    step = f"{name}[{index}]"
            where = field = f"{path}.{step}".lstrip(".")
            if not path:
                here = field
        if wire == _VARINT:
            _, pos = _varint(buf, pos, where, field)
            payload = None
        elif wire == _FIXED64:
            pos += 8
            payload = None
        elif wire == _FIXED32:
            pos += 4
            payload = None
        elif wire == _LEN:
            length, pos = _varint(buf, pos, where, field)
            if pos + length > len(buf):
                raise WireError(f"{where}: length {length} runs past the end of the message", field)
            payload = buf[pos : pos + length]
            pos += length
        else:
            raise WireError(f"{where}: unsupported wire type {wire}", field)
        if pos > len(buf):
            raise WireError(f"{where}: truncated", field)
        if known is None:
            continue  # an unknown field from a newer client: skipped, as protobuf does
        name, meta = known
        _check_field(cls, name, meta, wire, payload, depth, field, clock)


_NESTED: Final = frozenset({betterproto2.TYPE_MESSAGE, betterproto2.TYPE_MAP})
_TEXT: Final = frozenset({betterproto2.TYPE_STRING, betterproto2.TYPE_BYTES})


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
        raise WireError(f"{where}: wrong wire type {wire} for a {ptype} field", where)
    if wire != _LEN or payload is None:
        raise WireError(f"{where}: wrong wire type {wire} for a {ptype} field", where)
    if ptype == betterproto2.TYPE_STRING:
        try:
            bytes(payload).decode("utf-8")
        except UnicodeDecodeError:
            raise WireError(f"{where}: not valid UTF-8", where) from None
    elif ptype in _NESTED:
        sub = _sub_cls(cls, name, meta)
        _check(sub, payload, depth + 1, where, clock, entry=ptype == betterproto2.TYPE_MAP)


def _check_packed(payload: memoryview, wire: int, where: str) -> None:
    if wire == _VARINT:
        pos = 0
        while pos < len(payload):
            _, pos = _varint(payload, pos, where, where)
    elif len(payload) % (4 if wire == _FIXED32 else 8):
        raise WireError(
            f"{where}: packed field length is not a multiple of its element size", where
        )


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
            raise invalid(
                f"not a valid {message_type.__name__} message: {exc}", field=exc.field
            ) from None
