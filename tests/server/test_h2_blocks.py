"""A connection's HPACK decoder remembers header blocks that neither read nor change the
dynamic table (``_hpack_blocks.BlockDecoder``): whatever blocks come, in whatever order, it answers
what HPACK's own decoder answers (the same header lists, the same errors, the same table
afterwards), and it answers a block from memory only when the block means the same
whatever the table holds."""

from __future__ import annotations

from typing import Any

from hpack import Decoder, Encoder, NeverIndexedHeaderTuple
from hypothesis import given, settings
from hypothesis import strategies as st

from skift_server._client_h2 import header_block
from skift_server._hpack_blocks import BlockDecoder, remember_blocks, stateless_block


def _answer(decoder: Decoder, block: bytes, raw: bool) -> Any:
    try:
        return ("ok", [(h.__class__, *h) for h in decoder.decode(block, raw=raw)])
    except Exception as exc:  # the same failure both ways is what is compared
        return ("error", exc.__class__)


def _pair(limit: int = 65536) -> tuple[Decoder, Decoder]:
    plain, remembering = Decoder(limit), Decoder(limit)
    remember_blocks(remembering)
    assert isinstance(remembering, BlockDecoder)
    return plain, remembering


CLIENT_BLOCKS = [
    header_block("/skift.v1.SkiftService/GetNode", "localhost", 30.0, []),
    header_block("/skift.v1.SkiftService/Ready", "localhost", 30.0, [("x-skift-org", "org1")]),
    header_block("/skift.v1.SkiftService/Ready", "h:1", 5.0, [("authorization", "Bearer t")]),
    b"\x10\x03x-a\x02\xc3\xa9",  # never indexed, a UTF-8 value
    b"\x00\x03x-a\x02\xc3\x28",  # not indexed, a value that is not UTF-8
]

_names = st.sampled_from(["x-a", "x-b", "authorization", "content-type", ":path", "te"])
_values = st.text(max_size=40)
_header = st.tuples(_names, _values, st.booleans())
_step = st.one_of(
    st.tuples(st.just("client"), st.integers(0, len(CLIENT_BLOCKS) - 1)),
    st.tuples(st.just("encoder"), st.lists(_header, max_size=5), st.booleans()),
    st.tuples(st.just("resize"), st.integers(0, 4096)),
    st.tuples(st.just("bytes"), st.binary(max_size=30)),
    st.tuples(st.just("again"), st.integers(0, 20)),
)


@settings(max_examples=400, deadline=None)
@given(steps=st.lists(_step, max_size=30), raw=st.booleans(), limit=st.integers(100, 2000))
def test_blocks_decode_as_hpack_decodes_them(
    steps: list[tuple[Any, ...]], raw: bool, limit: int
) -> None:
    plain, remembering = _pair(limit)
    encoder = Encoder()
    sent: list[bytes] = []
    block: bytes
    for step in steps:
        if step[0] == "client":
            block = CLIENT_BLOCKS[step[1]]
        elif step[0] == "encoder":
            headers = [
                NeverIndexedHeaderTuple(k, v) if never else (k, v) for k, v, never in step[1]
            ]
            block = bytes(encoder.encode(headers, huffman=step[2]))
        elif step[0] == "resize":
            encoder.header_table_size = step[1]
            block = bytes(encoder.encode([("x-a", "1")]))
        elif step[0] == "bytes":
            block = step[1]
        else:
            if not sent:
                continue
            block = sent[step[1] % len(sent)]  # a block again, whatever the table holds now
        sent.append(block)
        assert _answer(remembering, block, raw) == _answer(plain, block, raw)
        assert list(remembering.header_table.dynamic_entries) == list(
            plain.header_table.dynamic_entries
        )


def test_a_clients_block_is_answered_from_memory() -> None:
    _, remembering = _pair()
    block = CLIENT_BLOCKS[1]
    assert stateless_block(block)
    first = remembering.decode(block, raw=True)
    assert isinstance(remembering, BlockDecoder)
    assert (block, True) in remembering._blocks  # pyright: ignore[reportPrivateUsage]
    assert remembering.decode(block, raw=True) == first


def test_a_block_that_reads_or_changes_the_table_is_not_remembered() -> None:
    encoder = Encoder()
    indexing = encoder.encode([("x-a", "1")])  # a literal added to the table
    assert not stateless_block(indexing)
    assert not stateless_block(encoder.encode([("x-a", "1")]))  # read from the table
    encoder.header_table_size = 100
    assert not stateless_block(encoder.encode([NeverIndexedHeaderTuple("x-b", "2")]))
    assert stateless_block(Encoder().encode([NeverIndexedHeaderTuple("x-b", "2")]))
    assert stateless_block(b"\x82\x86")  # static :method GET, :scheme http
    assert not stateless_block(b"\xbe")  # index 62: the dynamic table's first entry
    assert not stateless_block(b"\x00\x05ab")  # a name cut short


def test_a_remembered_block_past_a_lowered_limit_is_refused_as_hpack_refuses_it() -> None:
    plain, remembering = _pair()
    block = CLIENT_BLOCKS[0]
    remembering.decode(block, raw=True)
    plain.max_header_list_size = remembering.max_header_list_size = 50
    assert _answer(remembering, block, True) == _answer(plain, block, True)
    assert _answer(remembering, block, True)[0] == "error"
