"""The converter between the views and the skift.v1 messages: every view an operation of
``skift.OPERATIONS`` returns goes onto the wire and comes back equal, through the bytes.

The views are drawn from their attrs types (``views_strategies``), so a field added to a
view or a message without its counterpart (or a registered special case) fails here, as
does a conversion that loses or changes a value.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from datetime import UTC, datetime
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from views_strategies import views

import skift
from skift_server._convert_types import decoder, encoder
from skift_server._proto.skift import v1


def _views_of(t: Any) -> list[type[Any]]:
    """The attrs classes a return annotation names (through lists, tuples and ``| None``)."""
    if attrs.has(t):
        return [t]
    return [v for a in typing.get_args(t) for v in _views_of(a)]


def _pairs() -> list[tuple[type[Any], type[Any]]]:
    """(view, message) for every view an RPC's operation returns: the response's one message
    field when it wraps the view, else the response itself (its fields are the view's)."""
    out: dict[tuple[type[Any], type[Any]], None] = {}
    for op in skift.OPERATIONS:
        if op.rpc is None or op.stream is not skift.RpcStream.UNARY:
            continue
        hints = typing.get_type_hints(getattr(skift.LocalSkift, op.method))
        response = getattr(v1, op.rpc + "Response")
        fields = {
            f.name: response._betterproto.cls_by_field[f.name]  # pyright: ignore[reportAttributeAccessIssue]
            for f in dataclasses.fields(response)
            if f.name != "next_page_token"
        }
        for view in _views_of(hints["return"]):
            (name, msg), *more = fields.items()
            wraps = not more and name not in attrs.fields_dict(view)
            if wraps and inspect.isclass(msg) and msg.__module__ == v1.__name__:
                out[view, msg] = None
            else:
                out[view, response] = None
    return list(out)


PAIRS = _pairs()


def test_the_table_names_the_views() -> None:
    names = {view.__name__ for view, _ in PAIRS}
    # a sample of what the operations return, so a broken walk of the table cannot pass empty
    assert {"NodeInfo", "ProjectInfo", "Claim", "ReadyPage", "OrgLimits", "DeliveryInfo"} <= names
    assert len(PAIRS) >= 30


@pytest.mark.parametrize(
    ("view", "message"), PAIRS, ids=[f"{v.__name__}-{m.__name__}" for v, m in PAIRS]
)
def test_every_view_round_trips_through_the_wire(view: type[Any], message: type[Any]) -> None:
    enc = encoder(view, message)
    dec = decoder(message, view)

    @settings(
        max_examples=40,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @given(views(view, message))
    def round_trip(value: Any) -> None:
        assert dec(message.parse(bytes(enc(value)))) == value

    round_trip()


def test_an_unset_message_is_the_views_defaults() -> None:
    node = decoder(v1.Node, skift.NodeInfo)(None)
    assert node.status is skift.Status.OPEN
    assert node.priority is skift.Priority.P2
    assert node.assignee_kind is None
    assert node.lease is None
    assert node.created_at.tzinfo is not None


def test_a_word_the_wire_lacks_is_refused_naming_the_enum() -> None:
    lease = skift.LeaseInfo(
        id="l", node="p#1", holder="a", expires_at=datetime.now(UTC), created_at=datetime.now(UTC)
    )
    bad = attrs.evolve(lease, release_reason="vanished")  # pyright: ignore[reportArgumentType]
    with pytest.raises(skift.Invalid, match="'vanished' is not a ReleaseReason"):
        encoder(skift.LeaseInfo, v1.Lease)(bad)


def test_a_view_field_without_a_wire_field_is_refused_when_the_pair_is_made() -> None:
    @attrs.frozen
    class Drifted:
        ref: str
        colour: str

    with pytest.raises(TypeError, match="colour has no field on the wire"):
        encoder(Drifted, v1.ResolveNodeResponse)
    with pytest.raises(TypeError, match="colour is not on the wire"):
        decoder(v1.ResolveNodeResponse, Drifted)
