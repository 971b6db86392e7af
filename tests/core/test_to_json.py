"""``skift.to_json`` (``skift._json``, no cattrs) writes what the cattrs converter writes.

Every attrs class skift exports is built from its type hints (each optional field once
set, once None; every ``Any`` a mix of JSON values, datetimes and tuples) and written
both ways: the same values of the same Python types, and the same JSON text.
"""

from __future__ import annotations

import datetime as dt
import enum
import json
import types
import typing
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any, cast
from uuid import UUID

import attrs
import pytest

import skift
from skift._convert import json_converter
from skift._pages import Page

NOW = dt.datetime(2026, 12, 3, 18, 30, 5, 123456, tzinfo=dt.UTC)
ANY: Any = {"n": 1, "when": NOW, "seq": (1, "two", None), "nested": {"ok": True, "f": 0.5}}


def _classes() -> list[type[Any]]:
    out: list[type[Any]] = []
    for name in skift.__all__:
        value = getattr(skift, name)
        if isinstance(value, type) and attrs.has(value):
            out.append(value)
    return out


class _Cannot(Exception):
    pass


def sample(t: Any, *, none: bool, depth: int = 0) -> Any:
    if depth > 12:
        raise _Cannot(t)
    origin = typing.get_origin(t)
    args = typing.get_args(t)
    if t is Any or t is object:
        return ANY
    if origin in (typing.Union, types.UnionType):
        if none and type(None) in args:
            return None
        members = [a for a in args if a is not type(None)]
        return sample(members[depth % len(members)], none=none, depth=depth + 1)
    if origin is typing.Literal:
        return args[0]
    if origin is tuple or origin is Sequence:
        if origin is Sequence:
            args = (args[0], Ellipsis)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(sample(args[0], none=none, depth=depth + 1) for _ in range(2))
        return tuple(sample(a, none=none, depth=depth + 1) for a in args)
    if origin in (list, set, frozenset):
        make: Any = origin
        return make([sample(args[0], none=none, depth=depth + 1)])
    if origin in (dict, Mapping) or t in (dict, Mapping):
        if not args:
            return dict(ANY)
        return {
            sample(args[0], none=none, depth=depth + 1): sample(args[1], none=none, depth=depth + 1)
        }
    simple: dict[Any, Any] = {
        str: "text",
        int: 7,
        float: 1.5,
        bool: True,
        dt.datetime: NOW,
        dt.date: NOW.date(),
        dt.timedelta: dt.timedelta(seconds=90),
        UUID: UUID("0192a3b4-c5d6-7e8f-9012-3456789abcde"),
        Decimal: Decimal("1.50"),
        bytes: b"\x00blob",
    }
    if t in simple:
        return simple[t]
    if isinstance(t, type) and issubclass(t, enum.Enum):
        return next(iter(t))
    if isinstance(t, type) and attrs.has(t):
        return build(t, none=none, depth=depth + 1)
    raise _Cannot(t)


def build(cls: type[Any], *, none: bool, depth: int = 0) -> Any:
    hints = typing.get_type_hints(cls)
    kwargs = {
        f.alias: sample(hints[f.name], none=none, depth=depth) for f in attrs.fields(cls) if f.init
    }
    return cls(**kwargs)


def same(a: Any, b: Any, at: str = "") -> None:
    """Equal values of the same Python types, all the way down."""
    assert type(a) is type(b), f"{at}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, dict):
        da = cast("dict[Any, Any]", a)
        assert list(da) == list(b), at
        for k in da:
            same(da[k], b[k], f"{at}.{k}")
    elif isinstance(a, list):
        la = cast("list[Any]", a)
        assert len(la) == len(b), at
        for i, (x, y) in enumerate(zip(la, b, strict=True)):
            same(x, y, f"{at}[{i}]")
    else:
        assert a == b, at


def _values() -> list[Any]:
    out: list[Any] = []
    for cls in _classes():
        for none in (False, True):
            try:
                out.append(build(cls, none=none))
            except (_Cannot, skift.SkiftError, TypeError, ValueError):
                continue
    return out


VALUES = _values()


def test_every_view_is_built() -> None:
    built = {type(v).__name__ for v in VALUES}
    views = {
        "NodeInfo",
        "ReadyPage",
        "Claim",
        "LeaseInfo",
        "Explanation",
        "CommentInfo",
        "ProjectInfo",
        "PatchResult",
        "EventInfo",
        "ArtifactInfo",
        "SearchHit",
        "WhoAmI",
        "PrincipalInfo",
    }
    assert views <= built, views - built
    assert len(built) >= 40, sorted(built)


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_to_json_writes_what_cattrs_writes(value: Any) -> None:
    mine = skift.to_json(value)
    theirs = json_converter.unstructure(value)
    same(mine, theirs, type(value).__name__)
    assert json.dumps(mine, default=str) == json.dumps(theirs, default=str)


def test_containers_and_pages() -> None:
    views = VALUES[:6]
    for value in (
        views,
        tuple(views),
        {"a": views, "b": NOW},
        Page(views, ends=["x"] * len(views), more=True),
        [NOW, NOW.date(), Decimal("2"), UUID(int=5), b"", skift.Status.OPEN, None],
        frozenset({1}),
    ):
        same(skift.to_json(value), json_converter.unstructure(value))


def test_a_ready_page_leaves_its_ends_out() -> None:
    (page,) = [v for v in VALUES if isinstance(v, skift.ReadyPage)][:1]
    page = attrs.evolve(page, ends=("e1",) * len(page.nodes))
    assert "ends" not in skift.to_json(page)
    same(skift.to_json(page), json_converter.unstructure(page))


def test_a_reason_is_its_kind_beside_its_details() -> None:
    r = skift.Reason(kind="blocked_by", detail={"ref": "p#1", "at": NOW})
    same(skift.to_json(r), json_converter.unstructure(r))
    assert skift.to_json(r) == {"kind": "blocked_by", "ref": "p#1", "at": NOW}
