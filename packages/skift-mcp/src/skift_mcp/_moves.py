"""The next move of a refusal, worded for an agent that calls these tools (their names and parameters).

The core names the move in a structured form (``SkiftError.move``); the CLI
words the same move with its flags. A move this module does not know falls
back to the core's prose (``SkiftError.next``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import skift


def _wait_for_work(m: dict[str, Any]) -> str:
    held = f" ({m['held']} matching nodes are held: ask a person)" if m.get("held") else ""
    return (
        f"call claim again with `wait_seconds` to wait for work, widen the filters, or stop{held}."
    )


_WORDING: dict[str, Callable[[dict[str, Any]], str]] = {
    "wait_for_work": _wait_for_work,
    "name_project": lambda m: (
        f"qualify the ref as slug#N, or pass `project` with {m.get('ref', 'the ref')}."
    ),
    "finish_blocker": lambda m: (
        f"{m['blocker']} must finish first: take other work (claim without `ref`), "
        f"or call explain with ref {m['ref']} to see the chain."
    ),
    "ask_unhold": lambda m: (
        f"{m['ref']} is parked by a person's hold, which an agent may not release: take "
        "other work, or comment on the node to ask a person."
    ),
    "take_other_work": lambda m: "someone holds its lease; take other work (claim without `ref`).",
    "claim_children": lambda m: (
        f"its children are the work: call list with parent {m['ref']} and claim one of them."
    ),
    "explain": lambda m: f"call explain with ref {m['ref']}.",
    "raise_cascade_bound": lambda m: (
        "read what it takes (list, explain), then give the drop_node operation "
        f"cascade {{max_nodes: {m['count']}}} or more, or drop without cascade."
    ),
    "await_gate": lambda m: (
        "you gated this node: it is ready again when the person completes the gate (its "
        "result is then among the claim's inputs); claim other work meanwhile."
    ),
    "stop_attempt": lambda m: (
        "stop work on this attempt; call claim with the ref again if it is still ready."
    ),
    "nothing": lambda m: "nothing to do.",
}


def next_move(exc: skift.SkiftError) -> str:
    """The next move in an agent's vocabulary: the structured move's wording, else ``exc.next``."""
    move = exc.move
    if move is not None:
        word = _WORDING.get(str(move["do"]))
        if word is not None:
            try:
                text: str = word(move)
            except KeyError:
                return exc.next
            return text[:1].upper() + text[1:]
    return exc.next
