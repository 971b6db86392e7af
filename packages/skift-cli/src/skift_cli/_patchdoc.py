"""Patch documents (YAML or JSON): read, and checked with skift's own parser before sending.

The operations are parsed by :func:`skift.parse_ops`, the same parser the
server uses, so an error names the operation index and the field exactly as
the server would, without a round trip.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import yaml

import skift

TOP_LEVEL = ("project", "request_id", "lease", "ops")


@attrs.frozen
class PatchDocument:
    project: str | None
    request_id: str | None
    lease: str | None
    ops: list[skift.Op]


def load(text: str, source: str) -> PatchDocument:
    """Parse and check a patch document; :class:`skift.Invalid` names what is wrong."""
    try:
        doc: object = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        where = ""
        mark = getattr(exc, "problem_mark", None)
        if mark is not None:
            where = f" at line {mark.line + 1}, column {mark.column + 1}"
        problem = getattr(exc, "problem", None) or str(exc)
        raise skift.Invalid(
            f"{source} is not valid YAML or JSON{where}: {problem}",
            next="Fix the document; see 'Patch documents' in docs/cli.md.",
        ) from None
    if isinstance(doc, list):
        bare: dict[str, object] = {"ops": doc}  # a bare list of operations
        doc = bare
    if not isinstance(doc, Mapping):
        raise skift.Invalid(
            f"{source} is not a patch document (expected a mapping with 'ops')",
            next="Write project:, ops: [...] (and optionally request_id:, lease:).",
        )
    fields: dict[str, Any] = dict(doc)  # pyright: ignore[reportUnknownArgumentType]
    extra = sorted(str(k) for k in fields if k not in TOP_LEVEL)
    if extra:
        raise skift.Invalid(
            f"{source}: unknown top-level field {', '.join(extra)}",
            next=f"A patch document has {', '.join(TOP_LEVEL)}.",
            field=extra[0],
        )
    if "ops" not in fields:
        raise skift.Invalid(
            f"{source} has no 'ops'", next="Give the operations as a list under 'ops'.", field="ops"
        )
    for key in ("project", "request_id", "lease"):
        value = fields.get(key)
        if value is not None and not isinstance(value, str | int):
            raise skift.Invalid(
                f"{source}: {key} must be a string", next=f"Quote the {key}.", field=key
            )
    ops = skift.parse_ops(fields["ops"])

    def text_of(key: str) -> str | None:
        value = fields.get(key)
        return None if value is None else str(value)

    return PatchDocument(
        project=text_of("project"),
        request_id=text_of("request_id"),
        lease=text_of("lease"),
        ops=ops,
    )
