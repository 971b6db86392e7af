"""The fast codec (skift_server._wirecodec) writes and reads what betterproto2 does.

Every generated message (skift.v1, google.protobuf, google.rpc) is filled with
random values of each field's type (repeated, optional, oneof, enum, map,
nested and wrapped fields included), encoded by both codecs, and the bytes
must be equal; both decoders must read those bytes (and a truncated copy,
and unknown fields) into equal messages.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import betterproto2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import skift_server  # noqa: F401  # installs the fast codec
from skift_server import _paging, _wirecodec
from skift_server._proto.google import protobuf, rpc
from skift_server._proto.skift import v1

INTS = {
    betterproto2.TYPE_INT32: (-(2**31), 2**31 - 1),
    betterproto2.TYPE_SINT32: (-(2**31), 2**31 - 1),
    betterproto2.TYPE_SFIXED32: (-(2**31), 2**31 - 1),
    betterproto2.TYPE_UINT32: (0, 2**32 - 1),
    betterproto2.TYPE_FIXED32: (0, 2**32 - 1),
    betterproto2.TYPE_INT64: (-(2**63), 2**63 - 1),
    betterproto2.TYPE_SINT64: (-(2**63), 2**63 - 1),
    betterproto2.TYPE_SFIXED64: (-(2**63), 2**63 - 1),
    betterproto2.TYPE_UINT64: (0, 2**64 - 1),
    betterproto2.TYPE_FIXED64: (0, 2**64 - 1),
}


def messages() -> Iterator[type[betterproto2.Message]]:
    for mod in (v1, protobuf, rpc):
        for name in dir(mod):
            obj = getattr(mod, name)
            if (
                isinstance(obj, type)
                and issubclass(obj, betterproto2.Message)
                and dataclasses.is_dataclass(obj)
            ):
                yield obj


def scalar(rnd: random.Random, proto: str, cls: Any) -> Any:
    if proto in INTS:
        lo, hi = INTS[proto]
        return rnd.choice([0, 1, -1 if lo < 0 else 2, 127, 128, 300, lo, hi, rnd.randint(lo, hi)])
    if proto == betterproto2.TYPE_BOOL:
        return rnd.random() < 0.5
    if proto in (betterproto2.TYPE_FLOAT, betterproto2.TYPE_DOUBLE):
        return rnd.choice([0.0, 0.5, -2.25, 1e10])
    if proto == betterproto2.TYPE_STRING:
        return rnd.choice(["", "a", "skift#1", "é—🙂" * rnd.randint(1, 40), "x" * 200])
    if proto == betterproto2.TYPE_BYTES:
        return rnd.randbytes(rnd.choice([0, 1, 5, 200]))
    if proto == betterproto2.TYPE_ENUM:
        return rnd.choice(list(cls))
    raise AssertionError(proto)


def wrapped(rnd: random.Random, unwrap: Any) -> Any:
    target = unwrap()
    if target is protobuf.Timestamp:
        return datetime(2026, 1, 1, tzinfo=UTC) + timedelta(microseconds=rnd.randint(0, 10**14))
    if target is protobuf.Duration:
        return timedelta(microseconds=rnd.randint(-(10**12), 10**12))
    return fill(rnd, target, 1).to_wrapped()


def one(rnd: random.Random, msg: type[Any], name: str, meta: Any, depth: int) -> Any:
    cls = msg._betterproto.cls_by_field.get(name)  # pyright: ignore[reportPrivateUsage]
    if meta.proto_type == betterproto2.TYPE_MESSAGE:
        if meta.unwrap is not None:
            return wrapped(rnd, meta.unwrap)
        return fill(rnd, cls, depth + 1)
    return scalar(rnd, meta.proto_type, cls)


def fill(rnd: random.Random, msg: type[Any], depth: int = 0) -> Any:
    values: dict[str, Any] = {}
    for name, meta in msg._betterproto.meta_by_field_name.items():  # pyright: ignore[reportPrivateUsage]
        if rnd.random() < 0.25:
            continue  # left at its default
        if meta.proto_type == betterproto2.TYPE_MESSAGE and depth > 3 and not meta.unwrap:
            continue
        if meta.proto_type == betterproto2.TYPE_MAP:
            entry = msg._betterproto.cls_by_field[name]  # pyright: ignore[reportPrivateUsage]
            km, vm = meta.map_meta
            if vm.proto_type == betterproto2.TYPE_MESSAGE and depth > 3:
                continue
            values[name] = {
                scalar(rnd, km.proto_type, None): one(rnd, entry, "value", vm, depth)
                for _ in range(rnd.randint(0, 3))
            }
        elif meta.repeated:
            values[name] = [one(rnd, msg, name, meta, depth) for _ in range(rnd.randint(0, 3))]
        else:
            values[name] = one(rnd, msg, name, meta, depth)
    return msg(**values)


@pytest.fixture
def betterproto_codec() -> Iterator[None]:
    _wirecodec.uninstall()
    try:
        yield
    finally:
        _wirecodec.install()


def both(fn: Any) -> tuple[Any, Any]:
    _wirecodec.uninstall()
    try:
        slow = fn()
    finally:
        _wirecodec.install()
    return slow, fn()


@pytest.mark.parametrize("msg", list(messages()), ids=lambda m: f"{m.__module__}.{m.__name__}")
def test_every_message_both_ways(msg: type[Any]) -> None:
    rnd = random.Random(msg.__name__)
    for _ in range(12):
        value = fill(rnd, msg)
        slow, fast = both(lambda value=value: bytes(value))
        assert fast == slow, value
        read_slow, read_fast = both(lambda slow=slow: msg.parse(slow))
        assert read_fast == read_slow
        assert read_fast._unknown_fields == read_slow._unknown_fields  # pyright: ignore[reportPrivateUsage]
        again_slow, again_fast = both(lambda read_fast=read_fast: bytes(read_fast))
        assert again_fast == again_slow


def test_unknown_fields_are_kept() -> None:
    node = v1.Node(ref="p#1", title="t", number=3)
    extra = b"\xf8\x07\x05" + b"\xfa\x07\x02hi" + b"\xfd\x07\x01\x02\x03\x04"  # fields 127
    data = bytes(node) + extra
    slow, fast = both(lambda: v1.Node.parse(data))
    assert fast == slow
    assert fast._unknown_fields == slow._unknown_fields == extra  # pyright: ignore[reportPrivateUsage]
    assert bytes(fast) == data


def test_truncated_and_mistyped_input_is_betterproto2s_to_judge() -> None:
    data = bytes(v1.ReadyResponse(nodes=[v1.Node(ref="p#1", title="x" * 50)], held_count=2))
    for cut in (1, 5, len(data) - 1):
        outcomes: list[Any] = []
        for codec in ("slow", "fast"):
            (_wirecodec.uninstall if codec == "slow" else _wirecodec.install)()
            try:
                outcomes.append(repr(v1.ReadyResponse.parse(data[:cut])))
            except Exception as exc:
                outcomes.append(type(exc))
        _wirecodec.install()
        assert outcomes[0] == outcomes[1], cut
    # field 2 (held_count, a varint) sent length-delimited
    odd = b"\x12\x01x"
    slow, fast = both(lambda: v1.ReadyResponse.parse(odd))
    assert repr(fast) == repr(slow)


def test_a_page_of_stand_ins_encodes_as_its_messages() -> None:
    """A page's items are encoded once (to measure them) and sent as those bytes."""
    rnd = random.Random(19)
    nodes = [fill(rnd, v1.Node) for _ in range(20)]
    stand_ins = [_wirecodec.Encoded(bytes(n)) for n in nodes]
    assert [_paging.size_of(n) for n in nodes] == [_paging.size_of(s) for s in stand_ins]
    assert _paging.fit(nodes, 900) == _paging.fit(stand_ins, 900)
    page = v1.ReadyResponse(nodes=nodes, held_count=3, next_page_token="t")
    sent = v1.ReadyResponse(nodes=stand_ins, held_count=3, next_page_token="t")
    assert bytes(sent) == bytes(page)
    assert v1.ReadyResponse.parse(bytes(sent)) == page


_EDGES = sorted(
    {v for k in range(0, 64) for v in (1 << k, (1 << k) - 1, (1 << k) + 1)}
    | {0, 127, 128, 16383, 16384, 1_764_000_000, 999_999_000, (1 << 63) - 1}
)


@pytest.mark.parametrize("value", [*_EDGES, *(-v for v in _EDGES if v <= 1 << 63)])
def test_a_varint_is_betterprotos(value: int) -> None:
    from skift_server._wirecodec import varint

    assert varint(value) == betterproto2.encode_varint(value)


@settings(max_examples=500, deadline=None)
@given(st.integers(min_value=-(1 << 63), max_value=(1 << 64) - 1))
def test_any_varint_is_betterprotos(value: int) -> None:
    from skift_server._wirecodec import varint

    assert varint(value) == betterproto2.encode_varint(value)


def _read_varint_bytewise(buf: bytes, i: int) -> tuple[int, int]:
    """A varint read a byte at a time (what ``read_varint`` did before it took five at once)."""
    result = shift = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, i
        shift += 7
        if shift >= 64:
            raise _wirecodec.Fallback


def _read_outcome(read: Any, buf: bytes, i: int) -> Any:
    try:
        return read(buf, i)
    except Exception as exc:  # the same refusal either way
        return type(exc)


@settings(max_examples=1000, deadline=None)
@given(st.binary(max_size=14), st.integers(0, 13))
def test_a_varint_reads_as_a_byte_at_a_time(buf: bytes, i: int) -> None:
    assert _read_outcome(_wirecodec.read_varint, buf, i) == _read_outcome(
        _read_varint_bytewise, buf, i
    )


@pytest.mark.parametrize("value", [v for v in _EDGES if v < 1 << 64])
def test_every_varint_reads_back(value: int) -> None:
    data = betterproto2.encode_varint(value) + b"\x01"
    assert _wirecodec.read_varint(data, 0) == (value, len(data) - 1)
