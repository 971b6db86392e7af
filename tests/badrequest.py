"""BadRequest's field path, checked against the request message's descriptor (issue 30).

Every INVALID_ARGUMENT the server answers carries a ``google.rpc.BadRequest`` whose
violations name a field path into the request as the proto spells it: snake_case field
names joined by dots, a repeated field's element by its index (``ops[1].create_node.title``),
a map's entry by its key (``metadata["k"]``). :func:`problems` says what is wrong with an
answer's details for a request type; an empty list is a pass.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from google.protobuf.descriptor import Descriptor

from skift_server._proto.google.rpc import BadRequest
from skift_server._upbcodec import upb_class

_SEGMENT = re.compile(r'([a-z][a-z0-9_]*)(?:\[(\d+|"(?:[^"\\]|\\.)*")\])?')


def path_error(request_type: type[Any], path: str) -> str | None:
    """Why ``path`` is not a field path into ``request_type`` (None: it is one)."""
    if not path:
        return "the path is empty"
    desc: Descriptor | None = upb_class(request_type).DESCRIPTOR
    for i, segment in enumerate(path.split(".")):
        m = _SEGMENT.fullmatch(segment)
        if m is None:
            return f'{segment!r} is not a field name (with an optional [index] or ["key"])'
        if desc is None:
            return f"{segment!r} follows a field that is not a message"
        if desc.full_name == "google.protobuf.Struct":
            return None  # into free JSON: the Struct's own keys are the client's
        field = desc.fields_by_name.get(m.group(1))
        if field is None:
            return f"{desc.full_name} has no field {m.group(1)!r}"
        is_map = field.message_type is not None and field.message_type.GetOptions().map_entry
        repeated = field.is_repeated
        sub = m.group(2)
        if sub is not None:
            if is_map != sub.startswith('"') or not repeated:
                return f"{segment!r}: {field.name} is not indexed so"
        elif repeated and i < len(path.split(".")) - 1:
            return f"{segment!r}: {field.name} is repeated, its element needs an index"
        if is_map:
            value = field.message_type.fields_by_name["value"]
            desc = value.message_type if sub is not None else None
        else:
            desc = field.message_type
    return None


def problems(request_type: type[Any], details: Sequence[Any] | None) -> list[str]:
    """What is wrong with an INVALID_ARGUMENT answer's details for ``request_type``: no
    BadRequest, no violation, or a field path the request message does not have."""
    bad = [d for d in details or () if isinstance(d, BadRequest)]
    if len(bad) != 1:
        return [f"{len(bad)} BadRequest details (want 1)"]
    if not bad[0].field_violations:
        return ["BadRequest with no field violation"]
    out: list[str] = []
    for v in bad[0].field_violations:
        why = path_error(request_type, v.field)
        if why is not None:
            out.append(f"field {v.field!r}: {why} ({v.description})")
    return out
