"""The one exception tree of skift.

Every failure a caller can act on is a :class:`SkiftError`. Each class maps to
one gRPC status, one CLI exit code and one MCP tool error, and every instance
carries ``next``: the move a caller (often an agent) should make instead.

::

    SkiftError
    ├── NotFound          a reference resolves to nothing the caller may see
    ├── Invalid           malformed input: a bad field, a bad reference, a bad document
    ├── Refused           a rule or the policy says no (claiming work that is not ready too)
    ├── Conflict          the state moved under the caller
    │   ├── FencingError        a lease id that is not the node's current, live lease
    │   ├── CycleError          the write would make the wait relation cyclic
    │   ├── IdempotencyMismatch a request id reused with different content
    │   └── CursorExpired       a change-stream cursor older than the replay window
    ├── LimitExceeded     a structural ceiling (operations per patch, sizes, page size)
    ├── NothingReady      ClaimNext found no matching ready work (or its wait ran out)
    ├── Unavailable       the store or server cannot be reached right now; retry
    └── Unauthenticated   the caller's identity is missing, unknown or revoked
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

MESSAGE_CHARS = 1000
"""The most of a message (or a next move, or a detail) an error carries: a message
that repeats its input is shortened in the middle, so a 30,000-character
reference cannot make an error too big for the HTTP/2 headers that carry it."""


def _short(text: str) -> str:
    if len(text) <= MESSAGE_CHARS:
        return text
    half = (MESSAGE_CHARS - 40) // 2
    return f"{text[:half]} …({len(text) - 2 * half} characters left out)… {text[-half:]}"


class SkiftError(Exception):
    """Something went wrong in skift.

    ``next`` words the next move in prose; ``move`` (when the rule gives one)
    is the same move in a structured form, ``{"do": NAME, ...arguments}``,
    which each surface words in its own vocabulary (the CLI names its flags,
    the MCP tools their parameters). ``move`` travels in ``details``, so it
    crosses the wire and appears in the JSON form.
    """

    code: ClassVar[str] = "error"

    def __init__(
        self,
        message: str | None = None,
        *,
        next: str = "",
        move: Mapping[str, Any] | None = None,
        **details: Any,
    ) -> None:
        self.message = _short(message or (type(self).__doc__ or "").strip())
        self.next = _short(next)
        if move is not None:
            details["move"] = {k: v for k, v in move.items() if v is not None}
        self.details: dict[str, Any] = {
            k: _short(v) if isinstance(v, str) else v for k, v in details.items()
        }
        super().__init__(self.message)

    @property
    def move(self) -> dict[str, Any] | None:
        """The next move in a structured form (``{"do": NAME, ...}``), when the rule gives one."""
        move = self.details.get("move")
        return dict(move) if isinstance(move, Mapping) and "do" in move else None  # pyright: ignore[reportUnknownArgumentType]

    def __str__(self) -> str:
        if not self.next:
            return self.message
        sep = " " if self.message.rstrip().endswith((".", "!", "?", ":")) else ". "
        return f"{self.message.rstrip()}{sep}Next: {self.next}"

    def as_dict(self) -> dict[str, Any]:
        """The JSON shape of SURFACE.md: ``{"code", "message", "next", ...details}``."""
        out: dict[str, Any] = {"code": self.code, "message": self.message, "next": self.next}
        out.update(self.details)
        return out


class NotFound(SkiftError):
    """No such thing, or nothing the caller may see."""

    code = "not_found"


class Invalid(SkiftError):
    """The input is malformed."""

    code = "invalid"


class Refused(SkiftError):
    """A rule refuses this."""

    code = "refused"


class Conflict(SkiftError):
    """The state changed under the request."""

    code = "conflict"


class FencingError(Conflict):
    """The lease is not the node's current live lease."""


class CycleError(Conflict):
    """The write would make the wait relation cyclic."""


class IdempotencyMismatch(Conflict):
    """The request id was already used for different content."""


class CursorExpired(Conflict):
    """The change-stream cursor is older than the replay window.

    ``details["oldest_cursor"]`` is the oldest cursor still good: resume from
    it after resynchronizing, because what lies between was not delivered.
    """


class LimitExceeded(SkiftError):
    """A structural limit was exceeded."""

    code = "limit"


class NothingReady(SkiftError):
    """No ready work matches."""

    code = "nothing_ready"


class Unavailable(SkiftError):
    """The store is unavailable; retry with the same request id."""

    code = "unavailable"


class Unauthenticated(SkiftError):
    """The caller's identity is missing, unknown or revoked."""

    code = "unauthenticated"
