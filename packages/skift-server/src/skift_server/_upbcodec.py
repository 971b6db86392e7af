"""Requests parsed by protobuf's compiled parser (upb), as the generated betterproto2 messages.

The strict walk in ``_wire`` checks every tag, length and string of a request in
Python before the pure-Python parser (``_wirecodec``) reads it again: a 4 MB
Patch took about 0.85 s of CPU on a quiet machine, more under load. Here the
bytes are parsed once by upb (the ``protobuf`` package's C parser, from the
descriptors ``make generate`` compiles beside the generated code,
``_proto/descriptors.binpb``) and the parsed message is copied into the same
betterproto2 objects the handlers read.

upb refuses what the strict walk refuses (truncated varints and lengths, field
number 0, wire types 6 and 7, strings that are not UTF-8) and is lenient where
protobuf is: a known field sent with another wire type, or a group, it keeps as
an unknown field, and a ten-byte varint past 64 bits it cuts to 64 (so bytes
that may hold one, nine bytes with their high bit set and then one above 1, go
the old way; UTF-8 text can look like that too). So a request is taken from upb only when it parsed, carries
no unknown field anywhere (its size does not change when they are discarded),
nests no deeper than the walk allows and converts cleanly (an enum value the
generated code cannot make, say). Anything else is :class:`Unsure` and goes
the old way (``_wire``'s walk, then ``_wirecodec``), so what is refused, and
the words it is refused with, stay the walk's. tests/server/test_upbcodec.py
compares both ways on every generated message and on mutated bytes.
"""

from __future__ import annotations

import contextlib
import gc
import re
import threading
import time
from collections.abc import Generator
from importlib import resources
from typing import Any, Final

import betterproto2
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError

from . import _wirecodec
from ._proto import message_pool

MAX_DEPTH: Final = 64
"""The strict walk's bound on nesting (``_wire.MAX_DEPTH``): deeper is left to it."""

_TICK: Final = 4096
"""Messages converted between two looks at the clock."""

GC_PAUSE_BYTES: Final = 64 * 1024
"""From this size the cyclic garbage collector is paused while a request is converted."""

_MESSAGE: Final = 1
_ENUM: Final = 2
_SCALAR: Final = 3
_MAP: Final = 4


_OVERLONG: Final = re.compile(rb"[\x80-\xff]{9}[\x02-\x7f]")
"""Ten bytes that would be a varint of more than 64 bits (text may look like it too)."""


class Unsure(Exception):
    """upb did not take the request as the strict walk would: leave it to the walk."""


class TooSlow(Exception):
    """The deadline passed while the parsed request was being converted."""


_pool: descriptor_pool.DescriptorPool | None = None
_upb_classes: dict[type[Any], Any] = {}


def _descriptors() -> descriptor_pool.DescriptorPool:
    global _pool
    if _pool is None:
        data = resources.files("skift_server._proto").joinpath("descriptors.binpb").read_bytes()
        pool = descriptor_pool.DescriptorPool()
        files = {f.name: f for f in descriptor_pb2.FileDescriptorSet.FromString(data).file}
        added: set[str] = set()

        def add(name: str) -> None:
            if name in added:
                return
            for dep in files[name].dependency:
                add(dep)
            pool.Add(files[name])
            added.add(name)

        for name in files:
            add(name)
        _pool = pool
    return _pool


def upb_class(cls: type[Any]) -> Any:
    """The protobuf (upb) message class of the generated betterproto2 class ``cls``
    (KeyError for a class the compiled descriptors do not declare)."""
    found = _upb_classes.get(cls)
    if found is None:
        url: str = message_pool.default_message_pool.type_to_url[cls]
        full_name = url.rsplit("/", 1)[1]
        desc = _descriptors().FindMessageTypeByName(full_name)
        found = _upb_classes[cls] = message_factory.GetMessageClass(desc)
    return found


class _Conv:
    """How to copy one message type's fields out of upb: per field number, its name in
    the betterproto2 class, its shape and what its values become."""

    __slots__ = ("cls", "consts", "fields", "lists", "maps")

    def __init__(self, cls: type[Any]) -> None:
        plan = _wirecodec._plan(cls)  # pyright: ignore[reportPrivateUsage]
        self.cls = cls
        self.consts = plan.consts
        self.lists = plan.lists
        self.maps = plan.maps
        self.fields: dict[int, tuple[str, int, bool, Any, Any]] = {}
        for number, f in plan.by_number.items():
            if f.kind == betterproto2.TYPE_MAP:
                shape, extra = _MAP, f.cls
            elif f.kind == betterproto2.TYPE_MESSAGE:
                shape, extra = _MESSAGE, f.unwrap
            elif f.kind == betterproto2.TYPE_ENUM:
                shape, extra = _ENUM, f.members
            else:
                shape, extra = _SCALAR, None
            self.fields[number] = (f.name, shape, f.repeated, f.cls, extra)


_convs: dict[type[Any], _Conv] = {}


def _conv(cls: type[Any]) -> _Conv:
    found = _convs.get(cls)
    if found is None:
        found = _convs[cls] = _Conv(cls)
    return found


class _Copy:
    """One conversion: its deadline and how many messages it made."""

    __slots__ = ("deadline", "n")

    def __init__(self, deadline: float | None) -> None:
        self.deadline = deadline
        self.n = 0

    def message(self, cls: Any, m: Any, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise Unsure
        self.n += 1
        if self.deadline is not None and self.n % _TICK == 0 and time.monotonic() > self.deadline:
            raise TooSlow
        c = _convs.get(cls) or _conv(cls)
        obj: Any = cls.__new__(cls)
        d: dict[str, Any] = obj.__dict__
        d.update(c.consts)
        for name in c.lists:
            d[name] = []
        for name in c.maps:
            d[name] = {}
        fields = c.fields
        for fd, value in m.ListFields():
            name, shape, repeated, sub, extra = fields[fd.number]
            if shape == _SCALAR:
                d[name] = list(value) if repeated else value
            elif shape == _MESSAGE:
                if extra is not None:  # a well-known type the generated code unwraps
                    wrapped = extra()
                    if repeated:
                        d[name] = [self.message(wrapped, v, depth + 1).to_wrapped() for v in value]
                    else:
                        d[name] = self.message(wrapped, value, depth + 1).to_wrapped()
                elif repeated:
                    d[name] = [self.message(sub, v, depth + 1) for v in value]
                else:
                    d[name] = self.message(sub, value, depth + 1)
            elif shape == _ENUM:
                if repeated:
                    d[name] = [_member(sub, extra, v) for v in value]
                else:
                    d[name] = _member(sub, extra, value)
            else:
                d[name] = self.map(sub, value, depth + 1)
        return obj

    def map(self, entry: type[Any], value: Any, depth: int) -> dict[Any, Any]:
        """A map field: the strict walk counts its entries as a level of nesting."""
        if depth > MAX_DEPTH:
            raise Unsure
        _name, shape, _repeated, sub, extra = _conv(entry).fields[2]
        if shape == _SCALAR:
            return dict(value)
        if shape == _ENUM:
            return {k: _member(sub, extra, v) for k, v in value.items()}
        if extra is not None:
            wrapped = extra()
            return {k: self.message(wrapped, v, depth + 1).to_wrapped() for k, v in value.items()}
        return {k: self.message(sub, v, depth + 1) for k, v in value.items()}


def _member(cls: Any, members: dict[int, Any], value: int) -> Any:
    found = members.get(value)
    return found if found is not None else cls(value)


def decode(cls: type[Any], data: bytes, *, deadline: float | None = None) -> Any:
    """``cls`` parsed from ``data`` by upb; :class:`Unsure` when the strict walk must
    decide (a malformed message, unknown fields, deep nesting), :class:`TooSlow` past
    ``deadline`` (``time.monotonic()``)."""
    if _OVERLONG.search(data):
        raise Unsure  # perhaps a varint past 64 bits, which upb cuts short and the walk refuses
    try:
        m = upb_class(cls).FromString(data)
    except (DecodeError, KeyError):
        raise Unsure from None
    with_unknown = m.ByteSize()
    m.DiscardUnknownFields()
    if m.ByteSize() != with_unknown:
        raise Unsure  # a field protobuf did not know, or knew with another wire type
    try:
        if len(data) < GC_PAUSE_BYTES:  # a small request: no pause, no context manager
            return _Copy(deadline).message(cls, m, 0)
        with _gc_paused(True):
            return _Copy(deadline).message(cls, m, 0)
    except (Unsure, TooSlow):
        raise
    except Exception:  # an enum value the generated class refuses, say: the walk decides
        raise Unsure from None


_gc_lock = threading.Lock()
_gc_depth = 0
_gc_paused_here = False


@contextlib.contextmanager
def _gc_paused(pause: bool) -> Generator[None]:
    """The cyclic garbage collector paused while a large request's objects are made.

    A 4 MB Patch is some 90,000 messages, none in a reference cycle; the collector's
    passes over them were half of its conversion's CPU. Decoders run on worker threads,
    so overlapping pauses share one (the last to end resumes it, unless it was off
    before the first began).
    """
    global _gc_depth, _gc_paused_here
    if not pause:
        yield
        return
    with _gc_lock:
        if _gc_depth == 0:
            _gc_paused_here = gc.isenabled()
            if _gc_paused_here:
                gc.disable()
        _gc_depth += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_depth -= 1
            if _gc_depth == 0 and _gc_paused_here:
                _gc_paused_here = False
                gc.enable()
