"""Keyset pages: where a list goes on after an item, by the list's own sort key.

A paged list (its ``page_key`` in ``_operations``) is read a page at a time
after a position: the sort key of the last item sent and a unique tiebreaker
(AIP-158). The next page reads only the rows after that position, wherever
the list has changed meanwhile, so an item that exists throughout the walk is
sent once: never again, never skipped. A position is not an offset: items
added or removed before it do not move it.

A position travels as text: the list's name and the key's parts as compact
JSON (``["projects",41,1733230000000000,"01J..."]``). It carries nothing a
caller must be trusted with: a forged one only starts the caller's own list
elsewhere (every page reads with the caller's own filter and read rights).
A position of another list, or text that is no position, is
:class:`~skift.Invalid` naming ``page_token``; so is a position of the same list read with
other arguments (another node's comments, other projects' leases: :func:`scoped`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar, cast
from uuid import UUID

from ._errors import Invalid
from ._refs import parse_ulid, ulid_str

T = TypeVar("T")

Part = int | float | str | datetime | UUID
"""What a sort key is made of."""

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class Page(list[T]):
    """One page of a list: its items in the list's order (it is a list of them), and the
    position after each, to go on from (``next_page`` after the last).

    ``next_page`` is None when the list has no more items after this page. A caller
    that sends fewer items than the page holds (a transport cutting by bytes) goes on
    from :meth:`after` of the last item it sent.
    """

    __slots__ = ("ends", "more")

    def __init__(self, items: Iterable[T] = (), *, ends: Sequence[str] = (), more: bool = False):
        super().__init__(items)
        self.ends: tuple[str, ...] = tuple(ends)
        """The position after each item."""
        self.more = more
        """Whether the list goes on after the last item."""

    @property
    def next_page(self) -> str | None:
        return self.ends[-1] if self.more and self.ends else None

    def after(self, count: int) -> str | None:
        """Where the list goes on once the first ``count`` items were sent (None: at its end)."""
        if count >= len(self):
            return self.next_page
        return self.ends[count - 1] if count > 0 else None


def position(name: str, *parts: Part) -> str:
    """The position text of list ``name`` after an item whose sort key is ``parts``."""
    return json.dumps([name, *(_part(p) for p in parts)], separators=(",", ":"))


def scoped(name: str, *scope: object) -> str:
    """The name of list ``name`` read with the arguments ``scope`` (a node's comments, the
    leases of some projects): a position made with other arguments is refused, naming
    ``page_token``, rather than read as a place in a different list."""
    if not scope:
        return name
    import hashlib  # not at import: a client's start does without it

    return f"{name}/{hashlib.sha256(repr(scope).encode()).hexdigest()[:12]}"


def read_position(name: str, text: str | None, kinds: Sequence[type]) -> tuple[Any, ...] | None:
    """The sort key a position of list ``name`` carries, its parts of ``kinds`` (None for
    none: the first page); :class:`Invalid` naming ``page_token`` for anything else."""
    got = read_rows(name, text, kinds, ())
    return None if got is None else got[0]


def read_rows(
    name: str, text: str | None, head: Sequence[type], row: Sequence[type]
) -> tuple[tuple[Any, ...], list[tuple[Any, ...]]] | None:
    """A position of list ``name`` made of ``head``'s parts then any number of rows of
    ``row``'s parts (a merge of several lists: the position in each); None for none (the
    first page); :class:`Invalid` naming ``page_token`` for anything else."""
    if not text:
        return None
    try:
        doc: Any = json.loads(text)
        if not isinstance(doc, list) or not doc or doc[0] != name:
            made: object = cast(list[Any], doc)[0] if isinstance(doc, list) and doc else None
            if isinstance(made, str) and made.split("/")[0] == name.split("/")[0]:
                raise bad_position(text, "was made for this list with other arguments")
            raise ValueError("not a position of this list")
        raw = cast(list[Any], doc[1:])
        rest = len(raw) - len(head)
        if rest < 0 or (rest % len(row) if row else rest):
            raise ValueError("not this list's key")
        kinds: list[type] = [*head, *(list(row) * (rest // len(row) if row else 0))]
        parts = [_parse(kind, value) for kind, value in zip(kinds, raw, strict=True)]
        lead, tail = tuple(parts[: len(head)]), parts[len(head) :]
        return lead, [tuple(tail[i : i + len(row)]) for i in range(0, len(tail), len(row) or 1)]
    except (ValueError, TypeError, OverflowError):
        raise bad_position(text) from None


def bad_position(text: str, why: str = "is not a page token of this list") -> Invalid:
    """The refusal of a position that is none of this list's (naming ``page_token``)."""
    shown = text if len(text) <= 80 else text[:77] + "..."
    return Invalid(
        f"{shown!r} {why}",
        next="Pass next_page exactly as the previous page of the same list returned it, "
        "with the same filter, or leave it out to start at the first page.",
        field="page_token",
    )


def cut(
    name: str, rows: Sequence[T], size: int | None, key: Callable[[T], tuple[Part, ...]]
) -> tuple[list[T], list[str], bool]:
    """The first ``size`` of ``rows`` (read as ``size + 1`` to know whether more follow;
    every one when ``size`` is None), the position after each and whether the list goes on."""
    kept = list(rows if size is None else rows[:size])
    return kept, [position(name, *key(r)) for r in kept], len(rows) > len(kept)


def read_limit(limit: int | None) -> int | None:
    """How many rows a page of ``limit`` items reads: one more, to know whether the list
    goes on (every one when ``limit`` is None)."""
    return None if limit is None else limit + 1


def _part(p: Part) -> int | float | str:
    if isinstance(p, datetime):
        delta = p - _EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    if isinstance(p, UUID):
        return ulid_str(p)
    return p


def _parse(kind: type, value: Any) -> Any:
    if kind is datetime:
        if type(value) is not int:
            raise ValueError("not a time")
        return _EPOCH + timedelta(microseconds=value)
    if kind is UUID:
        ident = parse_ulid(value) if isinstance(value, str) else None
        if ident is None:
            raise ValueError("not an id")
        return ident
    if kind is float:
        if type(value) not in (int, float) or not math.isfinite(value):
            raise ValueError("not a number")
        return float(value)
    if type(value) is not kind:
        raise ValueError(f"not a {kind.__name__}")
    if kind is int and not 0 <= value < 2**63:
        raise ValueError("out of range")  # numbers, positions: what a store holds
    return value
