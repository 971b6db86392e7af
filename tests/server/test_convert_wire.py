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
from views_strategies import views

import skift
from skift_server._convert_types import encoder, to_pb
from skift_server._convert_wire import encoded, wire_encoder
from skift_server._proto.skift import v1


@pytest.mark.parametrize(
    ("view", "message"), PAIRS, ids=[f"{v.__name__}-{m.__name__}" for v, m in PAIRS]
)
def test_every_view_encodes_to_the_converters_bytes(view: type[Any], message: type[Any]) -> None:
    enc = encoder(view, message)
    wire = wire_encoder(view, message)

    @settings(
        max_examples=60,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
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
