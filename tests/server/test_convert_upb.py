"""A response read through upb (``_convert_wire.upb_decoder``, for responses of
``UPB_FROM`` bytes and more) is the view the general path makes of it
(``from_pb(message, view, message.FromString(data))``), and the readers in Python's: on
every view an operation returns (drawn from their types), on large Ready pages and on
their bytes mutated. Bytes that are not a message's own encoding (a field twice or out of
its wire type, an unknown field, a default sent, a longer varint) are left to the readers
in Python (:class:`Fallback`), so what they answer stays what they answered."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import example, given, settings
from test_convert_types import PAIRS
from test_convert_wire import EVERY_VIEW, _node, _old, _outcome  # pyright: ignore[reportPrivateUsage]
from views_strategies import EDITS, mutate, views

import skift
from skift_server import _wirecodec as wc
from skift_server._convert_types import encoder
from skift_server._convert_wire import (
    UPB_FROM,
    _upb_reader,  # pyright: ignore[reportPrivateUsage]
    encoded,
    read_view,
    upb_decoder,
    wire_decoder,
)
from skift_server._proto.skift import v1


def _upb_outcome(message: type[Any], view: type[Any], data: bytes) -> Any:
    """upb's reading of ``data``, or Fallback where it leaves them to the readers in Python,
    or the type of what it raised (compared with the general path's as ``_outcome`` does: a
    timestamp past year 9999 or before year 1 is an OverflowError on both)."""
    read = _upb_reader(message, view)
    assert read is not None
    try:
        return read(data)
    except wc.Fallback:
        return wc.Fallback
    except Exception as exc:  # the same refusal as the general path's, or a difference
        return type(exc)


@pytest.mark.parametrize(
    ("view", "message"), PAIRS, ids=[f"{v.__name__}-{m.__name__}" for v, m in PAIRS]
)
def test_every_view_reads_through_upb_as_the_converter_decodes(
    view: type[Any], message: type[Any]
) -> None:
    if upb_decoder(message, view) is None:
        return  # read in Python only
    enc = encoder(view, message)

    @EVERY_VIEW
    @given(views(view, message))
    def same(value: Any) -> None:
        data = bytes(enc(value))
        got = _upb_outcome(message, view, data)
        # what skift's encoders send is its own encoding: read by upb, as the general path
        assert got is not wc.Fallback
        assert got == _old(message, view, data)

    same()


def test_the_page_and_node_readers_have_upb_readers() -> None:
    assert upb_decoder(v1.ReadyResponse, skift.ReadyPage) is not None
    assert upb_decoder(v1.ListNodesResponse, skift.ReadyPage) is not None
    assert upb_decoder(v1.Node, skift.NodeInfo) is not None


def _page(n: int = 30) -> bytes:
    nodes = [
        _node(
            number=i * 97,
            title="t" * (i * 7),
            parent="01JB" if i % 2 else None,
            labels=("a", "b")[: i % 3],
            result="done" if i % 3 else None,
            created_at=datetime(1960 + i * 4, 1, 1, tzinfo=UTC)
            + timedelta(microseconds=i * 37_001),
            status=list(skift.Status)[i % len(skift.Status)],
            assignee_kind=[None, *skift.AssigneeKind][i % (len(skift.AssigneeKind) + 1)],
            assignee="me" if i % 4 == 0 else None,
            human_written=i % 5 == 0,
            body_author="u" if i % 6 == 0 else None,
        )
        for i in range(n)
    ]
    return bytes(
        v1.ReadyResponse(
            nodes=encoded(v1.Node, nodes), held_count=7, held_count_exact=True, next_page_token="p"
        )
    )


_PAGE = _page()


def test_a_large_page_is_read_through_upb_as_the_general_path_reads_it() -> None:
    assert len(_PAGE) >= UPB_FROM
    old = _old(v1.ReadyResponse, skift.ReadyPage, _PAGE)
    assert _upb_outcome(v1.ReadyResponse, skift.ReadyPage, _PAGE) == old
    assert read_view(v1.ReadyResponse, skift.ReadyPage, _PAGE) == old
    assert wire_decoder(v1.ReadyResponse, skift.ReadyPage)(_PAGE) == old  # type: ignore[misc]


@pytest.mark.parametrize(
    "extra",
    [
        b"\xf8\x07\x01",  # an unknown field (127, a varint)
        b"\x10\x00",  # held_count sent as its default
        b"\x10\x87\x80\x80\x00",  # held_count 7 in a longer varint
        b"\x12\x01\x07",  # held_count (a varint) sent length-delimited
        b"\x10\x09",  # held_count sent twice
        b"\x0a\x02\x18\x01",  # a node again, with only its number
    ],
)
def test_bytes_not_the_messages_own_encoding_are_left_to_python(extra: bytes) -> None:
    raw = _PAGE + extra
    assert _upb_outcome(v1.ReadyResponse, skift.ReadyPage, raw) in (
        wc.Fallback,
        _outcome(_old, v1.ReadyResponse, skift.ReadyPage, raw),
    )
    assert _outcome(read_view, v1.ReadyResponse, skift.ReadyPage, raw) == _outcome(
        _old, v1.ReadyResponse, skift.ReadyPage, raw
    )


@settings(max_examples=800, deadline=None)
@given(EDITS)
@example(
    edits=[("flip", 64, b"\x02")]
)  # a node's created_at before year 1: OverflowError both ways
def test_mutated_pages_read_through_upb_as_the_general_path_reads_them(
    edits: list[tuple[str, int, bytes]],
) -> None:
    raw = mutate(_PAGE, edits)
    old = _outcome(_old, v1.ReadyResponse, skift.ReadyPage, raw)
    assert _upb_outcome(v1.ReadyResponse, skift.ReadyPage, raw) in (wc.Fallback, old)
    assert _outcome(read_view, v1.ReadyResponse, skift.ReadyPage, raw) == old
