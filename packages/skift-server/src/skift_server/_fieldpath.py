"""BadRequest's field path: the field an error names, as a path into the request message.

skift-core names the argument at fault in its own words (``details["field"]``:
``title``, ``cursor``, ``ops[1].from``, ``filter.status``); gRPC names it as the
proto spells it, a path into the request message (``google.rpc.BadRequest``):
snake_case field names joined by dots, a repeated field's element by its index.
:func:`proto_path` words one as the other, with the request at hand:

- a name the API spells otherwise than the proto (:data:`ALIASES`: the change
  stream's ``cursor`` is the lists' ``page_token``, an edge's ``from``/``to``
  are ``from_node``/``to_node``, a comment's ``comment_id`` its request's ``id``)
  takes the proto's name;
- a field of an operation in a oneof (``ops[1].title``) goes through the member
  the request set (``ops[1].create_node.title``);
- the oneof's own name, or the document's tag that picks its member
  (``ops[0].op``: no operation set; ``artifacts[0].parts[1].type``) is the
  element itself (``ops[0]``, ``artifacts[0].parts[1]``), a oneof being no
  field of its own;
- a node RPC runs as a one-operation patch: its ``ops[0].`` prefix goes
  (``ops[0].result`` of a Complete is its ``result``); a field of a list's
  filter named alone goes under ``filter`` (``labels[0]`` of a Ready:
  ``filter.labels[0]``); a path that goes on past a scalar (``cascade.max_nodes``,
  where the request's ``cascade`` is the count) stops at it.

A name the request message does not have is left as the core gave it (a test
checks every path the server answers against the descriptors).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from typing import Any, Final, cast

import betterproto2

ALIASES: Final[dict[str, str]] = {
    "after": "page_token",
    "comment_id": "id",
    "cursor": "page_token",
    "from": "from_node",
    "from_": "from_node",
    "to": "to_node",
}
"""Names the API gives a field the proto names otherwise."""

TAGS: Final = frozenset({"op", "type"})
"""The document's tag that chooses a oneof's member (a patch operation's ``op``, a part's
``type``): the element itself is the path."""

_SEGMENT: Final = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?")


@functools.cache
def _table(cls: type[Any]) -> dict[str, Any]:
    """Field name -> betterproto2 metadata of the generated class ``cls``."""
    return {f.name: f.metadata["betterproto"] for f in dataclasses.fields(cls)}


def _sub(cls: type[Any], name: str, meta: Any) -> type[Any] | None:
    if meta.proto_type != betterproto2.TYPE_MESSAGE:
        return None
    if meta.unwrap is not None:
        return None  # a well-known type the generated code unwraps: a leaf
    info: Any = getattr(cls, "_betterproto")  # noqa: B009 (betterproto2's per-class table)
    found: type[Any] = info.cls_by_field[name]
    return found


def _member(cls: type[Any], obj: Any, name: str) -> str | None:
    """The oneof member of ``cls`` through which ``name`` is reached: the one ``obj`` set,
    or the only member whose message has ``name``."""
    table = _table(cls)
    members = [m for m, meta in table.items() if meta.group and _sub(cls, m, meta) is not None]
    if obj is not None:
        for m in members:
            if getattr(obj, m, None) is not None:
                sub = _sub(cls, m, table[m])
                if sub is not None and (name in _table(sub) or ALIASES.get(name) in _table(sub)):
                    return m
    having = [
        m
        for m in members
        if (sub := _sub(cls, m, table[m])) is not None
        and (name in _table(sub) or ALIASES.get(name) in _table(sub))
    ]
    return having[0] if len(having) == 1 else None


def _attr(obj: Any, name: str) -> Any:
    """``obj``'s field ``name`` (None without a request at hand)."""
    found: Any = getattr(obj, name, None) if obj is not None else None
    return found


def proto_path(request_type: type[Any] | None, request: Any, field: str) -> str:
    """``field`` (the core's name for the argument at fault) as a path into
    ``request_type``'s message; unchanged when it is not one."""
    if not field or request_type is None:
        return ALIASES.get(field, field)
    cls: type[Any] | None = request_type
    obj: Any = request
    out: list[str] = []
    segments = field.split(".")
    top = _table(request_type)
    if segments[0].startswith("ops[") and "ops" not in top:
        segments = segments[1:]  # a node RPC runs as a one-operation patch: its own fields
    elif segments[0] not in top and ALIASES.get(segments[0]) not in top and "filter" in top:
        segments = ["filter", *segments]  # a field of the request's filter, named alone
    for segment in segments:
        m = _SEGMENT.fullmatch(segment)
        if m is None:
            return field
        if cls is None:
            break  # into a scalar (cascade.max_nodes: the request's cascade): the deepest field
        name, sub = m.group(1), m.group(2) or ""
        table = _table(cls)
        if name not in table and ALIASES.get(name) in table:
            name = ALIASES[name]
        if name not in table:
            groups = {meta.group for meta in table.values() if meta.group}
            if (name in groups or (name in TAGS and groups)) and not sub:
                continue  # the oneof itself: its element is the path
            member = _member(cls, obj, name)
            if member is None:
                return field
            out.append(member)
            obj = _attr(obj, member)
            cls = _sub(cls, member, table[member])
            assert cls is not None
            table = _table(cls)
            name = name if name in table else ALIASES[name]
        meta = table[name]
        out.append(name + sub)
        child = _sub(cls, name, meta)
        value = _attr(obj, name)
        if sub:
            index = sub[1:-1]
            items: list[Any] = cast("list[Any]", value) if isinstance(value, list) else []
            value = items[int(index)] if index.isdigit() and int(index) < len(items) else None
        cls, obj = child, value
    return ".".join(out) if out else field
