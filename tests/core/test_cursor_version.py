"""An event cursor carries the version of its position format (issue 33): a cursor of a
format this server does not read (one a server on Citus, say, would mint) is refused
naming the format, never misread as a position here; a v1 cursor reads as before.
docs/operations.md ("The change stream past one cluster") says what changes when."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

import skift
from skift._seal import CursorSeal, new_key
from skift._store import EventPosition
from skift._stream import VERSION, decode, encode


def test_a_v1_cursor_reads_back() -> None:
    seal = CursorSeal(new_key(), uuid.uuid4())
    pos = EventPosition(seq=123456789, id=uuid.uuid4())
    at = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
    text = encode(pos, at, seal)
    assert text.startswith("v2.")  # the seal's version; the position's is inside
    assert decode(text, seal) == (pos, at)
    assert VERSION == "v1"


@pytest.mark.parametrize("plain", ["v2.42.shard7.1700000000000", "v10.anything"])
def test_a_cursor_of_another_format_is_refused_naming_it(plain: str) -> None:
    seal = CursorSeal(new_key(), uuid.uuid4())
    with pytest.raises(skift.Invalid, match=r"position format v\d+, which this server does not"):
        decode(seal.seal(plain), seal)


def test_a_malformed_v1_cursor_is_still_just_not_a_cursor() -> None:
    seal = CursorSeal(new_key(), uuid.uuid4())
    with pytest.raises(skift.Invalid, match="is not a skift event cursor"):
        decode(seal.seal("v1.x.y.z"), seal)


def test_a_seal_is_made_once_per_key_and_organization() -> None:
    """Every read of the change stream seals cursors: its organization's seal is made once
    (its MAC key derived, its cipher set up), and one organization's never opens another's
    cursors."""
    from skift._seal import seal_for

    key, org, other = new_key(), uuid.uuid4(), uuid.uuid4()
    assert seal_for(key, org) is seal_for(key, org)
    assert seal_for(key, other) is not seal_for(key, org)
    pos = EventPosition(seq=7, id=uuid.uuid4())
    at = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
    text = encode(pos, at, seal_for(key, org))
    assert decode(text, CursorSeal(key, org)) == (pos, at)
    with pytest.raises(skift.Invalid):
        decode(text, seal_for(key, other))
