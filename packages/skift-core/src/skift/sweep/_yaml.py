"""The ce-sweep state file's YAML subset: a deterministic writer and its reader.

Seed 002's grammar, byte for byte as the ce-sweep skill's reference engine
writes it: 2-space block mappings for non-empty maps at any depth, keys bare
when they match ``[A-Za-z_][A-Za-z0-9_.-]*`` and JSON-quoted otherwise, strings
always JSON double-quoted on one line (UTF-8, never ``\\u`` escapes for
non-ASCII), ``null``/``true``/``false``/numbers bare, lists and empty maps as
inline JSON flow (object keys sorted), a preferred order for known keys then
the rest sorted, LF line ends. Comments and blank lines are ignored on read.

One deliberate difference from the reference: a key is bare only when the
whole key matches (the reference's ``re.match`` with ``$`` also accepts a key
ending in a newline, which it then writes unquoted and can never read back).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, cast

_SAFE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")

DOC_ORDER = ("schema_version", "lease", "sources", "items", "last_run")
LEASE_ORDER = ("writer", "timestamp", "ttl_minutes")
ITEM_ORDER = (
    "source",
    "status",
    "sensitive",
    "title",
    "url",
    "body",
    "quote",
    "fix_ref",
    "verified_merge_sha",
    "verified_at",
)
LAST_RUN_ORDER = ("timestamp", "outcome", "writer", "counts")

_decoder = json.JSONDecoder()


def _ordered_keys(d: dict[str, Any], preferred: tuple[str, ...]) -> list[str]:
    first = [k for k in preferred if k in d]
    return first + sorted(k for k in d if k not in preferred)


def _key(key: object) -> str:
    text = str(key)
    if _SAFE_KEY.fullmatch(text):
        return text
    return json.dumps(text, ensure_ascii=False)


def _scalar(v: object) -> str:
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    return json.dumps(v, ensure_ascii=False, sort_keys=True)


def _child_order(depth: int, key: str) -> tuple[str, ...]:
    """The preferred key order of a nested mapping (the reference's structural orders)."""
    if depth == 0:
        if key == "lease":
            return LEASE_ORDER
        if key == "last_run":
            return LAST_RUN_ORDER
        return ()  # sources and items are keyed by id
    return ITEM_ORDER  # an item, a source entry, or anything nested inside one


def _mapping(d: dict[str, Any], depth: int, preferred: tuple[str, ...], out: list[str]) -> None:
    pad = "  " * depth
    for key in _ordered_keys(d, preferred):
        val: Any = d[key]
        if isinstance(val, dict) and val:
            out.append(f"{pad}{_key(key)}:")
            _mapping(cast(dict[str, Any], val), depth + 1, _child_order(depth, key), out)
        else:
            out.append(f"{pad}{_key(key)}: {_scalar(cast(object, val))}")


def emit_document(state: dict[str, Any]) -> str:
    """The state as the file's text (LF line ends, a final newline)."""
    lines: list[str] = []
    _mapping(state, 0, DOC_ORDER, lines)
    return "\n".join(lines) + "\n"


# the C string scanner json.loads uses (the pure-Python one where C is missing)
_scan = cast(
    Callable[[str, int], tuple[str, int]],
    getattr(json.decoder, "c_scanstring", None) or getattr(json.decoder, "py_scanstring"),  # noqa: B009
)


def _string(v: str) -> str:
    """A JSON string token that is the whole of ``v`` (what ``json.loads(v)`` accepts)."""
    val, end = _scan(v, 1)
    if end != len(v):
        raise ValueError("extra data after a string")
    return val


def _value(v: str) -> Any:
    """A stripped, non-empty scalar or flow value."""
    first = v[0]
    if first == '"':
        return _string(v)
    if v == "null":
        return None
    if v == "true":
        return True
    if v == "false":
        return False
    if first in "{[":
        return json.loads(v)
    if first == "-" or first.isdigit():
        try:
            if "." in v or "e" in v or "E" in v:
                return float(v)
            return int(v)
        except ValueError:
            pass
    return v  # a hand-edited bare token is kept verbatim


def parse_document(text: str) -> dict[str, Any]:
    """Parse the subset; raise ValueError (or a JSON error) on a line it cannot read.

    One pass with a stack of open mappings. As the reference reader does: a
    mapping's keys are the lines at its first line's indent; a line deeper
    than that with no ``key:`` above it, or one landing between two levels,
    is skipped; a line shallower than the first line's ends the document.
    """
    root: dict[str, Any] = {}
    stack: list[tuple[int, dict[str, Any]]] = []
    top = -1  # the indent of the innermost open mapping (stack[-1]); -1 before the first line
    target = root
    pending: tuple[dict[str, Any], str, int] | None = None  # a `key:` awaiting its block
    for raw in text.split("\n"):
        s = raw.strip()
        if not s or s[0] == "#":
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        if pending is not None:
            owner, pkey, pindent = pending
            pending = None
            if indent > pindent:
                target = cast(dict[str, Any], {})
                owner[pkey] = target
                top = indent
                stack.append((top, target))
            else:
                owner[pkey] = {}
        if indent != top:
            if top < 0:
                top = indent
                stack.append((top, root))
            elif indent < top:
                while stack and indent < stack[-1][0]:
                    stack.pop()
                if not stack:
                    break  # shallower than the document's first line: the reader stops
                top, target = stack[-1]
            if indent > top:
                continue  # an orphan deeper line
        if s[0] == '"':
            key, end = _scan(s, 1)
            if s[end : end + 1] != ":":
                raise ValueError("expected ':' after a quoted key")
            v = s[end + 1 :].strip()
        else:
            idx = s.find(":")
            if idx == -1:
                raise ValueError("expected ':' in a mapping line")
            key = s[:idx]
            v = s[idx + 1 :].strip()
        if not v:
            pending = (target, key, indent)
        elif v[0] == '"':  # the common case, inline: a JSON string that is the whole value
            val, end = _scan(v, 1)
            if end != len(v):
                raise ValueError("extra data after a string")
            target[key] = val
        else:
            target[key] = _value(v)
    if pending is not None:
        pending[0][pending[1]] = {}
    return root
