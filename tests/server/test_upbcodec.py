"""Requests parsed by protobuf's compiled parser (skift_server._upbcodec) are what the
strict walk and the pure-Python parser made of them (``_wire.decode_strictly``).

Every generated message is filled with random values (test_wirecodec's ``fill``):
upb must take it (not leave it to the walk) and make an equal message. Where
protobuf's rules and the pure-Python parser's differ (a oneof with two members on
the wire, a sub-message sent twice), protobuf's hold: the comparison is with what
the old way makes of protobuf's own re-encoding. Then the
bytes are damaged (cut, a byte changed, bytes inserted, fields of every wire type
appended, a known field re-sent with another wire type, deep nesting): the server's
decoder (upb first) and the strict walk alone must agree on each, refusing the same
ones and reading the rest into equal messages.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from test_wirecodec import fill, messages

import skift_server  # noqa: F401  # pyright: ignore[reportUnusedImport]  # installs the fast codec
from skift_server import _upbcodec, _wire, _wirecodec
from skift_server._proto.google import protobuf
from skift_server._proto.skift import v1

MESSAGES = list(messages())


def outcome(decoder: Any, cls: type[Any], data: bytes) -> tuple[str, Any]:
    try:
        return "ok", decoder(cls, data)
    except _wire.WireError:
        return "refused", None


def canonical(cls: type[Any], data: bytes) -> bytes:
    """``data`` as protobuf writes it back: of a oneof sent twice only the last member,
    a sub-message sent twice merged (the pure-Python parser kept every member of a
    oneof and the last copy of a sub-message)."""
    return _upbcodec.upb_class(cls).FromString(data).SerializeToString()


def agree(cls: type[Any], data: bytes) -> None:
    new = outcome(_wire.decode, cls, data)
    old = outcome(_wire.decode_strictly, cls, data)
    assert new[0] == old[0], (cls.__name__, data)
    if new[0] == "refused":
        return
    try:
        _upbcodec.decode(cls, data)
    except _upbcodec.Unsure:  # the old way decided
        assert new[1] == old[1], (cls.__name__, data)
    else:
        assert new[1] == _wire.decode_strictly(cls, canonical(cls, data)), (cls.__name__, data)


@pytest.mark.parametrize("msg", MESSAGES, ids=lambda m: f"{m.__module__}.{m.__name__}")
def test_every_message_is_read_as_before(msg: type[Any]) -> None:
    rnd = random.Random(f"upb {msg.__name__}")
    for _ in range(12):
        data = canonical(msg, bytes(fill(rnd, msg)))
        slow = _wire.decode_strictly(msg, data)
        assert _wire.decode(msg, data) == slow  # a map's entries may come in another order
        if not _upbcodec._OVERLONG.search(data):  # pyright: ignore[reportPrivateUsage]
            assert _upbcodec.decode(msg, data) == slow  # well formed: upb takes it


def _key(number: int, wire: int) -> bytes:
    return _varint(number << 3 | wire)


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _damaged(rnd: random.Random, cls: type[Any], data: bytes) -> list[bytes]:
    out: list[bytes] = []
    if data:
        for _ in range(3):
            out.append(data[: rnd.randrange(len(data))])
            i = rnd.randrange(len(data))
            out.append(data[:i] + bytes([rnd.randrange(256)]) + data[i + 1 :])
            out.append(data[:i] + rnd.randbytes(rnd.randint(1, 4)) + data[i:])
    numbers = [m.number for m in cls._betterproto.meta_by_field_name.values()]  # pyright: ignore[reportPrivateUsage]
    unknown = max(numbers, default=0) + 7
    for number in [*numbers[:4], unknown]:
        out.append(data + _key(number, 0) + b"\x96\x01")  # varint
        out.append(data + _key(number, 1) + rnd.randbytes(8))  # fixed64
        out.append(data + _key(number, 2) + b"\x03abc")  # length-delimited
        out.append(data + _key(number, 2) + b"\x02\xff\xfe")  # not UTF-8
        out.append(data + _key(number, 5) + rnd.randbytes(4))  # fixed32
        out.append(data + _key(number, 3) + _key(number, 4))  # a group
        out.append(data + _key(number, 6))  # no such wire type
        out.append(data + _key(number, 0) + b"\xff" * 9 + b"\x7f")  # varint past 64 bits
        out.append(data + _key(number, 0) + b"\xff" * 10 + b"\x01")  # 11 bytes
    out.append(data + b"\x00\x01")  # field number 0
    out.append(data + _varint((1 << 29) << 3))  # field number 2^29
    out.append(rnd.randbytes(rnd.randint(1, 40)))
    return out


@pytest.mark.parametrize("msg", MESSAGES, ids=lambda m: f"{m.__module__}.{m.__name__}")
def test_damaged_bytes_are_judged_as_before(msg: type[Any]) -> None:
    rnd = random.Random(f"damaged {msg.__name__}")
    for _ in range(4):
        data = bytes(fill(rnd, msg))
        for bad in _damaged(rnd, msg, data):
            agree(msg, bad)


def _nested_struct(depth: int) -> bytes:
    value = protobuf.Value(string_value="leaf")
    for _ in range(depth):
        value = protobuf.Value(struct_value=protobuf.Struct(fields={"k": value}))
    return bytes(value)


@pytest.mark.parametrize("depth", [10, 20, 21, 22, 40])
def test_nesting_is_bounded_as_before(depth: int) -> None:
    """A Struct nests three levels a step (struct, map entry, value): past the walk's 64,
    both refuse."""
    data = _nested_struct(depth)
    agree(protobuf.Value, data)
    deep = outcome(_wire.decode, protobuf.Value, data)
    assert deep[0] == ("refused" if 3 * depth > _wire.MAX_DEPTH else "ok")


def test_a_large_patch_is_read_by_upb() -> None:
    op = v1.PatchOp(create_node=v1.CreateNodeOp(title="t" * 40, body="b" * 40, labels=["x"]))
    request = v1.PatchRequest(project="p", ops=[op] * 5000, request_id="r")
    data = bytes(request)
    assert len(data) > _upbcodec.GC_PAUSE_BYTES
    assert _upbcodec.decode(v1.PatchRequest, data) == request
    assert _wire.decode(v1.PatchRequest, data) == request


def test_conversion_past_its_deadline_is_too_expensive() -> None:
    op = v1.PatchOp(create_node=v1.CreateNodeOp(title="t"))
    data = bytes(v1.PatchRequest(project="p", ops=[op] * 20000))
    with pytest.raises(_wire.TooExpensive):
        _wire.decode(v1.PatchRequest, data, deadline=0.0)


@pytest.mark.parametrize("msg", MESSAGES, ids=lambda m: f"{m.__module__}.{m.__name__}")
def test_an_answer_read_exactly_is_what_the_strict_reading_makes(msg: type[Any]) -> None:
    """The remote client reads an answer with the fast decoder alone
    (``_wirecodec.read_exactly``), and only what it does not take the strict way
    (``_client_base.strict_parse``): whatever it takes, whole or damaged, the strict walk
    takes too and reads as the same message, so no damaged answer is read as another."""
    from skift_server._client_base import strict_parse
    from skift_server._wirecodec import read_exactly

    rnd = random.Random(f"exactly {msg.__name__}")
    for _ in range(4):
        data = bytes(fill(rnd, msg))
        for bytes_ in [data, *_damaged(rnd, msg, data)]:
            try:
                fast = read_exactly(msg, bytes_)
            except (ValueError, IndexError, ArithmeticError, _wirecodec.Fallback, RecursionError):
                continue  # the strict way reads it (a value out of range: Unavailable)
            assert outcome(_wire.decode_strictly, msg, bytes_) == ("ok", fast), bytes_
            assert strict_parse(msg)(bytes_) == fast
