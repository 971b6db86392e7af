"""The shape of an artifact: its parts, the artifact, its records and views, and their JSON form.

No rules here: what a valid artifact is, and storing one, is ``_artifacts``.
The store protocol and the views import these shapes without importing the rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

import attrs

from ._errors import Invalid
from ._lazy import frozen, on_first_use


def _meta(value: Mapping[str, Any] | None) -> dict[str, Any]:
    return dict(value or {})


@attrs.frozen(kw_only=True)
class TextPart:
    """Inline text (markdown by default)."""

    text: str
    media_type: str = "text/markdown"
    type: str = attrs.field(default="text", init=False)


@attrs.frozen(kw_only=True)
class BlobPart:
    """A blob uploaded with ``put_blob``: its digest (``sha256:<hex>``), media type and size."""

    digest: str
    media_type: str
    size: int
    type: str = attrs.field(default="blob", init=False)


@attrs.frozen(kw_only=True)
class ReferencePart:
    """A URI to something elsewhere, with the immutable identity it resolved to.

    ``digest`` is a ``sha256:`` digest of the referenced bytes; ``commit`` is
    the git commit a branch, tag or pull request resolved to.
    """

    uri: str
    digest: str | None = None
    media_type: str | None = None
    commit: str | None = None
    type: str = attrs.field(default="reference", init=False)


Part = TextPart | BlobPart | ReferencePart

PART_TYPES: dict[str, type[Part]] = {"text": TextPart, "blob": BlobPart, "reference": ReferencePart}


@frozen(kw_only=True)
class Artifact:
    """What a caller attaches: a name, a description, parts and metadata (JSON values)."""

    name: str
    description: str = ""
    parts: tuple[Part, ...] = attrs.field(default=(), converter=tuple)
    metadata: dict[str, Any] = attrs.field(factory=dict[str, Any], converter=_meta)


@frozen(kw_only=True)
class BlobInfo:
    """A stored blob: its digest, the media type it was uploaded as, and its size in bytes."""

    digest: str
    media_type: str
    size: int


@frozen(kw_only=True)
class ArtifactInfo:
    """An attached artifact as a caller sees it, attributed to the principal that attached it."""

    id: str
    node: str
    name: str
    description: str
    parts: tuple[Part, ...]
    metadata: dict[str, Any]
    author: str
    author_kind: str
    created_at: datetime


@frozen(kw_only=True)
class ArtifactRecord:
    """An artifact as a store keeps it (parts and metadata in their JSON form)."""

    id: UUID
    org_id: UUID
    node_id: UUID
    name: str
    description: str
    parts: tuple[Part, ...]
    metadata: dict[str, Any]
    author_id: UUID
    created_at: datetime


@frozen(kw_only=True)
class BlobRecord:
    """That an organization holds a blob: its digest, size and media type (bytes live elsewhere)."""

    digest: str
    size: int
    media_type: str
    created_by: UUID
    created_at: datetime
    #: last uploaded again or named by an artifact being attached; a sweep's grace runs
    #: from it (None: from ``created_at``)
    touched_at: datetime | None = None


def part_to_dict(part: Part) -> dict[str, Any]:
    """A part's JSON form, ``type`` first; unset optional fields are left out."""
    out: dict[str, Any] = {"type": part.type}
    for f in attrs.fields(type(part)):
        if f.name == "type":
            continue
        value = getattr(part, f.name)
        if value is not None:
            out[f.name] = value
    return out


def part_from_dict(doc: Mapping[str, Any]) -> Part:
    fields = dict(doc)
    kind = fields.pop("type", None)
    cls = PART_TYPES.get(str(kind))
    if cls is None:
        raise Invalid(
            f"part type {kind!r} is not text, blob or reference",
            next="Give each part a type: text, blob or reference.",
            field="parts",
        )
    return cls(**fields)


def artifact_to_dict(artifact: Artifact) -> dict[str, Any]:
    return {
        "name": artifact.name,
        "description": artifact.description,
        "parts": [part_to_dict(p) for p in artifact.parts],
        "metadata": dict(artifact.metadata),
    }


if not TYPE_CHECKING:
    __getattr__ = on_first_use(globals())
