"""Artifacts: what work produced, beside its result. Shaped after A2A.

An artifact has a name, a description, parts and metadata. A part is one of:

- :class:`TextPart`: inline text under ``Limits.inline_part_bytes``;
- :class:`BlobPart`: a skift-managed, immutable, content-addressed blob
  (uploaded first with ``put_blob``), named by its SHA-256 digest;
- :class:`ReferencePart`: a URI to something that lives elsewhere, with the
  immutable identity it resolved to. ``git`` references (``git+https://…``,
  ``git+ssh://…``, ``git://…``; the ref in the fragment: ``#branch=main``,
  ``#tag=v1``, ``#pr=12``, ``#commit=<sha>``) must carry the commit they
  resolved to unless the fragment already names one; ``oci`` references
  (``oci://registry/repo[:tag][@sha256:…]``) must carry a sha256 digest.

skift validates and stores all of this and never fetches a reference: a URI is
agent-supplied and untrusted, and whatever fetches it owns that risk.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit
from uuid import UUID

import attrs

from ._blobs import check_digest, digest_of
from ._errors import Invalid, LimitExceeded, NotFound
from ._limits import Limits
from ._pages import Page, cut, read_limit, read_position, scoped
from ._parts import (
    PART_TYPES as PART_TYPES,
)
from ._parts import (
    Artifact as Artifact,
)
from ._parts import (
    ArtifactInfo as ArtifactInfo,
)
from ._parts import (
    ArtifactRecord as ArtifactRecord,
)
from ._parts import (
    BlobInfo as BlobInfo,
)
from ._parts import (
    BlobPart as BlobPart,
)
from ._parts import (
    BlobRecord as BlobRecord,
)
from ._parts import (
    Part as Part,
)
from ._parts import (
    ReferencePart as ReferencePart,
)
from ._parts import (
    TextPart as TextPart,
)
from ._parts import (
    artifact_to_dict as artifact_to_dict,
)
from ._parts import (
    part_from_dict as part_from_dict,
)
from ._parts import (
    part_to_dict as part_to_dict,
)
from ._refs import format_ref, new_id, ulid_str

if TYPE_CHECKING:
    from ._context import Actor, Context
    from ._store import Tx

_COMMIT = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
_URI_BAD = re.compile(r"[\s\x00-\x1f\x7f]")
_URI_CHARS = 4096


# ------------------------------------------------------------------ validation


def _limit(what: str, size: int, bound: int, limit: str, unit: str = "bytes") -> None:
    if size > bound:
        raise LimitExceeded(
            f"{what} is {size} {unit}; the limit is {bound}",
            next="Upload large content with put_blob and attach a blob part, or reference it by URI.",
            limit=limit,
            bound=bound,
        )


def check_reference(part: ReferencePart) -> ReferencePart:
    """A reference part with a well-formed URI and the identity its scheme requires."""
    uri = part.uri.strip()
    _limit("a reference URI", len(uri), _URI_CHARS, "reference_uri_chars", "characters")
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    if not scheme or _URI_BAD.search(uri) or not re.match(r"^[a-z][a-z0-9+.-]*$", scheme):
        raise Invalid(
            f"{part.uri!r} is not a URI",
            next="Give an absolute URI with its scheme, e.g. git+https://github.com/acme/api.git#branch=main "
            "or oci://ghcr.io/acme/api@sha256:….",
            field="parts",
        )
    digest = check_digest(part.digest, "the reference's digest") if part.digest else None
    commit = part.commit.strip().lower() if part.commit else None
    if commit is not None and not _COMMIT.match(commit):
        raise Invalid(
            f"commit {part.commit!r} is not a full git commit id",
            next="Give the full 40 (SHA-1) or 64 (SHA-256) hex digit commit the ref resolved to.",
            field="parts",
        )
    if scheme == "git" or scheme.startswith("git+"):
        if not parts.netloc or not parts.path.strip("/"):
            raise Invalid(
                f"{part.uri!r} names no repository",
                next="Write git references as git+https://HOST/OWNER/REPO.git#branch=NAME.",
                field="parts",
            )
        ref_kind, _, ref_value = parts.fragment.partition("=")
        if parts.fragment and (
            ref_kind not in ("branch", "tag", "pr", "commit") or not ref_value.strip()
        ):
            raise Invalid(
                f"{part.uri!r}: the fragment {parts.fragment!r} is not branch=, tag=, pr= or commit=",
                next="Name the ref in the fragment: #branch=main, #tag=v1.2, #pr=12 or #commit=<sha>.",
                field="parts",
            )
        if ref_kind == "commit":
            pinned = ref_value.strip().lower()
            if not _COMMIT.match(pinned):
                raise Invalid(
                    f"{part.uri!r}: {ref_value!r} is not a full git commit id",
                    next="Give the full 40 or 64 hex digit commit id.",
                    field="parts",
                )
            if commit is not None and commit != pinned:
                raise Invalid(
                    f"{part.uri!r} pins commit {pinned}, but the part says {commit}",
                    next="Leave commit out, or make it agree with the URI.",
                    field="parts",
                )
            commit = pinned
        elif commit is None:
            what = f"{ref_kind} {ref_value}" if ref_value else "the default branch"
            raise Invalid(
                f"{part.uri!r} names {what}, which moves; a git reference records the commit it resolved to",
                next="Resolve it (git rev-parse) and give commit=<sha>, or reference #commit=<sha>.",
                field="parts",
            )
    elif scheme == "oci":
        if not parts.netloc or not parts.path.strip("/"):
            raise Invalid(
                f"{part.uri!r} names no repository",
                next="Write OCI references as oci://REGISTRY/REPO[:TAG]@sha256:<hex>.",
                field="parts",
            )
        _, at, pinned = uri.rpartition("@")
        if at and pinned.startswith("sha256:"):
            pinned_digest = check_digest(pinned, "the reference's digest")
            if digest is not None and digest != pinned_digest:
                raise Invalid(
                    f"{part.uri!r} pins {pinned_digest}, but the part says {digest}",
                    next="Leave digest out, or make it agree with the URI.",
                    field="parts",
                )
            digest = pinned_digest
        if digest is None:
            raise Invalid(
                f"{part.uri!r} names a tag, which moves; an OCI reference records its digest",
                next="Give digest=sha256:<hex> (the manifest digest), or reference REPO@sha256:<hex>.",
                field="parts",
            )
    return attrs.evolve(part, uri=uri, digest=digest, commit=commit)


def check_artifact(artifact: Artifact, limits: Limits) -> Artifact:
    """An artifact checked against the limits and the part rules (before any write)."""
    name = artifact.name.strip()
    if not name:
        raise Invalid(
            "an artifact needs a name", next="Name it, e.g. report.md or the-diff.", field="name"
        )
    _limit("the artifact's name", len(name), limits.title_chars, "title_chars", "characters")
    _limit(
        "the artifact's description",
        len(artifact.description.encode()),
        limits.body_bytes,
        "body_bytes",
    )
    _limit(
        f"artifact {name!r}",
        len(artifact.parts),
        limits.parts_per_artifact,
        "parts_per_artifact",
        "parts",
    )
    try:
        meta = json.dumps(artifact.metadata, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):
        raise Invalid(
            f"artifact {name!r}: metadata is not JSON",
            next="Metadata is a JSON object of strings, numbers, booleans, lists and objects.",
            field="metadata",
        ) from None
    _limit(
        f"artifact {name!r}'s metadata",
        len(meta.encode()),
        limits.artifact_metadata_bytes,
        "artifact_metadata_bytes",
    )
    parts: list[Part] = []
    for part in artifact.parts:
        match part:
            case TextPart():
                _limit(
                    f"a text part of artifact {name!r}",
                    len(part.text.encode()),
                    limits.inline_part_bytes,
                    "inline_part_bytes",
                )
                parts.append(part)
            case BlobPart():
                if part.size < 0:
                    raise Invalid(
                        "a blob's size cannot be negative",
                        next="Give its size in bytes.",
                        field="parts",
                    )
                if not part.media_type.strip():
                    raise Invalid(
                        "a blob part needs a media type",
                        next="Give one, e.g. text/plain.",
                        field="parts",
                    )
                parts.append(attrs.evolve(part, digest=check_digest(part.digest)))
            case ReferencePart():
                parts.append(check_reference(part))
    return Artifact(
        name=name,
        description=artifact.description,
        parts=tuple(parts),
        metadata=json.loads(meta),
    )


def blob_not_found(digest: str) -> NotFound:
    return NotFound(
        f"no blob {digest} in this organization",
        next="Upload the bytes first (put_blob), then attach a blob part with the digest it returns.",
    )


def check_blob_part(part: BlobPart, stored: BlobRecord | None) -> None:
    if stored is None:
        raise blob_not_found(part.digest)
    if stored.size != part.size:
        raise Invalid(
            f"blob {part.digest} is {stored.size} bytes, not {part.size}",
            next="Give the size put_blob returned.",
            field="parts",
        )


def parts_of(artifacts: Sequence[Artifact]) -> list[BlobPart]:
    return [p for a in artifacts for p in a.parts if isinstance(p, BlobPart)]


# ------------------------------------------------------------------ with a store


async def prepare_artifacts(
    tx: Tx, limits: Limits, node_id: UUID, artifacts: Sequence[Artifact], author: UUID
) -> list[ArtifactRecord]:
    """Records for artifacts about to be attached: checked, blob parts found, within the limits."""
    checked = [check_artifact(a, limits) for a in artifacts]
    for part in parts_of(checked):
        # touched, not only read: a blob sweep at the same time keeps it, or removed it first
        check_blob_part(part, await tx.touch_blob(part.digest))
    count = await tx.count_artifacts(node_id) + len(checked)
    _limit(
        "the node's artifacts", count, limits.artifacts_per_node, "artifacts_per_node", "artifacts"
    )
    now = await tx.now()
    return [
        ArtifactRecord(
            id=new_id(),
            org_id=tx.org_id,
            node_id=node_id,
            name=a.name,
            description=a.description,
            parts=a.parts,
            metadata=a.metadata,
            author_id=author,
            created_at=now,
        )
        for a in checked
    ]


def artifact_event(record: ArtifactRecord) -> dict[str, Any]:
    """What the attach event records: which artifact, and the identity of each part."""
    return {
        "artifact": ulid_str(record.id),
        "name": record.name,
        "parts": [{k: v for k, v in part_to_dict(p).items() if k != "text"} for p in record.parts],
    }


async def artifact_page(
    e: Context,
    tx: Tx,
    ref: str,
    project_ref: str | None,
    *,
    limit: int | None = None,
    page: str | None = None,
) -> Page[ArtifactInfo]:
    """A node's artifacts, oldest first (created_at, id): every one when ``limit`` is None,
    else ``limit`` of them after ``page`` (keyset)."""
    size = None if limit is None else e.page_size(limit)
    node = await e.node_in(tx, ref, project_ref)
    name = scoped("artifacts", node.id)
    after = read_position(name, page, (datetime, UUID))
    got = await tx.artifact_page(node.id, after=after, limit=read_limit(size))
    rows, ends, more = cut(name, got, size, lambda a: (a.created_at, a.id))
    return Page(await artifact_infos(tx, rows), ends=ends, more=more)


async def artifact_infos(tx: Tx, records: Sequence[ArtifactRecord]) -> list[ArtifactInfo]:
    if not records:
        return []
    nodes = await tx.nodes_by_id({r.node_id for r in records})
    projects = await tx.projects_by_id({n.project_id for n in nodes.values()})
    people = await tx.principals_by_id({r.author_id for r in records})
    out: list[ArtifactInfo] = []
    for r in records:
        n = nodes[r.node_id]
        who = people.get(r.author_id)
        out.append(
            ArtifactInfo(
                id=ulid_str(r.id),
                node=format_ref(projects[n.project_id].slug, n.number),
                name=r.name,
                description=r.description,
                parts=r.parts,
                metadata=dict(r.metadata),
                author=who.name if who else ulid_str(r.author_id),
                author_kind=who.kind.value if who else "agent",
                created_at=r.created_at,
            )
        )
    return out


def as_artifact(value: Artifact | Mapping[str, Any], field: str = "artifact") -> Artifact:
    """An Artifact, from itself or its JSON form (checked like a patch operation's field;
    a refusal names the path from ``field``: ``artifacts[1].parts[0].type``)."""
    if isinstance(value, Artifact):
        return value
    from ._ops import parse_value

    got: Artifact = parse_value(value, Artifact, field)
    return got


def check_upload(data: bytes, media_type: str, digest: str | None, limits: Limits) -> BlobInfo:
    """The blob an upload makes, or Invalid / LimitExceeded before anything is written."""
    if not isinstance(data, bytes | bytearray | memoryview):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise Invalid("a blob is bytes", next="Pass the content as bytes.", field="data")
    size = len(data)
    _limit("the blob", size, limits.blob_bytes, "blob_bytes")
    kind = media_type.strip()
    if not kind or len(kind) > 255:
        raise Invalid(
            "a blob needs a media type",
            next="Give one, e.g. text/plain or application/json.",
            field="media_type",
        )
    actual = digest_of(bytes(data))
    if digest is not None and check_digest(digest) != actual:
        raise Invalid(
            f"the bytes hash to {actual}, not {digest}",
            next="Send the bytes the digest was computed from, or leave the digest out.",
            field="digest",
        )
    return BlobInfo(digest=actual, media_type=kind, size=size)


async def record_blob(tx: Tx, actor: Actor, info: BlobInfo) -> BlobInfo:
    """Record that this organization holds the blob (its bytes are already stored)."""
    await tx.insert_blob(
        BlobRecord(
            digest=info.digest,
            size=info.size,
            media_type=info.media_type,
            created_by=actor.id,
            created_at=await tx.now(),
        )
    )
    return info


async def find_blob(e: Context, tx: Tx, actor: Actor, digest: str) -> BlobRecord:
    """A blob the actor may read: one an artifact of a project it may read names, or one it
    uploaded that no artifact names yet. Any other is :func:`blob_not_found`, the answer for
    a digest nobody stored, after the same one read of the store."""
    found = await tx.readable_blob(digest, actor.id, await e.hidden(tx))
    if found is None:
        raise blob_not_found(digest)
    return found
