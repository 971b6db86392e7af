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
    "list_projects": lambda m: (
        "check the slug (ready and list name each node's project), or ask a person to create "
        "the project."
    ),
    "give_reason": lambda m: (
        "say why in `reason`, because a change nobody can explain is one nobody dares undo."
    ),
    "list_nodes": lambda m: "check the ref; call list with `projects` to see a project's nodes.",
    "pass_lease": lambda m: "pass the `lease` that claim returned.",
    "reopen": lambda m: (
        f"reopen {m['ref']} first (patch with a reopen_node operation and a `reason`)."
    ),
    "unhold": lambda m: (
        f"release the hold on {m['ref']} first (patch with an unhold_node operation and a "
        "`reason`)."
    ),
    "claim": lambda m: f"nobody holds it; change it directly, or call claim with ref {m['ref']}.",
    "show_usage": lambda m: (
        f"ask a person to raise the cap on {m['ref']}, or take other work; call usage with ref "
        f"{m['ref']} to see the spend."
    ),
}


def _sentence(text: str) -> str:
    """``text`` as a sentence: its first word capitalized, unless that word is a reference
    or a name that must keep its case (``interop-2ec9f5#14 must finish first``)."""
    first = text.split(" ", 1)[0]
    if not first.isalpha() or not first.islower():
        return text
    return text[:1].upper() + text[1:]


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
            return _sentence(text)
    return exc.next
