"""One intent of a request, in the shape the policy reads (``policy/default.rego``).

The engine and the content modules build the intents they authorize with this
one function, so every intent carries the same keys.
"""

from __future__ import annotations

from typing import Any


def intent(action: str, **parts: Any) -> dict[str, Any]:
    """An intent of ``action``; ``parts`` fill or add keys (node, parent, from, to…)."""
    out: dict[str, Any] = {
        "action": action,
        "index": None,
        "node": None,
        "parent": None,
        "from": None,
        "to": None,
        "changes": [],
        "cascade": False,
    }
    out.update(parts)
    return out
