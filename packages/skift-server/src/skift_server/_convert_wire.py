"""A view straight to its message's bytes and back: the converter of ``_convert_types`` and
the codec of ``_wirecodec`` written as one function per pair, with no message in between.

A Ready page of 50 nodes made 50 ``v1.Node`` objects (``to_pb``) only to encode each at
once (as ``_wirecodec.Encoded`` stand-ins): ~1 ms of the server's CPU per page. :func:`wire_encoder` reads
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

The client reads a response that is its view (Ready's page, a resolved reference...) the
same way (:func:`read_view`, from ``_client_base._call(..., view=...)``): a page of 50
nodes took ~750 us of its CPU to parse and convert, ~460 us read straight. A response
of :data:`UPB_FROM` bytes or more (a page) is parsed by upb, protobuf's C parser, and its
view made from upb's message by a reader generated the same way (:func:`upb_decoder`),
when the bytes are the message's own encoding (anything else: the readers in Python).

No rule lives here: values are moved, never judged (the engine validates).
"""

from __future__ import annotations

import datetime as dt
import functools
import keyword
import re
import typing
from collections.abc import Callable, Iterable
from typing import Any, Final, cast

import attrs
import betterproto2

from . import _convert_types as ct
from . import _wirecodec as wc

_SMALL = [bytes((i,)) for i in range(128)]
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_SECONDS = wc.varint(1 << 3)  # google.protobuf.Timestamp: seconds = 1 (int64)
_NANOS = wc.varint(2 << 3)  # nanos = 2 (int32)
_varint = wc.varint
_read_varint = wc.read_varint
_timedelta = dt.timedelta
_INTS = frozenset(
    {
        betterproto2.TYPE_INT64,
        betterproto2.TYPE_INT32,
        betterproto2.TYPE_UINT32,
        betterproto2.TYPE_UINT64,
    }
)


def _timestamp(key: bytes, value: dt.datetime) -> bytes:
    """A datetime as a Timestamp field (``Timestamp.from_datetime``'s arithmetic; a naive one
    is UTC, as ``_convert.utc`` makes it)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    offset = value - _EPOCH
    # a timedelta keeps 0 <= seconds < 86400 and 0 <= microseconds < 10**6, so these are
    # the divmod by a second of its whole microseconds, as from_datetime takes them
    seconds = offset.days * 86_400 + offset.seconds
    us = offset.microseconds
    if 1 << 28 <= seconds < 1 << 35:  # 1978-3058: five bytes, made at once
        body = bytes(
            (
                8,
                (seconds & 0x7F) | 0x80,
                ((seconds >> 7) & 0x7F) | 0x80,
                ((seconds >> 14) & 0x7F) | 0x80,
                ((seconds >> 21) & 0x7F) | 0x80,
                seconds >> 28,
            )
        )
    else:
        body = _SECONDS + _varint(seconds) if seconds else b""
    if us:
        nanos = us * 1000
        if nanos >= 1 << 28:  # 0.268 s and more: five bytes (below 2**30)
            body += bytes(
                (
                    16,
                    (nanos & 0x7F) | 0x80,
                    ((nanos >> 7) & 0x7F) | 0x80,
                    ((nanos >> 14) & 0x7F) | 0x80,
                    ((nanos >> 21) & 0x7F) | 0x80,
                    nanos >> 28,
                )
            )
        else:
            body += _NANOS + _varint(nanos)
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
    t, opt = ct._optional(hint)  # pyright: ignore[reportPrivateUsage]
    kind = fm.proto_type
    key = g.bind(wc.field_key(message, name), "key")
    v = f"v.{name}"
    # a length-delimited value: its key and length from a table made once (lengths below
    # 128), appended with the value, so no bytes are made by concatenation per field
    raw_key = wc.field_key(message, name)
    pre = g.bind([raw_key + _SMALL[n] for n in range(128)], "pre")
    varint = g.bind(wc.varint, "varint")
    delimited = f"out += ({pre}[n], b) if n < 128 else ({key} + {varint}(n), b)"
    if fm.repeated or kind == betterproto2.TYPE_MAP:
        if (
            fm.repeated
            and not opt
            and kind == betterproto2.TYPE_STRING
            and (view.__name__, name) not in ct._FIELD_HOOKS  # pyright: ignore[reportPrivateUsage]
            and typing.get_origin(t) in (tuple, list)
            and typing.get_args(t)[:1] == (str,)
        ):  # a list of strings: each its own field, as _wirecodec sends one (none: nothing)
            return [f"for x in {v}: b = x.encode(); n = len(b); {delimited}"]
    elif kind == betterproto2.TYPE_ENUM and not fm.optional:
        table = g.bind(_EnumBytes(ct._Words(wire), wc.field_key(message, name)), "enum")  # pyright: ignore[reportPrivateUsage]
        return [f"out.append({table}[{v}])"]
    elif wire is dt.datetime:
        ts = g.bind(_timestamp, "ts")  # a naive value as UTC (``utc``): in _timestamp
        return [f"x = {v}", f"if x is not None: out.append({ts}({key}, x))"]
    elif (
        ct._is_message(wire)  # pyright: ignore[reportPrivateUsage]
        and not ct._is_struct(wire)  # pyright: ignore[reportPrivateUsage]
        and fm.unwrap is None
        and isinstance(t, type)
        and attrs.has(t)
    ):
        sub = g.bind(wire_encoder(t, wire), "sub")
        return [f"x = {v}", f"if x is not None: b = {sub}(x); n = len(b); {delimited}"]
    elif (kind in (betterproto2.TYPE_STRING, betterproto2.TYPE_BOOL) or kind in _INTS) and t in (
        str,
        int,
        bool,
    ):
        sent = "x is not None" if fm.optional else "x"
        if kind == betterproto2.TYPE_STRING:
            put = f"b = x.encode(); n = len(b); {delimited}"
        elif kind == betterproto2.TYPE_BOOL:
            yes, no = g.bind(raw_key + b"\x01", "yes"), g.bind(raw_key + b"\x00", "no")
            put = f"out.append({yes} if x else {no})"
        else:
            put = f"out += ({key}, {varint}(int(x)))"
        return [f"x = {v}", f"if {sent}: {put}"]
    # anything else: the converter's expression, encoded by _wirecodec's code for the field
    expr = ct._encode_field(g, view, message, name, fm, wire, hint)  # pyright: ignore[reportPrivateUsage]
    put = g.bind(wc.field_bytes(message, name), "put")
    return [f"out.append({put}({expr}))"]


def encoded(message: type[betterproto2.Message], views: Iterable[Any]) -> list[Any]:
    """``views`` each encoded once as ``message``, as stand-ins (``_wirecodec.Encoded``)
    that ``_paging.fit`` measures and a response encodes by copying their bytes: a page's
    items are encoded once, not once to measure and again to send. Use them only as a
    response's items."""
    Encoded = wc.Encoded
    return [Encoded(wire_encoder(x.__class__, message)(x)) for x in views]


# ------------------------------------------------------------------ reading
#
# The other way: a message's bytes straight to its view. A reader expects the fields in
# the order the encoding sends them (every encoder of skift's sends them so), each once (a
# list's items together); it reads them into locals and makes the view with the
# converter's own expressions. Anything else (a field out of order or sent twice, an
# unknown field, an enum number the generated enum lacks, a truncated message) is left to
# the general path (``message.FromString`` then the converter), so what a reader answers
# is always what that path answers (tests/server/test_convert_wire.py compares them).

_READABLE = _INTS | {
    betterproto2.TYPE_STRING,
    betterproto2.TYPE_BOOL,
    betterproto2.TYPE_ENUM,
    betterproto2.TYPE_MESSAGE,
}


def _read_timestamp(buf: bytes, i: int, end: int) -> dt.datetime:
    """A google.protobuf.Timestamp's bytes (``buf[i:end]``) as ``Timestamp.to_datetime``
    makes them."""
    seconds = nanos = 0
    if i < end and buf[i] == 8:
        seconds, i = _read_varint(buf, i + 1)
        if seconds >= 0x8000000000000000:  # below it the int64 is the varint itself
            seconds &= 0xFFFFFFFFFFFFFFFF
            seconds = (seconds ^ 0x8000000000000000) - 0x8000000000000000
    if i < end and buf[i] == 16:
        nanos, i = _read_varint(buf, i + 1)
        if nanos >= 0x80000000:  # below it the int32 is the varint itself
            nanos &= 0xFFFFFFFF
            nanos = (nanos ^ 0x80000000) - 0x80000000
    if i != end:
        raise wc.Fallback
    return _EPOCH + _timedelta(0, seconds, nanos // 1000)  # days, seconds, microseconds


_CONVERT = {
    betterproto2.TYPE_INT64: [
        "v &= 0xFFFFFFFFFFFFFFFF",
        "v = (v ^ 0x8000000000000000) - 0x8000000000000000",
    ],
    betterproto2.TYPE_INT32: ["v &= 0xFFFFFFFF", "v = (v ^ 0x80000000) - 0x80000000"],
    betterproto2.TYPE_UINT32: ["v &= 0xFFFFFFFF"],
    betterproto2.TYPE_UINT64: ["v &= 0xFFFFFFFFFFFFFFFF"],
    betterproto2.TYPE_BOOL: ["v = v > 0"],
}


@functools.cache
def wire_decoder(
    message: type[betterproto2.Message], view: type[Any]
) -> Callable[[bytes], Any] | None:
    """The function that reads a ``view`` from ``message``'s bytes (:class:`wc.Fallback`,
    IndexError or UnicodeDecodeError for what it leaves to the general path), or None where
    it has none."""
    return _decoder(message, view, upb=False)


@functools.cache
def upb_decoder(
    message: type[betterproto2.Message], view: type[Any]
) -> Callable[[Any], Any] | None:
    """The function that makes a ``view`` from ``message`` parsed by upb (``_upbcodec``'s
    class for it) as :func:`wire_decoder` makes it from the bytes, when those are the
    message's own encoding (:func:`read_view` checks); None where it has none."""
    return _decoder(message, view, upb=True)


def _decoder(message: type[Any], view: type[Any], *, upb: bool) -> Callable[[Any], Any] | None:
    if ct._is_union(view) or (view.__name__, message.__name__) in ct._PAIRS:  # pyright: ignore[reportPrivateUsage]
        return None
    meta = ct._meta(message)  # pyright: ignore[reportPrivateUsage]
    classes = ct._cls_by_field(message)  # pyright: ignore[reportPrivateUsage]
    hints = ct._hints(view)  # pyright: ignore[reportPrivateUsage]
    vfields = ct._view_fields(view)  # pyright: ignore[reportPrivateUsage]
    ct.decoder(message, view)  # refuses a pair the converter refuses, naming the field
    hooked = {n: h for (v, n), h in ct._FIELD_HOOKS.items() if v == view.__name__}  # pyright: ignore[reportPrivateUsage]
    g = ct._Gen()  # pyright: ignore[reportPrivateUsage]
    rv, fallback = g.bind(wc.read_varint, "rv"), g.bind(wc.Fallback, "F")
    reads: list[str] = []
    raw: set[str] = set()  # message fields kept as bytes for a reader of their view
    for name in wc.field_order(message):
        fm = meta[name]
        wire: Any = classes[name]
        kind = fm.proto_type
        if kind not in _READABLE or (
            fm.repeated and kind not in (betterproto2.TYPE_STRING, betterproto2.TYPE_MESSAGE)
        ):
            return None
        if kind == betterproto2.TYPE_MESSAGE and fm.unwrap is not None and wire is not dt.datetime:
            return None
        if upb:
            lines = _upb_field(g, message, view, name, raw)
            if lines is None:
                return None
            reads += lines
            continue
        key = wc.field_key(message, name)
        at = " and ".join(
            f"buf[i + {k}] == {b}" if k else f"buf[i] == {b}" for k, b in enumerate(key)
        )
        within = f"i + {len(key) - 1} < end" if len(key) > 1 else "i < end"
        loop = "while" if fm.repeated else "if"
        body = [f"i += {len(key)}"]
        if kind in (betterproto2.TYPE_STRING, betterproto2.TYPE_MESSAGE):
            body += [
                "n = buf[i]",
                "if n < 128: i += 1",
                f"else: n, i = {rv}(buf, i)",
                "j = i + n",
                f"if j > end: raise {fallback}",
            ]
            if kind == betterproto2.TYPE_STRING:
                value = "buf[i:j].decode()"  # UTF-8, strict: as str(..., 'utf-8')
            elif wire is dt.datetime:
                value = f"{g.bind(_read_timestamp, 'ts')}(buf, i, j)"
            else:
                if _kept_raw(message, view, name):
                    raw.add(name)
                    value = "buf[i:j]"
                else:
                    value = f"{g.bind(wc._decode, 'decode')}({g.bind(wire, 'W')}, buf[i:j])"  # pyright: ignore[reportPrivateUsage]
            body += [f"x_{name}.append({value})" if fm.repeated else f"x_{name} = {value}", "i = j"]
        else:
            body += ["v = buf[i]", "if v < 128: i += 1", f"else: v, i = {rv}(buf, i)"]
            if kind == betterproto2.TYPE_ENUM:
                members = g.bind({int(e): e for e in cast(Iterable[Any], wire)}, "members")
                body += [f"v = {members}.get(v)", f"if v is None: raise {fallback}"]
            else:
                body += _CONVERT[kind]
            body += [f"x_{name} = v"]
        start = "[]" if fm.repeated else g.bind(wc._plan(message).consts[name], "zero")  # pyright: ignore[reportPrivateUsage]
        reads.append(f"x_{name} = {start}")
        reads.append(f"{loop} {within} and {at}:")
        reads.extend("    " + line for line in body)
    if not upb:
        reads.append(f"if i != end: raise {fallback}")
    args: list[str] = []
    if hooked:
        m = g.bind(message, "M")
        fields = ", ".join(f"{n}=x_{n}" for n in wc.field_order(message))
        reads.append(f"m = {m}.__new__({m})")
        reads.append(f'm.__dict__.update(_unknown_fields=b"", {fields})')
    for name, f in vfields.items():
        hook = hooked.get(name)
        if hook is not None and hook.decode is not None:
            args.append(f"{name}={g.bind(hook.decode, 'hook')}(m)")
            continue
        if name not in meta or (hook is not None and hook.skip):
            continue
        t, opt = ct._optional(hints[name])  # pyright: ignore[reportPrivateUsage]
        if name in raw:
            item = ct._item(t) if meta[name].repeated else t  # pyright: ignore[reportPrivateUsage]
            read = upb_decoder(classes[name], item) if upb else _reader(classes[name], item)
            if read is None:
                return None
            if meta[name].repeated:
                sub = g.bind(read, "read")
                seq = "list" if typing.get_origin(t) is list else "tuple"
                args.append(f"{name}={seq}([{sub}(x) for x in x_{name}])")
            else:
                sub = g.bind(read, "read")
                unset = "None" if opt else f"{g.bind(ct.decoder(classes[name], t), 'dec')}(None)"
                args.append(f"{name}={unset} if x_{name} is None else {sub}(x_{name})")
            continue
        expr = ct._decode_field(g, f, name, meta[name], classes[name], hints[name])  # pyright: ignore[reportPrivateUsage]
        local = re.sub(rf"\bm\.{name}\b", f"x_{name}", expr)
        args.append(f"{name}={local}")
    fn = f"read_{message.__name__}"
    head = f"def {fn}(u):\n" if upb else f"def {fn}(buf):\n    i = 0\n    end = len(buf)\n"
    src = (
        head
        + "".join(f"    {line}\n" for line in reads)
        + f"    return {g.bind(view, 'V')}(\n"
        + "".join(f"        {a},\n" for a in args)
        + "    )\n"
    )
    return g.compile(fn, src)


def _kept_raw(message: type[Any], view: type[Any], name: str) -> bool:
    """Whether message field ``name`` (a message, or a list of them) is kept as it is read
    (its bytes, or upb's message) for the reader of its view."""
    fm = ct._meta(message)[name]  # pyright: ignore[reportPrivateUsage]
    if name not in ct._view_fields(view) or (view.__name__, name) in ct._FIELD_HOOKS:  # pyright: ignore[reportPrivateUsage]
        return False
    t = ct._optional(ct._hints(view)[name])[0]  # pyright: ignore[reportPrivateUsage]
    item = ct._item(t) if fm.repeated else t  # pyright: ignore[reportPrivateUsage]
    return isinstance(item, type) and attrs.has(item)


def _upb_field(
    g: Any, message: type[Any], view: type[Any], name: str, raw: set[str]
) -> list[str] | None:
    """The lines that take field ``name`` from upb's message ``u`` into ``x_<name>`` as the
    bytes reader leaves it there from the message's own encoding (None: no such lines)."""
    from . import _upbcodec

    fm = ct._meta(message)[name]  # pyright: ignore[reportPrivateUsage]
    wire: Any = ct._cls_by_field(message)[name]  # pyright: ignore[reportPrivateUsage]
    kind = fm.proto_type
    pname: str = _upbcodec.upb_class(message).DESCRIPTOR.fields_by_number[fm.number].name
    if not pname.isidentifier() or keyword.iskeyword(pname):
        return None
    get, has, x = f"u.{pname}", f'u.HasField("{pname}")', f"x_{name}"
    zero = wc._plan(message).consts.get(name)  # pyright: ignore[reportPrivateUsage]
    z = g.bind(zero, "zero")
    fallback = g.bind(wc.Fallback, "F")
    if fm.repeated:
        if kind == betterproto2.TYPE_STRING:
            return [f"{x} = list({get})"]
        if not _kept_raw(message, view, name):
            return None
        raw.add(name)
        return [f"{x} = list({get})"]
    if kind == betterproto2.TYPE_MESSAGE:
        if zero is not None:
            return None
        if wire is dt.datetime:
            return [f"{x} = {g.bind(_upb_timestamp, 'ts')}({get}) if {has} else None"]
        if not _kept_raw(message, view, name):
            return None
        raw.add(name)
        return [f"{x} = {get} if {has} else None"]
    if kind == betterproto2.TYPE_ENUM:
        members = g.bind({int(e): e for e in cast(Iterable[Any], wire)}, "members")
        take = [f"{x} = {members}.get({x})", f"if {x} is None: raise {fallback}"]
        if fm.optional:
            return [
                f"if {has}:",
                f"    {x} = {get}",
                *("    " + line for line in take),
                f"else: {x} = {z}",
            ]
        # not sent when 0 (the message's own encoding): the reader's zero, as it leaves it
        return [
            f"{x} = {get}",
            f"if not {x}: {x} = {z}",
            "else:",
            *("    " + line for line in take),
        ]
    if fm.optional:
        return [f"{x} = {get} if {has} else {z}"]
    if zero != (0 if kind in _INTS else ("" if kind == betterproto2.TYPE_STRING else False)):
        return None
    return [f"{x} = {get}"]


def _upb_timestamp(t: Any) -> dt.datetime:
    """upb's Timestamp as :func:`_read_timestamp` reads its bytes."""
    return _EPOCH + _timedelta(0, t.seconds, t.nanos // 1000)  # days, seconds, microseconds


def _reader(message: type[Any], view: type[Any]) -> Callable[[bytes], Any]:
    """A nested message's bytes to its view: its reader, else the general decoder over it
    (raising as the general decode of the whole message would)."""
    read = wire_decoder(message, view)
    if read is not None:
        return read
    dec = ct.decoder(message, view)
    return lambda raw: dec(wc._decode(message, raw))  # pyright: ignore[reportPrivateUsage]


UPB_FROM: Final = 2048
"""From this many bytes a response is parsed by upb (:func:`upb_decoder`) first: below it
parsing in Python costs less than upb's parse and its checks, and a client that reads only
small responses never imports protobuf."""


@functools.cache
def _upb_reader(message: type[Any], view: type[Any]) -> Callable[[bytes], Any] | None:
    """``message``'s bytes to a ``view`` through upb, when they are the message's own
    encoding: no unknown field, nothing sent twice or as a default, no longer varint
    (``ByteSize`` of what upb kept, its unknown fields discarded, is their length). Any
    other bytes: :class:`wc.Fallback`, for the readers in Python."""
    read = upb_decoder(message, view)
    if read is None:
        return None
    from google.protobuf.message import DecodeError

    from . import _upbcodec

    parse = _upbcodec.upb_class(message).FromString

    def upb_read(data: bytes) -> Any:
        try:
            u = parse(data)
        except DecodeError:
            raise wc.Fallback from None
        u.DiscardUnknownFields()
        if u.ByteSize() != len(data):
            raise wc.Fallback
        return read(u)

    return upb_read


def read_view(
    message: type[betterproto2.Message],
    view: type[Any],
    data: bytes,
    parse: Callable[[bytes], Any] | None = None,
) -> Any:
    """The ``view`` in ``message``'s bytes ``data``: ``from_pb(message, view,
    parse(data))``, read without the message where a reader can (upb's from
    :data:`UPB_FROM` bytes). ``parse`` is the general path (default
    ``message.FromString``; the remote client's is strict: ``_client_base``)."""
    if len(data) >= UPB_FROM:
        upb = _upb_reader(message, view)
        if upb is not None:
            try:
                return upb(data)
            except wc.Fallback:
                pass  # the reader in Python, then the general path
    read = wire_decoder(message, view)
    if read is not None:
        try:
            return read(data)
        except (wc.Fallback, IndexError, UnicodeDecodeError):
            pass  # the general path says what is wrong, as it would have
    return ct.decoder(message, view)((parse or message.FromString)(data))


@functools.cache
def _field_of(message: type[betterproto2.Message], name: str) -> tuple[bytes, Any]:
    """The key ``message`` sends its field ``name`` under, and the field's message class."""
    return wc.field_key(message, name), ct._cls_by_field(message)[name]  # pyright: ignore[reportPrivateUsage]


def field_view(message: type[betterproto2.Message], name: str, view: type[Any], got: Any) -> Any:
    """The ``view`` in the field ``name`` of the decoded reply ``got`` (GetNode's node)."""
    return ct.from_pb(_field_of(message, name)[1], view, getattr(got, name))


def read_field_view(
    message: type[betterproto2.Message],
    name: str,
    view: type[Any],
    data: bytes,
    parse: Callable[[bytes], Any] | None = None,
) -> Any:
    """The ``view`` in the field ``name`` of ``message``'s bytes ``data`` (a reply whose one
    field wraps a view: GetNode's node): ``field_view(message, name, view, parse(data))``,
    read straight from the bytes (:func:`wire_decoder`) when ``data`` is that one field,
    once, and its reader takes it; anything else is read by the general path (``parse``,
    as :func:`read_view`'s), which answers (or refuses) it as it always has."""
    key, wire = _field_of(message, name)
    read = wire_decoder(wire, view)
    k = len(key)
    end = len(data)
    if read is not None and end > k and data[:k] == key:
        try:
            n = data[k]
            i = k + 1
            if n >= 128:
                n, i = wc.read_varint(data, k)
            if i + n == end:
                return read(data[i:])
        except (wc.Fallback, IndexError, UnicodeDecodeError):
            pass  # the general path says what is wrong, as it would have
    return field_view(message, name, view, (parse or message.FromString)(data))
