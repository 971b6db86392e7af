"""The next move of a refusal, worded for the command line (its commands and flags).

The core names the move in a structured form (``SkiftError.move``); the MCP
tools word the same move with their parameters. A move this module does not
know falls back to the core's prose (``SkiftError.next``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import skift


def _wait_for_work(m: dict[str, Any]) -> str:
    held = " ('skift list --held' shows the held ones)" if m.get("held") else ""
    return (
        "Wait for work (claim --wait 5m), widen the filters, or ask a person to release "
        f"held work{held}."
    )


_WORDING: dict[str, Callable[[dict[str, Any]], str]] = {
    "wait_for_work": _wait_for_work,
    "name_project": lambda m: "Qualify it as slug#N, or name the project with -p/--project.",
    "finish_blocker": lambda m: (
        f"Finish {m['blocker']} first, or take other work ('skift explain {m['ref']}' "
        "shows the chain)."
    ),
    "ask_unhold": lambda m: (
        f"Release the hold ('skift unhold {m['ref']} --reason …') if it is yours to "
        "release, or take other work."
    ),
    "explain": lambda m: f"'skift explain {m['ref']}' says why.",
    "claim_children": lambda m: (
        f"Its children are the work: 'skift list --parent {m['ref']}', then claim one."
    ),
    "raise_cascade_bound": lambda m: (
        f"Read what it takes ('skift list'), then give --max-nodes {m['count']} or more, "
        "or drop without --cascade."
    ),
}


def next_move(exc: skift.SkiftError) -> str:
    """The next move in the command line's vocabulary: the move's wording, else ``exc.next``."""
    move = exc.move
    if move is not None:
        word = _WORDING.get(str(move["do"]))
        if word is not None:
            try:
                return word(move)
            except KeyError:
                return exc.next
    return exc.next
