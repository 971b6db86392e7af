"""Input hygiene: what every value a caller hands the API must satisfy before any work.

Checked once, at the door of every :class:`~skift.LocalSkift` call (so on every
surface: the library, the gRPC server that calls it, the CLI and MCP over
either), before anything is read or written:

- text holds no NUL character and is valid Unicode (no lone surrogates, which
  is how Python carries undecodable bytes): PostgreSQL cannot store either, and
  a caller deserves :class:`~skift.Invalid` naming the field, not an internal
  error;
- a ``request_id`` and a node ``kind`` have a length limit
  (``Limits.request_id_chars``, ``Limits.kind_chars``);
- nesting (operations, artifact metadata) is at most ``MAX_DEPTH`` deep.

:func:`shown` shortens a value a message repeats, so no error message grows
with its input (a long reference once made a message too big for the HTTP/2
headers that carry it).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

import attrs

from ._errors import Invalid, LimitExceeded

if TYPE_CHECKING:
    from ._limits import Limits

T = TypeVar("T")

MAX_DEPTH = 32
"""How deeply a request's values may nest (lists in maps in lists ...)."""

SHOWN_CHARS = 120
"""How much of a value an error message repeats."""


def shown(value: object, limit: int = SHOWN_CHARS) -> str:
    """``repr(value)``, shortened in the middle past ``limit`` characters."""
    text = repr(value)
    if len(text) <= limit:
        return text
    half = (limit - 5) // 2
    return f"{text[:half]}…({len(text)} chars)…{text[-half:]}"


def _bad_text(value: str) -> str | None:
    if "\x00" in value:
        return "holds a NUL character"
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "is not valid UTF-8"
    return None


def check_text(value: str, field: str, what: str = "") -> str:
    """``value`` unchanged, or :class:`~skift.Invalid` naming ``field`` (worded ``what``:
    a key of a map names the map)."""
    why = _bad_text(value)
    if why is not None:
        what = what or field
        raise Invalid(
            f"{what} {why}",
            next=f"Remove the control character or undecodable bytes from {what} and send it again.",
            field=field,
        )
    return value


def _limit(field: str, value: str, bound: int, name: str) -> None:
    if len(value) > bound:
        raise LimitExceeded(
            f"{field} is {len(value)} characters; the limit is {bound}",
            next=f"Use a shorter {field.rsplit('.', 1)[-1]}.",
            limit=name,
            bound=bound,
            field=field,
        )


def check_value(value: object, field: str, limits: Limits | None, depth: int = 0) -> None:
    """Walk one argument: every string in it clean, bounded fields bounded, nesting bounded.

    Without ``limits`` (a remote client, which does not know the server's), the
    length limits are left to the server.
    """
    if isinstance(value, str):
        check_text(value, field)
        if limits is None:
            return
        leaf = field.rsplit(".", 1)[-1]
        if leaf == "request_id":
            _limit(field, value, limits.request_id_chars, "request_id_chars")
        elif leaf == "kind":
            _limit(field, value, limits.kind_chars, "kind_chars")
        return
    if value is None or isinstance(value, int | float | bytes | bytearray | memoryview):
        return
    if depth >= MAX_DEPTH:
        raise Invalid(
            f"{field} nests more than {MAX_DEPTH} levels deep",
            next="Flatten it: skift keeps structured values shallow.",
            field=field,
        )
    if isinstance(value, Mapping):
        for k, v in cast("Mapping[object, object]", value).items():
            key = str(k)
            check_text(key, field, f"a key of {field}")
            check_value(v, f"{field}.{key}", limits, depth + 1)
    elif isinstance(value, list | tuple | set | frozenset):
        for i, v in enumerate(cast("Collection[object]", value)):
            check_value(v, f"{field}[{i}]", limits, depth + 1)
    elif attrs.has(type(value)):
        for a in attrs.fields(type(value)):
            check_value(getattr(value, a.name), f"{field}.{a.name}", limits, depth + 1)


def checked(method: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
    """Check every argument of an API method (see the module) before it runs."""
    names = list(inspect.signature(method).parameters)[1:]

    @functools.wraps(method)
    async def call(self: Any, *args: Any, **kwargs: Any) -> T:
        limits: Limits | None = getattr(getattr(self, "engine", None), "limits", None)
        for name, value in zip(names, args, strict=False):
            check_value(value, name, limits)
        for name, value in kwargs.items():
            check_value(value, name, limits)
        return await method(self, *args, **kwargs)

    return call


def check_inputs(cls: type[T]) -> type[T]:
    """Apply :func:`checked` to every public coroutine method of ``cls``.

    A remote client applies it too, so input it could not even encode (nesting
    deeper than the encoder's recursion, undecodable text) is Invalid before it
    is sent.
    """
    seen: set[str] = set()
    for klass in cls.__mro__[:-1]:  # the class and the mixins it is composed of
        for name, fn in list(vars(klass).items()):
            if name in seen or name.startswith("_"):
                continue
            seen.add(name)
            if inspect.iscoroutinefunction(fn):
                setattr(cls, name, checked(fn))
    return cls
