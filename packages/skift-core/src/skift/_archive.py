"""A skift archive: one project with everything skift holds for it, to move it to another
server or organization (docs/archive.md has the format).

The format is JSON Lines, UTF-8. The first line is the manifest
(``{"format": "skift-archive", "version": 1, ...}``); every other line is one
record ``{"type": T, ...}`` in this order: ``principal`` (name and kind of
each principal the project names), ``project``, ``node`` (parents first),
``edge``, ``comment`` (with its revisions), ``blob`` (the bytes, base64),
``artifact``, ``lease``, ``usage``, ``budget``, ``origin`` and ``event``.
Ids are the source's.

An import writes it all in one transaction into the caller's organization
as a new project: every id is new (so an archive can go into the server it
came from, or twice), a principal is found by name (or added with its kind),
a blob is kept by its digest (the bytes are checked against it), and every
reference (a parent, a blocker, a comment's thread, a lease of a usage
record, the ids inside events) follows the new ids. The answer maps the old
ids to the new ones. A node keeps its number, so ``slug#N`` names the same
work on both sides.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, Final, cast
from uuid import UUID

import attrs
import cattrs

from ._context import Actor, masked_event
from ._convert import json_converter
from ._errors import Conflict, Invalid
from ._intent import intent
from ._models import (
    Comment,
    Edge,
    Event,
    Hold,
    Lease,
    Node,
    NodeOrigin,
    Principal,
    PrincipalKind,
    Project,
)
from ._parts import ArtifactRecord, BlobPart, BlobRecord, part_from_dict, part_to_dict
from ._projects import Projects
from ._refs import check_slug, new_id, ulid_str
from ._store import EventPosition, Store, Tx
from ._usage_records import Budget, UsageRecord, UsageScope

FORMAT: Final = "skift-archive"
VERSION: Final = 1
ORIGIN_SOURCES: Final = ("beads",)
"""The import sources whose origins an archive carries (``NodeOrigin.source``)."""

Progress = Callable[[int, int], None]

_conv = json_converter.copy()
_conv.register_unstructure_hook(timedelta, lambda d: d.total_seconds())
_conv.register_structure_hook(timedelta, lambda v, _: timedelta(seconds=float(v)))
_conv.register_unstructure_hook(Decimal, str)
_conv.register_structure_hook(Decimal, lambda v, _: Decimal(str(v)))


@attrs.frozen(kw_only=True)
class ArchiveImport:
    """What an archive import wrote: the project and, for each old id, the new one."""

    project: str
    nodes: int
    edges: int
    comments: int
    artifacts: int
    blobs: int
    leases: int
    usage: int
    events: int
    ids: dict[str, str] = attrs.field(factory=lambda: dict[str, str]())
    """Each archived id (a ULID: nodes, comments, artifacts, leases, usage, events, the
    project) and the id it has here."""
    warnings: tuple[str, ...] = ()


def _dumps(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":"), default=_default) + "\n"


def _default(value: Any) -> Any:
    if hasattr(value, "value"):  # an enum
        return value.value
    raise TypeError(f"not JSON: {type(value).__name__}")


def _record(kind: str, value: Any) -> dict[str, Any]:
    return {"type": kind, **_conv.unstructure(value)}


def _artifact_doc(a: ArtifactRecord) -> dict[str, Any]:
    doc = _conv.unstructure(attrs.evolve(a, parts=()))
    doc["parts"] = [part_to_dict(p) for p in a.parts]
    return {"type": "artifact", **doc}


# ---------------------------------------------------------------------- export


async def _all_events(tx: Tx, project_id: UUID) -> list[Event]:
    out: list[Event] = []
    pos = EventPosition(seq=0)
    while True:
        # whole: a transaction running elsewhere on the server holds the stream's horizon
        # back, and the archive would leave out the events committed above it
        batch = await tx.events_after(pos, projects=(project_id,), limit=5000, whole=True)
        if not batch.events:
            return out
        out.extend(e for _, e in batch.events)
        pos = batch.events[-1][0]


async def export_archive(
    e: Projects, tx: Tx, store: Store, project_ref: str, *, progress: Progress | None = None
) -> list[str]:
    """The archive's lines (see the module docstring), read in one transaction."""
    from ._importer import project_nodes

    project = await e.resolve_project(tx, project_ref)
    nodes = await project_nodes(tx, project)
    ids = [n.id for n in nodes]
    mine = set(ids)
    edges = [x for x in await tx.edges_into(ids) if x.from_id in mine] if ids else []
    outside = len(await tx.edges_into(ids)) - len(edges) if ids else 0
    outside += len([x for x in await tx.edges_out_of(ids) if x.to_id not in mine]) if ids else 0
    comments = await tx.comments_of(ids) if ids else []
    artifacts = await tx.artifacts_of(ids) if ids else []
    digests = sorted({p.digest for a in artifacts for p in a.parts if isinstance(p, BlobPart)})
    leases: list[Lease] = []
    for k, nid in enumerate(ids):
        leases.extend(await tx.lease_history(nid))
        if progress is not None and k % 500 == 0:
            progress(k, len(ids) * 2)
    usage = await tx.usage_records(UsageScope(project=project.id), limit=10**9)
    budgets = list((await tx.budgets([project.id, *ids])).values())
    origins: list[NodeOrigin] = []
    for source in ORIGIN_SOURCES:
        origins.extend(await tx.origins_of_project(project.id, source))
    events = await _all_events(tx, project.id)
    # what the exporter may not read stays out of the archive as it stays out of a read
    unread = await e.unread_slugs(tx, events)
    events = [masked_event(ev, unread) for ev in events] if unread else events

    records: list[dict[str, Any]] = [_record("project", project)]
    records += [_record("node", n) for n in nodes]
    records += [_record("edge", x) for x in edges]
    records += [_record("comment", c) for c in comments]
    blobs: list[dict[str, Any]] = []
    for digest in digests:
        rec = await tx.blob(digest)
        data = await store.blobs.get(digest)
        if rec is None or data is None:
            raise Invalid(
                f"blob {digest} of an artifact of {project.slug} is missing from this store",
                next="Ask the operator to check the server's blob directory.",
            )
        blobs.append({**_record("blob", rec), "data": base64.b64encode(data).decode("ascii")})
    records += blobs
    records += [_artifact_doc(a) for a in artifacts]
    records += [_record("lease", x) for x in sorted(leases, key=lambda x: x.created_at)]
    records += [_record("usage", u) for u in sorted(usage, key=lambda u: u.id)]
    records += [_record("budget", b) for b in budgets]
    records += [_record("origin", o) for o in origins]
    records += [_record("event", ev) for ev in events]

    named: set[str] = set()
    principals = {str(p.id): p for p in await tx.list_principals()}

    def collect(value: Any) -> None:
        if isinstance(value, str):
            if value in principals:
                named.add(value)
        elif isinstance(value, dict):
            for v in value.values():  # pyright: ignore[reportUnknownVariableType]
                collect(v)
        elif isinstance(value, list):
            for v in value:  # pyright: ignore[reportUnknownVariableType]
                collect(v)

    for r in records:
        collect(r)
    people = [
        {"type": "principal", "id": pid, "name": principals[pid].name, "kind": principals[pid].kind}
        for pid in sorted(named)
    ]
    counts: dict[str, int] = {}
    for r in records:
        counts[r["type"]] = counts.get(r["type"], 0) + 1
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "project": project.slug,
        "title": project.title,
        "exported_at": (await tx.now()).isoformat(),
        "org": str(tx.org_id),
        "counts": counts,
        "outside_edges_left_out": outside,
    }
    out = [_dumps(manifest)]
    total = len(people) + len(records)
    for k, r in enumerate([*people, *records]):
        out.append(_dumps(r))
        if progress is not None and (k % 1000 == 0 or k == total - 1):
            progress(len(ids) + (k + 1) * len(ids) // max(total, 1), len(ids) * 2)
    return out


# ---------------------------------------------------------------------- import


def _bad(line: int, what: str) -> Invalid:
    return Invalid(
        f"line {line}: {what}",
        next="Export the project again with skift export; an archive is not edited by hand.",
        line=line,
        field="data",
    )


def parse_archive(lines: Iterable[str]) -> tuple[dict[str, Any], list[tuple[int, dict[str, Any]]]]:
    """The manifest and the records, each with its line; Invalid naming a bad line."""
    manifest: dict[str, Any] | None = None
    records: list[tuple[int, dict[str, Any]]] = []
    for n, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise _bad(n, f"not JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(doc, dict):
            raise _bad(n, "not a JSON object")
        obj: dict[str, Any] = doc  # pyright: ignore[reportUnknownVariableType]
        if manifest is None:
            if obj.get("format") != FORMAT:
                raise _bad(n, f"not a skift archive (the first line's format is not {FORMAT!r})")
            if obj.get("version") != VERSION:
                raise _bad(n, f"archive version {obj.get('version')!r}; this skift reads {VERSION}")
            manifest = obj
            continue
        if not isinstance(obj.get("type"), str):
            raise _bad(n, "a record without a type")
        records.append((n, obj))
    if manifest is None:
        raise Invalid(
            "the archive is empty", next="Give the file skift export wrote.", field="data"
        )
    return manifest, records


def _group_of(doc: Mapping[str, Any]) -> Any:
    """The hold group of a node or project record, if any."""
    hold: Any = doc.get("hold")
    if not isinstance(hold, dict):
        return None
    fields = cast("dict[str, Any]", hold)
    return fields.get("group")


def _struct(cls: type[Any], doc: Mapping[str, Any], line: int) -> Any:
    try:
        return _conv.structure({k: v for k, v in doc.items() if k != "type"}, cls)
    except (cattrs.BaseValidationError, ValueError, TypeError, KeyError) as exc:
        raise _bad(line, f"not a valid {doc.get('type')} record ({exc})") from None


class _Ids:
    """Old ids to new: every id of the archive gets a fresh one, principals map by name."""

    def __init__(self) -> None:
        self.map: dict[str, str] = {}

    def new(self, old: Any) -> None:
        if isinstance(old, str) and old and old not in self.map:
            fresh = new_id()
            self.map[old] = str(fresh)
            with contextlib.suppress(ValueError):
                self.map[ulid_str(UUID(old))] = ulid_str(fresh)

    def same(self, old: str, new: UUID) -> None:
        self.map[old] = str(new)
        self.map[ulid_str(UUID(old))] = ulid_str(new)

    def walk(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.map.get(value, value)
        if isinstance(value, dict):
            return {k: self.walk(v) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]
        if isinstance(value, list):
            return [self.walk(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
        return value


class _Authors:
    """Whose the imported history is: the importer's, or (``mapped``, an admin's import) the
    organization's principals the archive's principal records were mapped to by name. A
    principal id the archive does not list is always the importer's, so no archive names an
    identity it was not given."""

    def __init__(self, actor: Actor, now: datetime, *, mapped: bool) -> None:
        self.actor = actor
        self.now = now
        self.mapped = mapped
        self._allowed: set[UUID] = {actor.id}
        self._kinds: dict[UUID, PrincipalKind] = {actor.id: actor.kind}
        self._names: dict[str, str] = {}

    def named(self, old: Any, name: str) -> None:
        if isinstance(old, str) and old:
            self._names[old] = name
            with contextlib.suppress(ValueError):
                self._names[ulid_str(UUID(old))] = name

    def allow(self, p: Principal) -> None:
        self._allowed.add(p.id)
        self._kinds[p.id] = p.kind

    def names_seen(self) -> set[str]:
        return set(self._names.values())

    def id(self, value: UUID) -> UUID:
        return value if self.mapped and value in self._allowed else self.actor.id

    def name(self, old: Any) -> str:
        return self._names.get(str(old), "an unlisted principal")

    def hold(self, hold: Hold | None) -> Hold | None:
        return None if hold is None else attrs.evolve(hold, by=self.id(hold.by))

    def readers(self, readers: tuple[UUID, ...] | None) -> tuple[UUID, ...] | None:
        if readers is None:
            return None
        return tuple(dict.fromkeys([*(self.id(r) for r in readers), self.actor.id]))

    def comment(self, c: Comment, doc: Mapping[str, Any]) -> Comment:
        author = self.id(c.author_id)
        body = c.body
        if author != c.author_id:
            when = str(doc.get("created_at", ""))
            body = f"*Imported: written by {self.name(doc.get('author_id'))} at {when}.*\n\n{body}"
        return attrs.evolve(
            c,
            author_id=author,
            body=body,
            resolved_by=self.id(c.resolved_by) if c.resolved_by is not None else None,
            revisions=tuple(attrs.evolve(r, author_id=self.id(r.author_id)) for r in c.revisions),
        )

    def artifact(self, a: ArtifactRecord, doc: Mapping[str, Any]) -> ArtifactRecord:
        author = self.id(a.author_id)
        if author == a.author_id:
            return a
        meta = {**a.metadata, "imported_author": self.name(doc.get("author_id"))}
        return attrs.evolve(a, author_id=author, metadata=meta)

    def event(self, ev: Event, doc: Mapping[str, Any]) -> Event:
        actor = self.id(ev.principal_id)
        if actor == ev.principal_id:
            return attrs.evolve(ev, on_behalf_of=None)
        imported = {
            "principal": self.name(doc.get("principal_id")),
            "principal_kind": ev.principal_kind.value,
            "identity_scheme": ev.identity_scheme,
            "occurred_at": ev.occurred_at.isoformat(),
        }
        return attrs.evolve(
            ev,
            principal_id=actor,
            principal_kind=self._kinds.get(actor, self.actor.kind),
            on_behalf_of=None,
            identity_scheme=self.actor.identity_scheme,
            occurred_at=self.now,
            after={**(ev.after or {}), "imported": imported},
        )


async def import_archive(
    e: Projects,
    tx: Tx,
    actor: Actor,
    manifest: Mapping[str, Any],
    records: Sequence[tuple[int, dict[str, Any]]],
    *,
    slug: str | None = None,
    progress: Progress | None = None,
    map_authors: bool = False,
) -> ArchiveImport:
    """Write a parsed archive (:func:`parse_archive`) as a new project; blobs' bytes must be in
    the store's blob store already (the API puts them first).

    The import acts as the importer: every event, comment, artifact, lease, usage record,
    hold and blob of the archive is the importer's, and the author the archive names is
    kept as imported text (an event's ``after.imported``, a comment's first line, an
    artifact's ``imported_author`` metadata), never as an identity. With ``map_authors``
    (an admin's call: the lossless move between servers) the archive's principals are the
    organization's principals of the same names (added when absent), and the import's own
    event says so. An author with the importer's own name is the importer either way (their
    own history moves as it was). A reference to a principal the archive does not list is
    always the importer's.
    """
    await e.authorize(tx, actor, [intent("import")])
    if map_authors:
        await e.authorize(tx, actor, [intent("admin")])
    by_type: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for line, doc in records:
        by_type.setdefault(doc["type"], []).append((line, doc))
    (p_line, p_doc), *more = by_type.get("project") or [(0, {})]
    if not p_doc or more:
        raise Invalid(
            "the archive holds no project, or several",
            next="Give one project's archive.",
            field="data",
        )
    wanted = check_slug(slug or str(p_doc.get("slug", "")))
    if await tx.project_by_slug(wanted) is not None:
        raise Conflict(
            f"the slug {wanted!r} is taken in this organization",
            next="Import it under another slug.",
            move={"do": "import_as"},
        )
    ids = _Ids()
    ids.same(str(manifest.get("org", "")) or str(UUID(int=0)), tx.org_id)
    now = await tx.now()
    who = _Authors(actor, now, mapped=map_authors)
    for line, doc in by_type.get("principal", []):
        name, kind = str(doc.get("name", "")), str(doc.get("kind", "user"))
        who.named(doc.get("id"), name)
        if not map_authors:
            if name == actor.principal.name:  # the importer's own history: theirs as it was
                ids.same(str(doc["id"]), actor.id)
            # any other maps to nothing: every reference to it is the importer's (_Authors)
            continue
        found = await tx.principal_by_name(name)
        if found is None:
            try:
                pk = PrincipalKind(kind)
            except ValueError:
                raise _bad(line, f"principal {name!r}: kind {kind!r}") from None
            found = Principal(id=new_id(), org_id=tx.org_id, name=name, kind=pk, created_at=now)
            await tx.insert_principal(found)
        ids.same(str(doc["id"]), found.id)
        who.allow(found)
    for kind in ("project", "node", "comment", "artifact", "lease", "usage", "event"):
        for _, doc in by_type.get(kind, []):
            ids.new(doc.get("id"))
    for _, doc in by_type.get("node", []):
        ids.new(doc.get("context_id"))
        ids.new(_group_of(doc))
    ids.new(_group_of(p_doc))

    def build(kind: str, cls: type[Any]) -> list[Any]:
        return [_struct(cls, ids.walk(doc), line) for line, doc in by_type.get(kind, [])]

    project: Project = _struct(Project, ids.walk(p_doc), p_line)
    project = attrs.evolve(
        project,
        slug=wanted,
        archived_at=None,
        hold=who.hold(project.hold),
        readers=who.readers(project.readers),
    )
    await tx.insert_project(project)
    nodes: list[Node] = [
        attrs.evolve(n, created_by=who.id(n.created_by), hold=who.hold(n.hold))
        for n in build("node", Node)
    ]
    from ._importer import _parents_first  # pyright: ignore[reportPrivateUsage]

    await tx.insert_nodes(_parents_first(nodes))
    if progress is not None:
        progress(1, 4)
    edges: list[Edge] = build("edge", Edge)
    await tx.insert_edges(edges)
    comments: list[Comment] = [
        who.comment(c, doc)
        for c, (_, doc) in zip(build("comment", Comment), by_type.get("comment", []), strict=True)
    ]
    # a reply after what it answers: the archive lists comments oldest first
    await tx.insert_comments([attrs.evolve(c, revisions=()) for c in comments])
    for c in comments:
        for rev in c.revisions:
            await tx.update_comment(c, revision=rev)
    for line, doc in by_type.get("blob", []):
        rec: BlobRecord = _struct(BlobRecord, ids.walk({**doc, "data": None}), line)
        rec = attrs.evolve(rec, created_by=who.id(rec.created_by))
        if await tx.blob(rec.digest) is None:
            await tx.insert_blob(rec)
    artifacts: list[ArtifactRecord] = []
    for line, doc in by_type.get("artifact", []):
        walked = ids.walk(doc)
        parts = tuple(part_from_dict(p) for p in walked.get("parts", []))
        art: ArtifactRecord = _struct(ArtifactRecord, {**walked, "parts": []}, line)
        artifacts.append(who.artifact(attrs.evolve(art, parts=parts), doc))
    await tx.insert_artifacts(artifacts)
    if progress is not None:
        progress(2, 4)
    leases: list[Lease] = [
        attrs.evolve(x, holder=who.id(x.holder), on_behalf_of=None) for x in build("lease", Lease)
    ]
    for lease in leases:
        await tx.insert_lease(lease)
    usage: list[UsageRecord] = [
        attrs.evolve(u, principal_id=who.id(u.principal_id)) for u in build("usage", UsageRecord)
    ]
    for u in usage:
        await tx.insert_usage(u)
    for b in build("budget", Budget):
        await tx.set_budget(b)
    origins: list[NodeOrigin] = build("origin", NodeOrigin)
    await tx.upsert_origins(origins)
    if progress is not None:
        progress(3, 4)
    events: list[Event] = [
        who.event(ev, doc)
        for ev, (_, doc) in zip(build("event", Event), by_type.get("event", []), strict=True)
    ]
    events.append(
        await e._event(  # pyright: ignore[reportPrivateUsage]
            tx,
            actor,
            "import_archive",
            project_id=project.id,
            reason=f"import of {manifest.get('project')} exported at {manifest.get('exported_at')}",
            after={
                "nodes": len(nodes),
                "from_org": manifest.get("org"),
                # whose names the history carries: the archive's principals mapped to
                # those of the same names (an admin's lossless move), or the importer's
                "authors": "mapped by name" if map_authors else "the importer",
                "principals": sorted(who.names_seen()),
            },
        )
    )
    await tx.append_events(events)
    if progress is not None:
        progress(4, 4)
    old_ids = {
        str(doc.get("id"))
        for kind in ("project", "node", "comment", "artifact", "lease", "usage", "event")
        for _, doc in by_type.get(kind, [])
    }
    return ArchiveImport(
        project=project.slug,
        nodes=len(nodes),
        edges=len(edges),
        comments=len(comments),
        artifacts=len(artifacts),
        blobs=len(by_type.get("blob", [])),
        leases=len(leases),
        usage=len(usage),
        events=len(events) - 1,
        ids={
            ulid_str(UUID(old)): ulid_str(UUID(ids.map[old]))
            for old in sorted(old_ids)
            if old in ids.map
        },
    )


def blob_bytes(records: Sequence[tuple[int, dict[str, Any]]]) -> list[tuple[str, bytes]]:
    """Each blob record's digest and bytes, checked against the digest (Invalid naming the line)."""
    out: list[tuple[str, bytes]] = []
    for line, doc in records:
        if doc["type"] != "blob":
            continue
        digest = str(doc.get("digest", ""))
        try:
            data = base64.b64decode(str(doc.get("data", "")), validate=True)
        except ValueError:
            raise _bad(line, f"blob {digest}: its data is not base64") from None
        if "sha256:" + hashlib.sha256(data).hexdigest() != digest:
            raise _bad(line, f"blob {digest}: the bytes do not hash to the digest")
        out.append((digest, data))
    return out
