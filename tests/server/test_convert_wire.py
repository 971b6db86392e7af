"""A view straight to its message's bytes (``_convert_wire``) is the bytes of the message the
converter makes (``bytes(to_pb(message, view))``): byte for byte, on every view an operation
returns (drawn from their types, as test_convert_types draws them) and on a Ready page."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_convert_types import PAIRS
from views_strategies import EDITS, mutate, views

import skift
from skift_server._convert_types import decoder, encoder, to_pb
from skift_server._convert_wire import (
    encoded,
    read_field_view,
    read_view,
    wire_decoder,
    wire_encoder,
)
from skift_server._proto.skift import v1

EVERY_VIEW = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
"""Hypothesis' settings for the tests over every view an operation returns."""


@pytest.mark.parametrize(
    ("view", "message"), PAIRS, ids=[f"{v.__name__}-{m.__name__}" for v, m in PAIRS]
)
def test_every_view_encodes_to_the_converters_bytes(view: type[Any], message: type[Any]) -> None:
    enc = encoder(view, message)
    wire = wire_encoder(view, message)

    @EVERY_VIEW
    @given(views(view, message))
    def same(value: Any) -> None:
        assert wire(value) == bytes(enc(value))

    same()


def _node(**kw: Any) -> skift.NodeInfo:
    base: dict[str, Any] = {
        "ref": "web#7",
        "id": "01JB0000000000000000000000",
        "number": 7,
        "project": "web",
        "title": "Fix the login page",
        "body": "",
        "kind": "task",
        "status": skift.Status.OPEN,
        "priority": skift.Priority.P2,
        "parent": None,
        "labels": (),
        "assignee_kind": None,
        "assignee": None,
        "context_id": "",
        "created_at": datetime(2026, 12, 4, 10, 0, tzinfo=UTC),
        "blocked": False,
        "held": False,
        "claimed": False,
        "ready": True,
    }
    return skift.NodeInfo(**{**base, **kw})


@settings(max_examples=300, deadline=None)
@given(
    number=st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1),
    title=st.text(max_size=300),
    labels=st.lists(st.text(max_size=20), max_size=4).map(tuple),
    parent=st.none() | st.text(max_size=5),
    created_at=st.datetimes(
        min_value=datetime(1, 1, 2),
        max_value=datetime(9999, 12, 30),
        timezones=st.sampled_from([UTC, timezone(timedelta(hours=-7, minutes=-30))]),
    ),
    status=st.sampled_from(list(skift.Status)),
    priority=st.sampled_from(list(skift.Priority)),
    assignee_kind=st.none() | st.sampled_from(list(skift.AssigneeKind)),
    flags=st.lists(st.booleans(), min_size=5, max_size=5),
)
def test_a_node_encodes_to_the_converters_bytes(
    number: int,
    title: str,
    labels: tuple[str, ...],
    parent: str | None,
    created_at: datetime,
    status: skift.Status,
    priority: skift.Priority,
    assignee_kind: skift.AssigneeKind | None,
    flags: list[bool],
) -> None:
    node = _node(
        number=number,
        title=title,
        labels=labels,
        parent=parent,
        created_at=created_at,
        status=status,
        priority=priority,
        assignee_kind=assignee_kind,
        blocked=flags[0],
        held=flags[1],
        claimed=flags[2],
        ready=flags[3],
        human_written=flags[4],
    )
    assert wire_encoder(skift.NodeInfo, v1.Node)(node) == bytes(to_pb(v1.Node, node))


def test_a_ready_page_is_the_same_response() -> None:
    nodes = [_node(number=i, title="t" * i, result="done" if i % 3 else None) for i in range(200)]
    old = v1.ReadyResponse(nodes=[to_pb(v1.Node, n) for n in nodes], next_page_token="x")
    new = v1.ReadyResponse(nodes=encoded(v1.Node, nodes), next_page_token="x")
    assert bytes(new) == bytes(old)


def test_a_word_the_wire_lacks_is_refused_as_the_converter_refuses_it() -> None:
    bad = attrs.evolve(_node(), status="vanished")  # pyright: ignore[reportArgumentType]
    with pytest.raises(skift.Invalid, match="'vanished' is not a NodeStatus"):
        to_pb(v1.Node, bad)
    with pytest.raises(skift.Invalid, match="'vanished' is not a NodeStatus"):
        wire_encoder(skift.NodeInfo, v1.Node)(bad)


# ------------------------------------------------------------------ reading


def _old(message: type[Any], view: type[Any], data: bytes) -> Any:
    return decoder(message, view)(message.FromString(data))


def _outcome(read: Any, *args: Any) -> Any:
    try:
        return read(*args)
    except Exception as exc:  # the same refusal, or the same value
        return type(exc)


@pytest.mark.parametrize(
    ("view", "message"), PAIRS, ids=[f"{v.__name__}-{m.__name__}" for v, m in PAIRS]
)
def test_every_view_reads_as_the_converter_decodes(view: type[Any], message: type[Any]) -> None:
    enc = encoder(view, message)
    reader = wire_decoder(message, view)

    @EVERY_VIEW
    @given(views(view, message))
    def same(value: Any) -> None:
        data = bytes(enc(value))
        old = _old(message, view, data)
        assert read_view(message, view, data) == old
        if reader is not None:  # what an encoder sends is read without the general path
            assert reader(data) == old

    same()


def test_a_ready_page_reads_without_the_general_path() -> None:
    nodes = [_node(number=i, title="t" * i, result="done" if i % 3 else None) for i in range(200)]
    data = bytes(v1.ReadyResponse(nodes=encoded(v1.Node, nodes), next_page_token="x", held_count=2))
    reader = wire_decoder(v1.ReadyResponse, skift.ReadyPage)
    assert reader is not None
    page = reader(data)
    assert page == _old(v1.ReadyResponse, skift.ReadyPage, data)
    assert list(page.nodes) == nodes
    assert page.next_page == "x"


_NODE = bytes(
    v1.ReadyResponse(
        nodes=encoded(
            v1.Node,
            [_node(parent="01JB", labels=("a", "b"), result="r" * 130), _node(number=300)],
        ),
        held_count=5,
        held_count_exact=True,
        next_page_token="tok",
    )
)


@settings(max_examples=600, deadline=None)
@given(EDITS)
def test_mutated_bytes_read_as_the_general_path_reads_them(
    edits: list[tuple[str, int, bytes]],
) -> None:
    raw = mutate(_NODE, edits)
    old = _outcome(_old, v1.ReadyResponse, skift.ReadyPage, raw)
    assert _outcome(read_view, v1.ReadyResponse, skift.ReadyPage, raw) == old


def test_fields_out_of_order_or_unknown_are_read_by_the_general_path() -> None:
    node = _node(parent="p", labels=("x",))
    data = bytes(to_pb(v1.Node, node))
    swapped = data[len(data) // 2 :] + data[: len(data) // 2]
    unknown = data + b"\xf8\x07\x01"  # field 127, a varint
    for raw in (swapped, unknown, data + data):
        assert _outcome(read_view, v1.Node, skift.NodeInfo, raw) == _outcome(
            _old, v1.Node, skift.NodeInfo, raw
        )


def _wrapped_answers() -> list[tuple[str, type[Any], str, type[Any], type[Any]]]:
    """The operations whose response is one field holding the view the method returns
    (GetNode's node): written straight from the view by their handler."""
    import typing

    from skift_server._simple import wrapped_view

    out: list[tuple[str, type[Any], str, type[Any], type[Any]]] = []
    for op in skift.OPERATIONS:
        if op.rpc is None or not hasattr(v1, f"{op.rpc}Response"):
            continue
        returns = typing.get_type_hints(getattr(skift.LocalSkift, op.method)).get("return")
        response = getattr(v1, f"{op.rpc}Response")
        got = wrapped_view(returns, response)
        if got is not None:
            out.append((op.rpc, response, *got))
    return out


WRAPPED = _wrapped_answers()


def test_get_node_is_written_straight() -> None:
    assert "GetNode" in [rpc for rpc, *_ in WRAPPED]


@pytest.mark.parametrize(
    ("rpc", "response", "name", "view", "message"), WRAPPED, ids=[w[0] for w in WRAPPED]
)
def test_a_wrapped_view_is_the_responses_bytes(
    rpc: str, response: type[Any], name: str, view: type[Any], message: type[Any]
) -> None:
    from skift_server._simple import _wrapped  # pyright: ignore[reportPrivateUsage]

    enc = encoder(view, message)
    write = _wrapped(response, name, view, message)

    @EVERY_VIEW
    @given(views(view, message))
    def same(value: Any) -> None:
        assert write(value).data == bytes(response(**{name: enc(value)}))

    same()


@pytest.mark.parametrize("size", [0, 1, 100, 127, 128, 300, 20_000, 70_000])
def test_a_node_of_any_size_is_get_nodes_bytes(size: int) -> None:
    from skift_server._simple import _wrapped  # pyright: ignore[reportPrivateUsage]

    node = _node(body="é" * size, title="x" * (size % 200))
    old = bytes(v1.GetNodeResponse(node=to_pb(v1.Node, node)))
    assert _wrapped(v1.GetNodeResponse, "node", skift.NodeInfo, v1.Node)(node).data == old


@pytest.mark.parametrize(
    ("rpc", "response", "name", "view", "message"), WRAPPED, ids=[w[0] for w in WRAPPED]
)
def test_a_wrapped_view_reads_as_the_client_read_it(
    rpc: str, response: type[Any], name: str, view: type[Any], message: type[Any]
) -> None:
    enc = encoder(view, message)

    @EVERY_VIEW
    @given(views(view, message))
    def same(value: Any) -> None:
        data = bytes(response(**{name: enc(value)}))
        old = decoder(message, view)(getattr(response.FromString(data), name))
        assert read_field_view(response, name, view, data) == old

    same()


_GOT = bytes(
    v1.GetNodeResponse(node=to_pb(v1.Node, _node(parent="p", labels=("a",), body="b" * 140)))
)


@settings(max_examples=600, deadline=None)
@given(EDITS)
def test_a_mutated_get_node_reads_as_the_general_path_reads_it(
    edits: list[tuple[str, int, bytes]],
) -> None:
    raw = mutate(_GOT, edits)

    def old(message: type[Any], view: type[Any], data: bytes) -> Any:
        return decoder(v1.Node, view)(message.FromString(data).node)

    def new(message: type[Any], view: type[Any], data: bytes) -> Any:
        return read_field_view(message, "node", view, data)

    assert _outcome(new, v1.GetNodeResponse, skift.NodeInfo, raw) == _outcome(
        old, v1.GetNodeResponse, skift.NodeInfo, raw
    )


@pytest.mark.parametrize("seconds", [-1, 0, 1, (1 << 28) - 1, 1 << 28, (1 << 35) - 1, 1 << 35])
@pytest.mark.parametrize("us", [0, 1, 268_435, 268_436, 999_999])
def test_a_timestamp_at_its_varints_edges_is_the_converters_bytes(seconds: int, us: int) -> None:
    at = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=seconds, microseconds=us)
    node = _node(created_at=at)
    data = wire_encoder(skift.NodeInfo, v1.Node)(node)
    assert data == bytes(to_pb(v1.Node, node))
    assert read_view(v1.Node, skift.NodeInfo, data) == node
