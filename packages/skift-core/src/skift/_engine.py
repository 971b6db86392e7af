"""The rules of skift, once.

Alias resolution, limits, cascade expansion, cycle checks over the combined
wait relation, gate rules, hold inheritance, fencing, idempotency
fingerprints and event construction all live here. The engine talks to a
store only through :class:`~skift._store.Tx`, so the in-memory store and
PostgreSQL obey exactly the same code.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import uuid
import weakref
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, cast
from urllib.parse import urlsplit
from uuid import UUID

import attrs

from ._artifacts import (
    Artifact,
    ArtifactInfo,
    artifact_event,
    artifact_infos,
    prepare_artifacts,
)
from ._convert import from_json, to_json
from ._errors import (
    Conflict,
    CycleError,
    FencingError,
    IdempotencyMismatch,
    Invalid,
    LimitExceeded,
    NotFound,
    NothingReady,
    Refused,
    SkiftError,
)
from ._filter import NodeFilter as NodeFilter  # re-exported: it lived here
from ._intent import intent
from ._limits import Limits
from ._models import (
    AssigneeKind,
    Edge,
    EdgeKind,
    Event,
    Hold,
    Identity,
    IdentityScheme,
    Lease,
    Node,
    Principal,
    PrincipalKind,
    Priority,
    Project,
    ReleaseReason,
    Status,
)
from ._ops import (
    AddComment,
    AddEdge,
    AttachArtifact,
    CompleteNode,
    CreateNode,
    DropNode,
    HoldNode,
    Op,
    RemoveEdge,
    ReopenNode,
    UnholdNode,
    UpdateNode,
    fingerprint,
)
from ._org_limits import effective as org_effective
from ._origins import node_by_external_id
from ._policy import Policy
from ._refs import (
    check_slug,
    disambiguate,
    format_ref,
    new_id,
    parse_node_ref,
    parse_ulid,
    slugify,
    ulid_str,
)
from ._store import Authors, Derived, ReadyQuery, TransientError, Tx
from ._usage import capped_out, check_cap, set_budget
from ._views import (
    Claim,
    CommentsHint,
    EventInfo,
    Explanation,
    FocusResult,
    IdentityInfo,
    Input,
    LeaseInfo,
    NodeInfo,
    PatchResult,
    PrincipalInfo,
    ProjectInfo,
    ReadyPage,
    Reason,
    Resolved,
    TokenInfo,
)

_ALIAS_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")


@attrs.frozen(kw_only=True)
class Actor:
    """Who is acting, and through which identity scheme."""

    principal: Principal
    identity_scheme: str = "local"

    @property
    def id(self) -> UUID:
        return self.principal.id

    @property
    def kind(self) -> PrincipalKind:
        return self.principal.kind

    @property
    def is_user(self) -> bool:
        return self.principal.kind is PrincipalKind.USER


def _jsonable(value: object) -> Any:
    if isinstance(value, UUID):
        return ulid_str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, tuple):
        items: tuple[object, ...] = value  # pyright: ignore[reportUnknownVariableType]
        return [_jsonable(v) for v in items]
    if isinstance(value, Hold):
        return {"at": value.at.isoformat(), "by": ulid_str(value.by), "reason": value.reason}
    return value


def _node_fields(node: Node, names: Iterable[str] | None = None) -> dict[str, Any]:
    keys = names or (
        "number",
        "title",
        "kind",
        "status",
        "priority",
        "parent_id",
        "labels",
        "assignee_kind",
        "assignee",
    )
    return {k: _jsonable(getattr(node, k)) for k in keys}


def _changed(before: Node, after: Node) -> tuple[dict[str, Any], dict[str, Any]]:
    names = [
        f.name
        for f in attrs.fields(Node)
        if f.name not in ("updated_at",) and getattr(before, f.name) != getattr(after, f.name)
    ]
    return _node_fields(before, names), _node_fields(after, names)


def _check_size(what: str, text: str, limit: int, *, chars: bool = False) -> None:
    size = len(text) if chars else len(text.encode())
    if size > limit:
        unit = "characters" if chars else "bytes"
        raise LimitExceeded(
            f"{what} is {size} {unit}; the limit is {limit}",
            next=f"Shorten the {what}, or put the bulk in an artifact.",
            limit=what,
            bound=limit,
        )


def check_vcs_url(url: str) -> str:
    """An absolute URL, or empty. skift never reads it."""
    url = url.strip()
    if not url:
        return ""
    parts = urlsplit(url)
    if not parts.scheme or not (parts.netloc or (parts.scheme == "file" and parts.path)):
        raise Invalid(
            f"{url!r} is not an absolute URL",
            next="Give the clone URL with its scheme, e.g. https://github.com/acme/api.git, or leave it empty.",
        )
    return url


class Engine:
    """Every rule of skift, applied inside a store transaction."""

    def __init__(
        self, limits: Limits, *, org: str = "default", policy: Policy | None = None
    ) -> None:
        self.limits = limits
        self.org = org
        self.policy = policy or Policy.default()
        # the effective size limits, read once per transaction (see sizes)
        self._sizes: weakref.WeakKeyDictionary[Tx, Limits] = weakref.WeakKeyDictionary()

    async def sizes(self, tx: Tx) -> Limits:
        """The limits with the organization's size limits in force (the server's, lowered).

        Read from the store once per transaction; every size check of the
        request uses this one reading.
        """
        got = self._sizes.get(tx)
        if got is None:
            own = await tx.org_limits()
            got = self._sizes[tx] = org_effective(self.limits, own) if own else self.limits
        return got

    def forget_sizes(self, tx: Tx) -> None:
        """Drop a transaction's reading after it changed the organization's limits."""
        self._sizes.pop(tx, None)

    # ------------------------------------------------------------------ events

    async def _event(
        self,
        tx: Tx,
        actor: Actor,
        op: str,
        *,
        project_id: UUID | None = None,
        node_id: UUID | None = None,
        reason: str | None = None,
        request_id: str | None = None,
        before: dict[str, Any] | None = None,
        after: dict[str, Any] | None = None,
    ) -> Event:
        return Event(
            id=new_id(),
            org_id=tx.org_id,
            project_id=project_id,
            node_id=node_id,
            principal_id=actor.id,
            principal_kind=actor.kind,
            identity_scheme=actor.identity_scheme,
            request_id=request_id,
            op=op,
            reason=reason,
            before=before,
            after=after,
            occurred_at=await tx.now(),
        )

    # ---------------------------------------------------------------- projects

    async def resolve_project(self, tx: Tx, ref: str) -> Project:
        text = ref.strip()
        org: str | None = None
        if "/" in text:
            org, text = text.split("/", 1)
        project: Project | None = None
        if org is None or org == self.org:  # another organization's project is nothing
            ident = parse_ulid(text)
            if ident is not None:
                project = await tx.project_by_id(ident)
            if project is None:
                project = await tx.project_by_slug(text.lower())
        if project is None:
            raise NotFound(
                f"no project {ref!r}",
                next="List projects with 'skift project list', or create one with 'skift project create TITLE'.",
            )
        return project

    async def create_project(
        self,
        tx: Tx,
        actor: Actor,
        title: str,
        *,
        slug: str | None = None,
        priority: Priority = Priority.P2,
        vcs_url: str = "",
    ) -> Project:
        self.authorize(actor, [_intent("create_project")])
        title = title.strip()
        if not title:
            raise Invalid("a project needs a title", next="Give a short human-readable title.")
        _check_size("title", title, self.limits.title_chars, chars=True)
        vcs = check_vcs_url(vcs_url)
        if slug is not None:
            wanted = check_slug(slug)
            if await tx.project_by_slug(wanted) is not None:
                raise Conflict(
                    f"the slug {wanted!r} is taken",
                    next="Choose another slug, or leave it out to derive one from the title.",
                )
        else:
            base = slugify(title)
            wanted = disambiguate(base, await tx.slugs_like(base))
        now = await tx.now()
        project = Project(
            id=new_id(),
            org_id=tx.org_id,
            slug=wanted,
            title=title,
            priority=priority,
            vcs_url=vcs,
            created_at=now,
        )
        await tx.insert_project(project)
        await tx.append_events(
            [
                await self._event(
                    tx,
                    actor,
                    "create_project",
                    project_id=project.id,
                    after={
                        "slug": wanted,
                        "title": title,
                        "priority": priority.value,
                        "vcs_url": vcs,
                    },
                )
            ]
        )
        return project

    async def update_project(
        self,
        tx: Tx,
        actor: Actor,
        ref: str,
        *,
        title: str | None = None,
        slug: str | None = None,
        priority: Priority | None = None,
        vcs_url: str | None = None,
        budget: object = None,
    ) -> Project:
        self.authorize(actor, [_intent("update_project")])
        project = await self.resolve_project(tx, ref)
        project = await tx.project_by_id(project.id, lock=True) or project
        self._writable_project(project)
        changes: dict[str, Any] = {}
        if title is not None:
            title = title.strip()
            if not title:
                raise Invalid("a project needs a title", next="Give a short human-readable title.")
            _check_size("title", title, self.limits.title_chars, chars=True)
            changes["title"] = title
            if slug is None:
                base = slugify(title)
                if base != project.slug:
                    taken = await tx.slugs_like(base)
                    owner = await tx.project_by_slug(base)
                    if owner is not None and owner.id == project.id:
                        changes["slug"] = base
                    else:
                        changes["slug"] = disambiguate(base, taken)
        if slug is not None:
            wanted = check_slug(slug)
            owner = await tx.project_by_slug(wanted)
            if owner is not None and owner.id != project.id:
                raise Conflict(f"the slug {wanted!r} is taken", next="Choose another slug.")
            changes["slug"] = wanted
        if priority is not None:
            changes["priority"] = priority
        if vcs_url is not None:
            changes["vcs_url"] = check_vcs_url(vcs_url)
        updated = attrs.evolve(project, **changes)
        await tx.update_project(updated)
        before = {k: _jsonable(getattr(project, k)) for k in changes}
        after = {k: _jsonable(getattr(updated, k)) for k in changes}
        money = await set_budget(tx, project.id, "project", budget=budget)
        if money is not None:
            before.update(money[0])
            after.update(money[1])
        await tx.append_events(
            [
                await self._event(
                    tx, actor, "update_project", project_id=project.id, before=before, after=after
                )
            ]
        )
        return updated

    async def archive_project(self, tx: Tx, actor: Actor, ref: str, reason: str) -> Project:
        self.authorize(actor, [_intent("archive_project")])
        project = await self.resolve_project(tx, ref)
        project = await tx.project_by_id(project.id, lock=True) or project
        if project.archived_at is not None:
            raise Refused(f"{project.slug} is already archived", next="Nothing to do.")
        reason = self._reason(reason, "archive")
        now = await tx.now()
        updated = attrs.evolve(project, archived_at=now)
        await tx.update_project(updated)
        await tx.append_events(
            [
                await self._event(
                    tx,
                    actor,
                    "archive_project",
                    project_id=project.id,
                    reason=reason,
                    after={"archived_at": now.isoformat()},
                )
            ]
        )
        return updated

    # ------------------------------------------------------------------ focus

    async def focus(
        self, tx: Tx, actor: Actor, keep: Sequence[str], reason: str, project_ref: str | None
    ) -> FocusResult:
        """Hold everything outside ``keep`` in one scope, replacing the scope's previous sweep.

        Org scope (no project): ``keep`` names projects, and every other live
        project that is not already held is held. Project scope: ``keep`` names
        nodes of that project, and the topmost open nodes outside the keep-set
        (never an ancestor or a descendant of a kept node) that are not already
        held are held. All new holds share one ``hold_group``; a hold placed by
        hand is never touched.
        """
        self._may_hold(actor, "focus")
        reason = self._reason(reason, "focus")
        if len(keep) > self.limits.keep_set:
            raise LimitExceeded(
                f"the keep-set has {len(keep)} entries; the limit is {self.limits.keep_set}",
                next="Focus on fewer things at once, or hold the rest by project.",
                limit="keep_set",
                bound=self.limits.keep_set,
            )
        if project_ref is None:
            kept = {(await self.resolve_project(tx, ref)).id for ref in keep}
            released = await self._clear_org_sweep(tx, actor, reason)
            group = new_id()
            now = await tx.now()
            held: list[Project] = []
            for p in await tx.list_projects(archived=False, limit=10**9, offset=0):
                if p.id in kept or p.hold is not None:
                    continue
                locked = await tx.project_by_id(p.id, lock=True) or p
                if locked.hold is not None:
                    continue
                await tx.update_project(
                    attrs.evolve(locked, hold=Hold(at=now, by=actor.id, reason=reason, group=group))
                )
                held.append(locked)
            events = [
                await self._event(
                    tx,
                    actor,
                    "hold_project",
                    project_id=p.id,
                    reason=reason,
                    after={"group": ulid_str(group)},
                )
                for p in held
            ]
            await tx.append_events(events)
            parked = (
                await tx.held_count(ReadyQuery(projects=tuple(p.id for p in held))) if held else 0
            )
            return FocusResult(
                scope="org",
                group=ulid_str(group) if held else None,
                held=tuple(sorted(p.slug for p in held)),
                released=tuple(sorted(released)),
                parked=parked,
            )
        project = await self.resolve_project(tx, project_ref)
        self._writable_project(project)
        kept_nodes = [await self.resolve_node(tx, ref, project) for ref in keep]
        for n in kept_nodes:
            if n.project_id != project.id:
                raise Invalid(
                    f"{ref_of(n, project)} is not in {project.slug}",
                    next="A project-scoped focus keeps nodes of that project; name them as #N.",
                )
        released = await self._clear_project_sweep(tx, actor, project, reason)
        nodes = {
            n.id: n
            for n in await tx.list_nodes(
                ReadyQuery(projects=(project.id,), limit=10**9), status=None, held=None
            )
        }
        kept = {n.id for n in kept_nodes}

        def chain(nid: UUID) -> list[UUID]:
            out: list[UUID] = []
            cur = nodes[nid].parent_id
            while cur is not None and cur in nodes and cur not in out:
                out.append(cur)
                cur = nodes[cur].parent_id
            return out

        ancestors_of_kept = {a for k in kept for a in chain(k)}
        group = new_id()
        now = await tx.now()
        selected: set[UUID] = set()
        for nid in sorted(nodes, key=lambda i: len(chain(i))):
            n = nodes[nid]
            up = chain(nid)
            if (
                n.status is not Status.OPEN
                or nid in kept
                or nid in ancestors_of_kept
                or any(a in kept for a in up)
                or any(a in selected for a in up)
                or n.hold is not None
                or any(nodes[a].hold is not None for a in up)
                or project.hold is not None
            ):
                continue
            selected.add(nid)
        parked = 0
        held_refs: list[str] = []
        events: list[Event] = []
        for nid in sorted(selected, key=lambda i: nodes[i].number):
            n = nodes[nid]
            locked = (await tx.nodes_by_id([nid], lock=True))[nid]
            await tx.update_node(
                attrs.evolve(
                    locked,
                    hold=Hold(at=now, by=actor.id, reason=reason, group=group),
                    updated_at=now,
                )
            )
            held_refs.append(ref_of(n, project))
            parked += 1 + sum(
                1 for m in nodes.values() if m.status is Status.OPEN and nid in chain(m.id)
            )
            events.append(
                await self._event(
                    tx,
                    actor,
                    "hold_node",
                    project_id=project.id,
                    node_id=nid,
                    reason=reason,
                    after={"group": ulid_str(group)},
                )
            )
        await tx.append_events(events)
        return FocusResult(
            scope=project.slug,
            group=ulid_str(group) if selected else None,
            held=tuple(held_refs),
            released=tuple(released),
            parked=parked,
        )

    async def clear_focus(
        self, tx: Tx, actor: Actor, reason: str, project_ref: str | None
    ) -> FocusResult:
        """Release the holds of the scope's focus sweep; hand-placed holds stay."""
        self._may_hold(actor, "focus")
        reason = self._reason(reason, "clear a focus")
        if project_ref is None:
            released = await self._clear_org_sweep(tx, actor, reason)
            scope = "org"
        else:
            project = await self.resolve_project(tx, project_ref)
            self._writable_project(project)
            released = await self._clear_project_sweep(tx, actor, project, reason)
            scope = project.slug
        return FocusResult(
            scope=scope, group=None, held=(), released=tuple(sorted(released)), parked=0
        )

    async def _clear_org_sweep(self, tx: Tx, actor: Actor, reason: str) -> list[str]:
        released: list[str] = []
        events: list[Event] = []
        for p in await tx.list_projects(archived=True, limit=10**9, offset=0):
            if p.hold is None or p.hold.group is None:
                continue
            locked = await tx.project_by_id(p.id, lock=True) or p
            if locked.hold is None or locked.hold.group is None:
                continue
            await tx.update_project(attrs.evolve(locked, hold=None))
            released.append(p.slug)
            events.append(
                await self._event(
                    tx,
                    actor,
                    "unhold_project",
                    project_id=p.id,
                    reason=reason,
                    before={"group": ulid_str(locked.hold.group)},
                )
            )
        await tx.append_events(events)
        return released

    async def _clear_project_sweep(
        self, tx: Tx, actor: Actor, project: Project, reason: str
    ) -> list[str]:
        released: list[str] = []
        events: list[Event] = []
        held = await tx.list_nodes(
            ReadyQuery(projects=(project.id,), limit=10**9), status=None, held=True
        )
        now = await tx.now()
        for n in held:
            if n.hold is None or n.hold.group is None:
                continue
            locked = (await tx.nodes_by_id([n.id], lock=True))[n.id]
            if locked.hold is None or locked.hold.group is None:
                continue
            await tx.update_node(attrs.evolve(locked, hold=None, updated_at=now))
            released.append(ref_of(n, project))
            events.append(
                await self._event(
                    tx,
                    actor,
                    "unhold_node",
                    project_id=project.id,
                    node_id=n.id,
                    reason=reason,
                    before={"group": ulid_str(locked.hold.group)},
                )
            )
        await tx.append_events(events)
        return released

    async def hold_project(self, tx: Tx, actor: Actor, ref: str, reason: str, *, hold: bool) -> int:
        """Park or release a whole project; returns how many open nodes it parks or frees."""
        self._may_hold(actor, "hold_project" if hold else "unhold_project")
        project = await self.resolve_project(tx, ref)
        project = await tx.project_by_id(project.id, lock=True) or project
        self._writable_project(project)
        reason = self._reason(reason, "hold" if hold else "unhold")
        now = await tx.now()
        if hold:
            if project.hold is not None:
                raise Refused(
                    f"{project.slug} is already held since {project.hold.at:%Y-%m-%d %H:%M} ({project.hold.reason})",
                    next=f"Release it first with 'skift unhold --project {project.slug} --reason …'.",
                )
            updated = attrs.evolve(project, hold=Hold(at=now, by=actor.id, reason=reason))
        else:
            if project.hold is None:
                raise Refused(f"{project.slug} is not held", next="Nothing to release.")
            updated = attrs.evolve(project, hold=None)
        await tx.update_project(updated)
        query = ReadyQuery(projects=(project.id,), limit=1)
        count = (
            await tx.held_count(query)
            if hold
            else len(await tx.ready(attrs.evolve(query, limit=10**9)))
        )
        await tx.append_events(
            [
                await self._event(
                    tx,
                    actor,
                    "hold_project" if hold else "unhold_project",
                    project_id=project.id,
                    reason=reason,
                )
            ]
        )
        return count

    async def project_infos(self, tx: Tx, projects: Sequence[Project]) -> list[ProjectInfo]:
        activity = await tx.project_activity([p.id for p in projects])
        return [self._project_info(p, activity.get(p.id, p.created_at)) for p in projects]

    def _project_info(self, project: Project, active_at: datetime) -> ProjectInfo:
        return ProjectInfo(
            id=ulid_str(project.id),
            slug=project.slug,
            title=project.title,
            priority=project.priority,
            vcs_url=project.vcs_url,
            archived=project.archived_at is not None,
            archived_at=project.archived_at,
            held=project.hold is not None,
            hold_reason=project.hold.reason if project.hold else None,
            created_at=project.created_at,
            active_at=active_at,
            node_count=project.node_counter,
        )

    def _writable_project(self, project: Project) -> None:
        if project.archived_at is not None:
            raise Refused(
                f"{project.slug} is archived and read-only",
                next="Archived projects take no patches, claims or new edges; file the work in a live project.",
            )

    def _reason(self, reason: str | None, what: str) -> str:
        text = (reason or "").strip()
        if not text:
            raise Invalid(
                f"a {what} needs a reason",
                next="Say why (--reason), because a change nobody can explain is one nobody dares undo.",
            )
        _check_size("reason", text, self.limits.reason_chars, chars=True)
        return text

    def authorize(
        self, actor: Actor, intents: Sequence[dict[str, Any]], lease: Lease | None = None
    ) -> None:
        """Ask the policy about a resolved request; one denial refuses all of it."""
        request = {
            "principal": {
                "id": ulid_str(actor.id),
                "name": actor.principal.name,
                "kind": actor.kind.value,
            },
            "lease": {"id": ulid_str(lease.id), "node": ulid_str(lease.node_id)} if lease else None,
            "intents": list(intents),
        }
        denials = self.policy.deny(request)
        if denials:
            first = denials[0]
            raise Refused(first["msg"], next=first["next"], denials=denials)

    def _may_hold(self, actor: Actor, action: str = "hold") -> None:
        self.authorize(actor, [_intent(action)])

    # ------------------------------------------------------------------- nodes

    async def resolve_node(
        self, tx: Tx, ref: str, project: Project | None, *, lock: bool = False
    ) -> Node:
        try:
            parsed = parse_node_ref(ref)
        except Invalid:
            imported = await node_by_external_id(tx, ref, project)  # a beads id (skift._origins)
            if imported is None:
                raise
            return (await tx.nodes_by_id([imported.id], lock=lock))[imported.id]
        node: Node | None = None
        if parsed.org is not None and parsed.org != self.org:
            pass  # a reference into another organization behaves exactly like a reference to nothing
        elif parsed.id is not None:
            node = (await tx.nodes_by_id([parsed.id], lock=lock)).get(parsed.id)
        else:
            assert parsed.number is not None
            target = project
            if parsed.project is not None:
                target = await self.resolve_project(tx, parsed.project)
            if target is None:
                raise Invalid(
                    f"{ref!r} names a node by number alone, and no project is given",
                    next="Qualify it as slug#N, or name the project (-p/--project).",
                    move={"do": "name_project", "ref": ref},
                )
            node = await tx.node_by_number(target.id, parsed.number, lock=lock)
        if node is None:
            raise NotFound(
                f"no node {ref!r}",
                next="Check the reference; 'skift list' shows a project's nodes.",
            )
        return node

    async def node_in(
        self, tx: Tx, ref: str, project_ref: str | None, *, lock: bool = False
    ) -> Node:
        """Resolve ``ref``, a bare ``#N`` against ``project_ref`` when one is given."""
        project = await self.resolve_project(tx, project_ref) if project_ref else None
        return await self.resolve_node(tx, ref, project, lock=lock)

    async def infos(
        self,
        tx: Tx,
        nodes: Sequence[Node],
        *,
        authors: Mapping[UUID, Authors] | None = None,
    ) -> list[NodeInfo]:
        """The nodes as callers see them; attributed when ``authors`` (``tx.authors``) is given."""
        if not nodes:
            return []
        projects = await tx.projects_by_id({n.project_id for n in nodes})
        parent_ids = {n.parent_id for n in nodes if n.parent_id is not None}
        parents = await tx.nodes_by_id(parent_ids) if parent_ids else {}
        derived = await tx.derive([n.id for n in nodes])
        out: list[NodeInfo] = []
        for n in nodes:
            slug = projects[n.project_id].slug
            parent = parents.get(n.parent_id) if n.parent_id else None
            d = derived[n.id]
            who = authors.get(n.id) if authors is not None else None
            body_by = who.body if who is not None else None
            result_by = who.result if who is not None else None
            out.append(
                NodeInfo(
                    ref=format_ref(slug, n.number),
                    id=ulid_str(n.id),
                    number=n.number,
                    project=slug,
                    title=n.title,
                    body=n.body,
                    kind=n.kind,
                    status=n.status,
                    priority=n.priority,
                    parent=format_ref(slug, parent.number) if parent else None,
                    labels=n.labels,
                    assignee_kind=n.assignee_kind,
                    assignee=n.assignee,
                    context_id=str(n.context_id),
                    created_at=n.created_at,
                    blocked=d.blocked,
                    held=d.held,
                    claimed=d.claimed,
                    ready=d.ready and n.status is Status.OPEN,
                    result=n.result,
                    human_written=d.human_written,
                    body_author=body_by.name if body_by else None,
                    body_author_kind=body_by.kind.value if body_by else None,
                    result_author=result_by.name if result_by else None,
                    result_author_kind=result_by.kind.value if result_by else None,
                )
            )
        return out

    async def attributed(self, tx: Tx, nodes: Sequence[Node]) -> list[NodeInfo]:
        """The nodes with who wrote their body and result (one more read for all of them)."""
        if not nodes:
            return []
        return await self.infos(tx, nodes, authors=await tx.authors([n.id for n in nodes]))

    async def resolve(self, tx: Tx, ref: str, project_ref: str | None) -> Resolved:
        node = await self.node_in(tx, ref, project_ref)
        info = (await self.infos(tx, [node]))[0]
        return Resolved(ref=info.ref, id=info.id, title=info.title)

    # ------------------------------------------------------------------- patch

    def needs_graph_lock(self, ops: Sequence[Op]) -> bool:
        for op in ops:
            if isinstance(op, AddEdge | RemoveEdge):
                return True
            if isinstance(op, CreateNode) and (op.parent or op.blocked_by):
                return True
            if isinstance(op, UpdateNode) and op.parent is not None:
                return True
        return False

    def check_patch_limits(self, ops: Sequence[Op]) -> None:
        lim = self.limits
        if not ops:
            raise Invalid(
                "the patch has no operations", next="Add at least one operation to 'ops'."
            )
        if len(ops) > lim.ops_per_patch:
            raise LimitExceeded(
                f"the patch has {len(ops)} operations; the limit is {lim.ops_per_patch}",
                next="Split it into several patches.",
                limit="ops_per_patch",
                bound=lim.ops_per_patch,
            )
        creates = sum(1 for o in ops if isinstance(o, CreateNode))
        if creates > lim.nodes_per_patch:
            raise LimitExceeded(
                f"the patch creates {creates} nodes; the limit is {lim.nodes_per_patch}",
                next="Split it into several patches.",
                limit="nodes_per_patch",
                bound=lim.nodes_per_patch,
            )
        edges = sum(1 for o in ops if isinstance(o, AddEdge)) + sum(
            len(o.blocked_by) for o in ops if isinstance(o, CreateNode)
        )
        if edges > lim.edges_per_patch:
            raise LimitExceeded(
                f"the patch adds {edges} edges; the limit is {lim.edges_per_patch}",
                next="Split it into several patches.",
                limit="edges_per_patch",
                bound=lim.edges_per_patch,
            )

    async def patch(
        self,
        tx: Tx,
        actor: Actor,
        project_ref: str,
        ops: Sequence[Op],
        *,
        request_id: str,
        lease: str | None = None,
        release_after: ReleaseReason | None = None,
    ) -> PatchResult:
        self.check_patch_limits(ops)
        project = await self.resolve_project(tx, project_ref)
        self._writable_project(project)
        fp = fingerprint(ulid_str(project.id), ops, lease)
        stored = await tx.reserve_request(actor.id, request_id, fp)
        if stored is not None:
            if stored.fingerprint != fp or stored.response is None:
                raise IdempotencyMismatch(
                    f"request id {request_id!r} was already used for a different patch",
                    next="Use a fresh request id for new content; reuse an id only to retry the same patch.",
                )
            return from_json(stored.response, PatchResult)
        ctx = _Patch(self, tx, actor, project, request_id)
        if lease is not None:
            await ctx.use_lease(lease)
        count = sum(1 for o in ops if isinstance(o, CreateNode))
        if count:
            ctx.next_number = await tx.allocate_numbers(project.id, count)
        for index, op in enumerate(ops):
            ctx.index = index
            try:
                await ctx.apply(op)
            except SkiftError as exc:
                exc.details.setdefault("index", index)
                raise
        await ctx.check_cycles()
        if (
            release_after is not None
            and ctx.lease is not None
            and ctx.lease.node_id not in ctx.touched
        ):
            # gate-and-release releases the lease of the node it gates, never another node's
            raise FencingError(
                f"lease {lease} is not a lease on the node this patch writes",
                next="Use the lease id that Claim returned for this node.",
            )
        self.authorize(actor, ctx.intents, ctx.lease)
        await ctx.finish(release_after)
        result = PatchResult(
            request_id=request_id,
            created={alias: ctx.refs[nid] for alias, nid in ctx.aliases.items()},
            dropped=tuple(ctx.refs[n] for n in ctx.dropped),
            nodes=tuple(await self.infos(tx, [ctx.nodes[n] for n in ctx.touched])),
            parked=ctx.parked,
        )
        await tx.save_response(actor.id, request_id, to_json(result))
        return result

    # ------------------------------------------------------------------- reads

    async def get(self, tx: Tx, ref: str, project_ref: str | None) -> NodeInfo:
        node = await self.node_in(tx, ref, project_ref)
        return (await self.attributed(tx, [node]))[0]

    async def resolve_filter(
        self, tx: Tx, actor: Actor, flt: NodeFilter, *, for_work: bool
    ) -> tuple[ReadyQuery, list[Project]]:
        if for_work and (flt.status is not None or flt.held is not None):
            raise Invalid(
                "status and held filter listings only",
                next="Leave status/held out of ready and claim; use 'skift list' to see closed or held nodes.",
            )
        projects = [await self.resolve_project(tx, p) for p in flt.projects]
        parent: UUID | None = None
        if flt.parent is not None:
            parent = (
                await self.resolve_node(tx, flt.parent, projects[0] if len(projects) == 1 else None)
            ).id
        q = ReadyQuery(
            projects=tuple(p.id for p in projects),
            kinds=flt.kinds,
            labels=flt.labels,
            any_labels=flt.any_labels,
            assignee_kind=flt.assignee_kind,
            agent_only=for_work and not actor.is_user,
            max_priority_rank=flt.min_priority.rank if flt.min_priority else 4,
            parent=parent,
        )
        return q, projects

    def page_size(self, limit: int | None) -> int:
        size = min(self.limits.default_page_size, self.limits.page_size) if limit is None else limit
        if size <= 0:
            raise Invalid("the page size must be positive", next="Give --limit 1 or more.")
        if size > self.limits.page_size:
            raise LimitExceeded(
                f"a page of {size} is over the limit of {self.limits.page_size}",
                next=f"Ask for at most {self.limits.page_size} and follow next_page.",
                limit="page_size",
                bound=self.limits.page_size,
            )
        return size

    async def ready(
        self, tx: Tx, actor: Actor, flt: NodeFilter, *, limit: int | None, page: str | None
    ) -> ReadyPage:
        size = self.page_size(limit)
        offset = _decode_page(page)
        q, _ = await self.resolve_filter(tx, actor, flt, for_work=True)
        cursor = await tx.get_cursor(actor.id, flt.scope_hash())
        q = attrs.evolve(q, after_project=cursor, limit=size + 1, offset=offset)
        nodes = await tx.ready(q)
        more = len(nodes) > size
        nodes = nodes[:size]
        held, exact = await self.held_count(tx, q)
        return ReadyPage(
            nodes=tuple(await self.infos(tx, nodes)),
            held_count=held,
            next_page=_encode_page(offset + size) if more else None,
            held_count_exact=exact,
        )

    async def held_count(self, tx: Tx, q: ReadyQuery) -> tuple[int, bool]:
        """held_count up to Limits.held_count_bound, and whether it is exact: the
        store counts one past the bound, so a count that stops there says "at
        least" and the cost of a page follows the bound, not how much is held."""
        bound = self.limits.held_count_bound
        n = await tx.held_count(q, at_most=bound + 1)
        return (bound, False) if n > bound else (n, True)

    async def list_nodes(
        self,
        tx: Tx,
        actor: Actor,
        flt: NodeFilter,
        *,
        limit: int | None,
        page: str | None,
        attributed: bool = False,
    ) -> ReadyPage:
        size = self.page_size(limit)
        offset = _decode_page(page)
        q, _ = await self.resolve_filter(tx, actor, flt, for_work=False)
        q = attrs.evolve(q, limit=size + 1, offset=offset)
        nodes = await tx.list_nodes(q, status=flt.status, held=flt.held)
        more = len(nodes) > size
        nodes = nodes[:size]
        held, exact = await self.held_count(tx, attrs.evolve(q, offset=0))
        return ReadyPage(
            nodes=tuple(await (self.attributed if attributed else self.infos)(tx, nodes)),
            held_count=held,
            next_page=_encode_page(offset + size) if more else None,
            held_count_exact=exact,
        )

    # ----------------------------------------------------------------- explain

    async def explain(self, tx: Tx, ref: str, project_ref: str | None) -> Explanation:
        node = await self.node_in(tx, ref, project_ref)
        info = (await self.infos(tx, [node]))[0]
        reasons: list[Reason] = []
        own_project = await tx.project_by_id(node.project_id)
        assert own_project is not None
        if node.status is not Status.OPEN:
            reasons.append(Reason(kind="closed", detail={"status": node.status.value}))
        if own_project.archived_at is not None:
            reasons.append(
                Reason(
                    kind="archived",
                    detail={"project": own_project.slug, "at": own_project.archived_at.isoformat()},
                )
            )
        cone = await _Cone.load(self, tx, node)
        for blocker in cone.unsatisfied(node.id):
            detail: dict[str, Any] = {
                "ref": cone.ref(blocker),
                "title": blocker.title,
                "status": blocker.status.value,
            }
            if blocker.is_gate:
                detail["gate"] = True
            stall = cone.hold_upstream(blocker.id)
            if stall is not None:
                detail["held"] = stall
            reasons.append(Reason(kind="blocked_by", detail=detail))
            if blocker.is_gate and blocker.status is Status.OPEN:
                reasons.append(
                    Reason(
                        kind="waiting_on_person",
                        detail={
                            "ref": cone.ref(blocker),
                            "title": blocker.title,
                            "assignee": blocker.assignee,
                        },
                    )
                )
        kids = cone.open_children(node.id)
        if kids:
            reasons.append(
                Reason(
                    kind="open_children",
                    detail={"count": len(kids), "refs": [cone.ref(k) for k in kids]},
                )
            )
        live = (await tx.live_leases([node.id])).get(node.id)
        if live is not None:
            holder = (await tx.principals_by_id([live.holder])).get(live.holder)
            reasons.append(
                Reason(
                    kind="leased",
                    detail={
                        "holder": holder.name if holder else ulid_str(live.holder),
                        "until": live.expires_at.isoformat(),
                        "harness": live.harness,
                        "agent_ref": live.agent_ref,
                    },
                )
            )
        hold = cone.hold_of(node.id)
        if hold is not None:
            reasons.append(Reason(kind="held", detail=hold))
        if node.status is Status.OPEN:
            doom = cone.doom(node.id)
            if doom is not None:
                reasons.append(Reason(kind="no_path", detail=doom))
        reasons = [await self._name_principals(tx, r) for r in reasons]
        return Explanation(ref=info.ref, title=node.title, ready=info.ready, reasons=tuple(reasons))

    async def _name_principals(self, tx: Tx, reason: Reason) -> Reason:
        detail = dict(reason.detail)
        for key in ("by",):
            if isinstance(detail.get(key), UUID):
                pid: UUID = detail[key]
                p = (await tx.principals_by_id([pid])).get(pid)
                detail[key] = p.name if p else ulid_str(pid)
        held = detail.get("held")
        if isinstance(held, dict):
            inner = cast(dict[str, Any], held)
            detail["held"] = (
                await self._name_principals(tx, Reason(kind="held", detail=inner))
            ).detail
        return Reason(kind=reason.kind, detail=detail)

    # ------------------------------------------------------------------ leases

    def ttl(self, ttl: timedelta | None) -> timedelta:
        lim = self.limits
        if ttl is None:
            return lim.lease_ttl_default
        if ttl <= timedelta(0):
            raise Invalid(
                "a lease TTL must be positive",
                next=f"Ask for a TTL between {lim.lease_ttl_floor} and {lim.lease_ttl_ceiling}.",
            )
        return min(max(ttl, lim.lease_ttl_floor), lim.lease_ttl_ceiling)

    async def claim(
        self,
        tx: Tx,
        actor: Actor,
        ref: str,
        project_ref: str | None,
        *,
        ttl: timedelta | None = None,
        harness: str = "",
        agent_ref: str = "",
        session_ref: str = "",
    ) -> Claim:
        span = self.ttl(ttl)
        node = await self.node_in(tx, ref, project_ref, lock=True)
        owner = await tx.project_by_id(node.project_id)
        assert owner is not None
        ref_text = format_ref(owner.slug, node.number)
        self._writable_project(owner)
        if node.status is not Status.OPEN:
            raise Refused(
                f"{ref_text} is {node.status.value}, not open",
                next=f"Reopen it first ('skift reopen {ref_text} --reason …') if the work must be redone.",
            )
        self.authorize(
            actor, [_intent("claim", node=node_facts(node, ref_text, owner.slug, actor))]
        )
        ex = await self.explain(tx, ulid_str(node.id), None)
        if not ex.ready:
            first = ex.reasons[0] if ex.reasons else Reason(kind="not_ready")
            raise Refused(
                f"{ref_text} is not ready: " + _describe(ex.reasons),
                next=_next_move(first, ref_text),
                move=_move(first, ref_text),
                reasons=[to_json(r) for r in ex.reasons],
            )
        await check_cap(tx, node, owner)  # a person's hard cap on it or an ancestor (_usage)
        return await self._take(tx, actor, node, owner, span, harness, agent_ref, session_ref)

    async def claim_next(
        self,
        tx: Tx,
        actor: Actor,
        flt: NodeFilter,
        *,
        ttl: timedelta | None = None,
        harness: str = "",
        agent_ref: str = "",
        session_ref: str = "",
    ) -> Claim:
        span = self.ttl(ttl)
        q, _ = await self.resolve_filter(tx, actor, flt, for_work=True)
        scope = flt.scope_hash()
        cursor = await tx.get_cursor(actor.id, scope)
        # nodes under a spent cap are skipped, never handed out (_usage.capped_out)
        node = await tx.lock_next_ready(
            attrs.evolve(q, after_project=cursor, exclude=await capped_out(tx))
        )
        if node is not None:
            owner = await tx.project_by_id(node.project_id)
            assert owner is not None
            self.authorize(
                actor,
                [_intent("claim", node=node_facts(node, ref_of(node, owner), owner.slug, actor))],
            )
            await tx.set_cursor(actor.id, scope, node.project_id)
            return await self._take(tx, actor, node, owner, span, harness, agent_ref, session_ref)
        held, exact = await self.held_count(tx, q)
        raise NothingReady(
            "nothing ready matches" + (f" ({held}{'' if exact else '+'} held)" if held else ""),
            next="Wait for work (--wait), widen the filter, or ask a person to release held work.",
            move={"do": "wait_for_work", "held": held},
            held_count=held,
            held_count_exact=exact,
        )

    async def _take(
        self,
        tx: Tx,
        actor: Actor,
        node: Node,
        project: Project,
        ttl: timedelta,
        harness: str,
        agent_ref: str,
        session_ref: str,
    ) -> Claim:
        now = await tx.now()
        stale = await tx.unreleased_lease(node.id)
        events: list[Event] = []
        if stale is not None:
            if stale.live(now):
                # Another claimer committed a lease after our snapshot was taken
                # but before we locked the row; the whole claim is retried.
                raise TransientError(
                    f"{format_ref(project.slug, node.number)} was claimed concurrently"
                )
            await tx.update_lease(
                attrs.evolve(stale, released_at=now, release_reason=ReleaseReason.EXPIRED)
            )
            events.append(
                await self._event(
                    tx,
                    actor,
                    "expire_lease",
                    project_id=project.id,
                    node_id=node.id,
                    reason="expired",
                    before={"lease": ulid_str(stale.id)},
                )
            )
        lease = Lease(
            id=new_id(),
            org_id=tx.org_id,
            node_id=node.id,
            holder=actor.id,
            harness=harness,
            agent_ref=agent_ref,
            session_ref=session_ref,
            created_at=now,
            expires_at=now + ttl,
            ttl=ttl,
        )
        await tx.insert_lease(lease)
        events.append(
            await self._event(
                tx,
                actor,
                "claim",
                project_id=project.id,
                node_id=node.id,
                after={
                    "lease": ulid_str(lease.id),
                    "expires_at": lease.expires_at.isoformat(),
                    "harness": harness,
                    "agent_ref": agent_ref,
                },
            )
        )
        await tx.append_events(events)
        edges = await tx.edges_into([node.id])
        sources = await tx.nodes_by_id({e.from_id for e in edges})
        # who wrote the node and its predecessors: one read for all of them
        authors = await tx.authors([node.id, *sources])
        info = (await self.infos(tx, [node], authors=authors))[0]
        return Claim(
            node=info,
            lease=self.lease_info(lease, info.ref, actor.principal.name),
            inputs=tuple(await self.inputs(tx, list(sources.values()), authors)),
            comments=await _comments_hint(tx, node.id),
        )

    def lease_info(self, lease: Lease, ref: str, holder: str) -> LeaseInfo:
        return LeaseInfo(
            id=ulid_str(lease.id),
            node=ref,
            holder=holder,
            expires_at=lease.expires_at,
            created_at=lease.created_at,
            harness=lease.harness,
            agent_ref=lease.agent_ref,
            session_ref=lease.session_ref,
            released_at=lease.released_at,
            release_reason=lease.release_reason,
        )

    async def inputs(
        self, tx: Tx, sources: Sequence[Node], authors: Mapping[UUID, Authors]
    ) -> list[Input]:
        """The predecessors' results, attributed to who completed each (``authors``,
        from ``tx.authors``), with their artifacts: a fixed number of reads however
        many predecessors there are."""
        if not sources:
            return []
        ordered = sorted(sources, key=lambda n: (n.project_id, n.number))
        projects = await tx.projects_by_id({n.project_id for n in ordered})
        records = await tx.artifacts_of([n.id for n in ordered])
        by_node: dict[UUID, list[ArtifactInfo]] = {}
        for r, a in zip(records, await artifact_infos(tx, records), strict=True):
            by_node.setdefault(r.node_id, []).append(a)
        out: list[Input] = []
        for n in ordered:
            who = authors.get(n.id)
            by = who.result if who is not None else None
            out.append(
                Input(
                    ref=format_ref(projects[n.project_id].slug, n.number),
                    title=n.title,
                    result=n.result,
                    author=by.name if by else None,
                    author_kind=by.kind.value if by else None,
                    artifacts=tuple(by_node.get(n.id, ())),
                )
            )
        return out

    async def _fence(self, tx: Tx, actor: Actor, node: Node, lease_ref: str) -> Lease:
        """The node's current live lease, if ``lease_ref`` names it; else FencingError."""
        ident = parse_ulid(lease_ref.strip())
        lease = await tx.lease_by_id(ident, lock=True) if ident else None
        now = await tx.now()
        if lease is None or lease.node_id != node.id:
            raise FencingError(
                f"lease {lease_ref} is not a lease on this node",
                next="Use the lease id that Claim returned for this node, or claim it again.",
            )
        if lease.released_at is not None or lease.expires_at <= now:
            state = (
                f"released ({lease.release_reason.value if lease.release_reason else 'released'})"
                if lease.released_at is not None
                else f"expired at {lease.expires_at.isoformat()}"
            )
            raise FencingError(
                f"lease {lease_ref} is {state}; writes under it are refused",
                **_lease_gone(lease),
            )
        if lease.holder != actor.id:
            raise FencingError(
                f"lease {lease_ref} belongs to another principal",
                next="Only the holder writes under a lease; claim your own work.",
            )
        return lease

    async def heartbeat(
        self,
        tx: Tx,
        actor: Actor,
        ref: str,
        project_ref: str | None,
        lease_ref: str,
        ttl: timedelta | None,
    ) -> LeaseInfo:
        node = await self.node_in(tx, ref, project_ref, lock=True)
        lease = await self._fence(tx, actor, node, lease_ref)
        span = self.ttl(ttl) if ttl is not None else lease.ttl
        span = min(span, self.limits.lease_ttl_ceiling)
        now = await tx.now()
        renewed = attrs.evolve(lease, expires_at=now + span)
        await tx.update_lease(renewed)
        await tx.append_events(
            [
                await self._event(
                    tx,
                    actor,
                    "heartbeat",
                    project_id=node.project_id,
                    node_id=node.id,
                    after={
                        "lease": ulid_str(lease.id),
                        "expires_at": renewed.expires_at.isoformat(),
                    },
                )
            ]
        )
        info = (await self.infos(tx, [node]))[0]
        return self.lease_info(renewed, info.ref, actor.principal.name)

    async def release(
        self,
        tx: Tx,
        actor: Actor,
        ref: str,
        project_ref: str | None,
        lease_ref: str,
        reason: ReleaseReason,
    ) -> NodeInfo:
        node = await self.node_in(tx, ref, project_ref, lock=True)
        lease = await self._fence(tx, actor, node, lease_ref)
        now = await tx.now()
        await tx.update_lease(attrs.evolve(lease, released_at=now, release_reason=reason))
        await tx.append_events(
            [
                await self._event(
                    tx,
                    actor,
                    "release",
                    project_id=node.project_id,
                    node_id=node.id,
                    reason=reason.value,
                    before={"lease": ulid_str(lease.id)},
                )
            ]
        )
        return (await self.infos(tx, [node]))[0]

    async def sweep_expired(self, tx: Tx, actor: Actor, limit: int = 500) -> int:
        """Record the expiry of leases whose time ran out (readiness never waits for this)."""
        leases = await tx.expired_leases(limit)
        if not leases:
            return 0
        now = await tx.now()
        nodes = await tx.nodes_by_id([lease.node_id for lease in leases])
        events: list[Event] = []
        for lease in leases:
            await tx.update_lease(
                attrs.evolve(lease, released_at=now, release_reason=ReleaseReason.EXPIRED)
            )
            node = nodes.get(lease.node_id)
            events.append(
                await self._event(
                    tx,
                    actor,
                    "expire_lease",
                    project_id=node.project_id if node else None,
                    node_id=lease.node_id,
                    reason="expired",
                    before={"lease": ulid_str(lease.id)},
                )
            )
        await tx.append_events(events)
        return len(leases)

    async def leases(self, tx: Tx, ref: str, project_ref: str | None) -> list[LeaseInfo]:
        node = await self.node_in(tx, ref, project_ref)
        info = (await self.infos(tx, [node]))[0]
        history = await tx.lease_history(node.id)
        holders = await tx.principals_by_id({lease.holder for lease in history})
        return [
            self.lease_info(
                lease, info.ref, holders[lease.holder].name if lease.holder in holders else "?"
            )
            for lease in history
        ]

    # -------------------------------------------------------------- principals

    async def principal_infos(self, tx: Tx, principals: Sequence[Principal]) -> list[PrincipalInfo]:
        out: list[PrincipalInfo] = []
        for p in principals:
            idents = await tx.identities_of(p.id)
            out.append(
                PrincipalInfo(
                    id=ulid_str(p.id),
                    name=p.name,
                    kind=p.kind.value,
                    identities=tuple(
                        IdentityInfo(
                            id=ulid_str(i.id),
                            scheme=i.scheme.value,
                            value=ulid_str(i.id) if i.scheme is IdentityScheme.TOKEN else i.value,
                            created_at=i.created_at,
                            revoked=i.revoked_at is not None,
                        )
                        for i in idents
                    ),
                    created_at=p.created_at,
                )
            )
        return out

    async def _principal(self, tx: Tx, name_or_id: str) -> Principal:
        ident = parse_ulid(name_or_id.strip())
        found = (await tx.principals_by_id([ident])).get(ident) if ident else None
        found = found or await tx.principal_by_name(name_or_id.strip())
        if found is None:
            raise NotFound(
                f"no principal {name_or_id!r}",
                next="List them with 'skift principal list'; add one with 'skift principal add NAME --kind KIND'.",
            )
        return found

    async def add_principal(
        self, tx: Tx, actor: Actor | None, name: str, kind: PrincipalKind, uid: int | None
    ) -> Principal:
        """Add a principal (admin: a person), with a unix identity when ``uid`` is given.

        ``actor`` None is the server's own bootstrap, which no policy gates.
        """
        if actor is not None:
            self.authorize(actor, [_intent("admin")])
        clean = name.strip()
        if not clean or len(clean) > 100:
            raise Invalid(
                "a principal needs a name of 1 to 100 characters",
                next="Name it, e.g. ada or build-bot.",
            )
        if await tx.principal_by_name(clean) is not None:
            raise Conflict(
                f"a principal named {clean!r} exists",
                next="Choose another name, or attach an identity to it.",
            )
        now = await tx.now()
        p = Principal(id=new_id(), org_id=tx.org_id, name=clean, kind=kind, created_at=now)
        await tx.insert_principal(p)
        if uid is not None:
            await self._attach(tx, p, IdentityScheme.UNIX, str(uid))
        if actor is not None:
            await tx.append_events(
                [
                    await self._event(
                        tx,
                        actor,
                        "add_principal",
                        after={"name": clean, "kind": kind.value, "uid": uid},
                    )
                ]
            )
        return p

    async def _attach(self, tx: Tx, p: Principal, scheme: IdentityScheme, value: str) -> Identity:
        if scheme is IdentityScheme.UNIX and not value.isdigit():
            raise Invalid(f"{value!r} is not a uid", next="Give the numeric uid, e.g. 1000.")
        ident = Identity(
            id=new_id(),
            org_id=tx.org_id,
            principal_id=p.id,
            scheme=scheme,
            value=value,
            created_at=await tx.now(),
        )
        await tx.insert_identity(ident)
        return ident

    async def attach_identity(
        self, tx: Tx, actor: Actor, principal: str, scheme: str, value: str
    ) -> Principal:
        self.authorize(actor, [_intent("admin")])
        p = await self._principal(tx, principal)
        try:
            kind = IdentityScheme(scheme)
        except ValueError:
            raise Invalid(
                f"identity scheme {scheme!r} is not one of unix, oidc, tailscale",
                next="Tokens are made with create_token; attach unix, oidc or tailscale identities.",
            ) from None
        if kind in (IdentityScheme.TOKEN, IdentityScheme.LOCAL):
            raise Invalid(
                f"{scheme} identities are not attached by hand",
                next="Use create_token for a bearer token.",
            )
        await self._attach(tx, p, kind, value.strip())
        await tx.append_events(
            [
                await self._event(
                    tx, actor, "attach_identity", after={"principal": p.name, "scheme": kind.value}
                )
            ]
        )
        return p

    async def create_token(self, tx: Tx, actor: Actor, principal: str) -> TokenInfo:
        self.authorize(actor, [_intent("admin")])
        p = await self._principal(tx, principal)
        secret = "skt_" + secrets.token_urlsafe(32)
        ident = await self._attach(tx, p, IdentityScheme.TOKEN, token_digest(secret))
        await tx.append_events(
            [
                await self._event(
                    tx,
                    actor,
                    "create_token",
                    after={"principal": p.name, "token_id": ulid_str(ident.id)},
                )
            ]
        )
        return TokenInfo(
            id=ulid_str(ident.id), principal=p.name, token=secret, created_at=ident.created_at
        )

    async def revoke_token(self, tx: Tx, actor: Actor, token_id: str) -> None:
        self.authorize(actor, [_intent("admin")])
        ident_id = parse_ulid(token_id.strip())
        ident = await tx.identity_by_id(ident_id) if ident_id else None
        if ident is None or ident.scheme is not IdentityScheme.TOKEN:
            raise NotFound(f"no token {token_id!r}", next="'skift principal list' shows token ids.")
        if not await tx.revoke_identity(ident.id):
            raise Refused(f"token {token_id} is already revoked", next="Nothing to do.")
        await tx.append_events(
            [await self._event(tx, actor, "revoke_token", before={"token_id": token_id})]
        )

    # ------------------------------------------------------------------ events

    async def event_infos(self, tx: Tx, events: Sequence[Event]) -> list[EventInfo]:
        principals = await tx.principals_by_id({e.principal_id for e in events})
        projects = await tx.projects_by_id({e.project_id for e in events if e.project_id})
        nodes = await tx.nodes_by_id({e.node_id for e in events if e.node_id})
        out: list[EventInfo] = []
        for e in events:
            proj = projects.get(e.project_id) if e.project_id else None
            node = nodes.get(e.node_id) if e.node_id else None
            node_proj = projects.get(node.project_id) if node else None
            out.append(
                EventInfo(
                    id=ulid_str(e.id),
                    op=e.op,
                    project=proj.slug if proj else None,
                    node=format_ref(node_proj.slug, node.number) if node and node_proj else None,
                    principal=principals[e.principal_id].name
                    if e.principal_id in principals
                    else "?",
                    principal_kind=e.principal_kind.value,
                    identity_scheme=e.identity_scheme,
                    reason=e.reason,
                    request_id=e.request_id,
                    before=e.before,
                    after=e.after,
                    occurred_at=e.occurred_at,
                )
            )
        return out


async def _comments_hint(tx: Tx, node_id: UUID) -> CommentsHint:
    """A claim's comments hint: how many comments are unresolved and when the newest was written."""
    unresolved, newest = await tx.comment_hint(node_id)
    return CommentsHint(unresolved=unresolved, newest_at=newest)


def token_digest(secret: str) -> str:
    """How a bearer token is stored and looked up: ``sha256:<lowercase hex>`` of the secret."""
    return "sha256:" + hashlib.sha256(secret.encode()).hexdigest()


_intent = intent  # the name the engine and _comments use


def node_facts(
    node: Node,
    ref: str,
    project_slug: str,
    actor: Actor,
    *,
    new: bool = False,
    in_my_lease: bool = False,
) -> dict[str, Any]:
    """What the policy knows about a node: whose it is and what it is, not its whole record."""
    return {
        "ref": ref,
        "project": project_slug,
        "gate": node.is_gate,
        "status": node.status.value,
        "kind": node.kind,
        "filed_by_me": node.created_by == actor.id,
        "new": new,
        "in_my_lease": in_my_lease,
    }


def ref_of(node: Node, project: Project) -> str:
    return format_ref(project.slug, node.number)


def _encode_page(offset: int) -> str:
    return f"o{offset}"


def _decode_page(page: str | None) -> int:
    if not page:
        return 0
    if page.startswith("o") and page[1:].isdigit():
        return int(page[1:])
    raise Invalid(
        f"{page!r} is not a page token",
        next="Pass next_page exactly as a previous page returned it.",
    )


def _describe(reasons: Sequence[Reason]) -> str:
    parts: list[str] = []
    for r in reasons:
        d = r.detail
        if r.kind == "blocked_by":
            parts.append(f"blocked by {d['ref']} ({d['status']})")
        elif r.kind == "open_children":
            parts.append(f"{d['count']} open children")
        elif r.kind == "leased":
            parts.append(f"leased by {d['holder']} until {d['until']}")
        elif r.kind == "held":
            parts.append(f"held on {d['on']} by {d['by']}: {d['reason']}")
        elif r.kind == "waiting_on_person":
            parts.append(f"waiting on a person ({d['ref']})")
        elif r.kind == "archived":
            parts.append(f"its project {d['project']} is archived")
        elif r.kind == "no_path":
            parts.append("no path to readiness: " + str(d.get("why", "")))
        elif r.kind == "closed":
            parts.append(f"it is {d['status']}")
    return "; ".join(parts) or "not ready"


def _lease_gone(lease: Lease) -> dict[str, Any]:
    """The next move after writing under a lease that ended: a gated node waits for its person."""
    if lease.release_reason is ReleaseReason.GATE:
        return {
            "next": "You gated this node: it is ready again when the person completes the gate "
            "(its result is then an input); take other work meanwhile.",
            "move": {"do": "await_gate"},
        }
    if lease.release_reason is ReleaseReason.COMPLETE:
        return {"next": "The node is complete; nothing to do.", "move": {"do": "nothing"}}
    return _lease_gone_default


_lease_gone_default: dict[str, Any] = {
    "next": "Stop work on this attempt; claim the node again if it is still ready.",
    "move": {"do": "stop_attempt"},
}


def _move(reason: Reason, ref: str) -> dict[str, Any]:
    """The structured form of :func:`_next_move` (each surface words it)."""
    d = reason.detail
    if reason.kind == "held":
        return {"do": "ask_unhold", "ref": str(d.get("on", ref))}
    if reason.kind == "blocked_by":
        return {"do": "finish_blocker", "ref": ref, "blocker": str(d["ref"])}
    if reason.kind == "leased":
        return {"do": "take_other_work"}
    if reason.kind == "open_children":
        return {"do": "claim_children", "ref": ref}
    return {"do": "explain", "ref": ref}


def _next_move(reason: Reason, ref: str) -> str:
    d = reason.detail
    if reason.kind == "held":
        return f"Ask a person to release the hold ('skift unhold {d.get('on', ref)} --reason …'), or take other work."
    if reason.kind == "blocked_by":
        return (
            f"Finish {d['ref']} first, or take other work ('skift explain {ref}' shows the chain)."
        )
    if reason.kind == "leased":
        return "Someone is working on it; take other work, or wait for the lease to end."
    if reason.kind == "open_children":
        return "Its children are the work; claim one of them."
    return f"See 'skift explain {ref}'."


class _Patch:
    """The state of one patch while its operations apply."""

    def __init__(
        self, engine: Engine, tx: Tx, actor: Actor, project: Project, request_id: str
    ) -> None:
        self.e = engine
        self.tx = tx
        self.actor = actor
        self.project = project
        self.request_id = request_id
        self.aliases: dict[str, UUID] = {}
        self.nodes: dict[UUID, Node] = {}
        self.refs: dict[UUID, str] = {}
        self.touched: list[UUID] = []
        self.dropped: list[UUID] = []
        self.events: list[Event] = []
        self.arcs: list[tuple[UUID, UUID]] = []
        self.projects: dict[UUID, Project] = {project.id: project}
        self.lease: Lease | None = None
        self.next_number = 0
        self.parked = 0
        self.now: datetime | None = None
        self.created: set[UUID] = set()
        self.intents: list[dict[str, Any]] = []
        self.index = 0
        # Nodes and edges this patch creates are written in batches (one statement for a
        # 1,000-node decomposition instead of a thousand): flushed before anything reads
        # the store (any operation but create_node, a reference by number, an ancestor
        # walk) and before the cycle check.
        self.pending_nodes: list[Node] = []
        self.pending_edges: list[Edge] = []
        self.new_edges: set[tuple[UUID, UUID]] = set()

    async def flush(self) -> None:
        if self.pending_nodes:
            nodes, self.pending_nodes = self.pending_nodes, []
            await self.tx.insert_nodes(nodes)
        if self.pending_edges:
            edges, self.pending_edges = self.pending_edges, []
            await self.tx.insert_edges(edges)

    async def facts(self, node: Node) -> dict[str, Any]:
        """The policy's facts about a node as this request finds it."""
        in_lease = False
        if self.lease is not None:
            if node.id == self.lease.node_id:
                in_lease = True
            elif node.created_by == self.actor.id:
                await self.flush()
                for above in await self.tx.ancestors(node.id):
                    if above.id == self.lease.node_id:
                        in_lease = True
                        break
                    if above.created_by != self.actor.id:
                        break
        project = await self._project(node.project_id)
        ref = self.refs.get(node.id) or format_ref(project.slug, node.number)
        return node_facts(
            node, ref, project.slug, self.actor, new=node.id in self.created, in_my_lease=in_lease
        )

    def intend(self, action: str, **parts: Any) -> None:
        self.intents.append(_intent(action, index=self.index, **parts))

    async def use_lease(self, lease_ref: str) -> None:
        ident = parse_ulid(lease_ref.strip())
        lease = await self.tx.lease_by_id(ident, lock=True) if ident else None
        now = await self.tx.now()
        if (
            lease is None
            or lease.released_at is not None
            or lease.expires_at <= now
            or lease.holder != self.actor.id
        ):
            why = "unknown"
            if lease is not None:
                why = (
                    f"released ({lease.release_reason.value if lease.release_reason else 'released'})"
                    if lease.released_at is not None
                    else "expired"
                    if lease.expires_at <= now
                    else "held by another principal"
                )
            gone = (
                _lease_gone(lease)
                if lease is not None and lease.released_at is not None
                else _lease_gone_default
            )
            raise FencingError(f"lease {lease_ref} is {why}; this patch is refused", **gone)
        self.lease = lease

    async def _project(self, project_id: UUID) -> Project:
        if project_id not in self.projects:
            p = await self.tx.project_by_id(project_id)
            assert p is not None
            self.projects[project_id] = p
        return self.projects[project_id]

    def _touch(self, node: Node) -> None:
        self.nodes[node.id] = node
        if node.id not in self.touched:
            self.touched.append(node.id)

    async def node(self, ref: str) -> Node:
        if ref in self.aliases:
            return self.nodes[self.aliases[ref]]
        await self.flush()
        node = await self.e.resolve_node(self.tx, ref, self.project, lock=True)
        if node.id in self.nodes:
            return self.nodes[node.id]
        self.nodes[node.id] = node
        project = await self._project(node.project_id)
        self.refs[node.id] = format_ref(project.slug, node.number)
        return node

    async def guard(self, node: Node, *, gate_lease: bool = True) -> None:
        """A write to ``node``: its project must be live, and a live lease on it must be ours."""
        project = await self._project(node.project_id)
        self.e._writable_project(project)  # pyright: ignore[reportPrivateUsage]
        if node.id in self.created:
            return  # created by this patch: nobody can hold a lease on it yet
        if self.lease is not None and self.lease.node_id == node.id:
            # use_lease checked (under the lease row's lock) that our lease is live, and a
            # node has at most one unreleased lease: the live lease on it is ours
            return
        leases = await self.tx.live_leases([node.id])
        live = leases.get(node.id)
        if live is None:
            return
        if self.lease is not None and live.id == self.lease.id:
            return
        holder = (await self.tx.principals_by_id([live.holder])).get(live.holder)
        raise Conflict(
            f"{self.refs[node.id]} is leased by {holder.name if holder else 'another principal'} "
            f"until {live.expires_at.isoformat()}",
            next="Writes that change a leased node carry its lease; wait for it to end, or ask its holder.",
        )

    async def event(self, op: str, node: Node | None, **kw: Any) -> None:
        self.events.append(
            await self.e._event(  # pyright: ignore[reportPrivateUsage]
                self.tx,
                self.actor,
                op,
                project_id=node.project_id if node else self.project.id,
                node_id=node.id if node else None,
                request_id=self.request_id,
                **kw,
            )
        )

    async def write(self, before: Node, after: Node) -> None:
        after = attrs.evolve(after, updated_at=await self.tx.now())
        await self.tx.update_node(after)
        self._touch(after)

    async def apply(self, op: Op) -> None:
        if not isinstance(op, CreateNode):
            await self.flush()
        match op:
            case CreateNode():
                await self.create(op)
            case UpdateNode():
                await self.update(op)
            case DropNode():
                await self.drop(op)
            case CompleteNode():
                await self.complete(op)
            case ReopenNode():
                await self.reopen(op)
            case HoldNode():
                await self.hold(op, hold=True)
            case UnholdNode():
                await self.hold(op, hold=False)
            case AddEdge():
                await self.add_edge(op)
            case RemoveEdge():
                await self.remove_edge(op)
            case AttachArtifact():
                await self.attach(op)
            case AddComment():
                from ._comments import add_in_patch  # the comment rules live in _comments

                await add_in_patch(self, op)

    def _labels(self, labels: Sequence[str]) -> tuple[str, ...]:
        lim = self.e.limits
        clean = tuple(dict.fromkeys(label.strip() for label in labels if label.strip()))
        if len(clean) > lim.labels_per_node:
            raise LimitExceeded(
                f"{len(clean)} labels; the limit is {lim.labels_per_node}",
                next="Use fewer labels.",
                limit="labels_per_node",
                bound=lim.labels_per_node,
            )
        for label in clean:
            _check_size("label", label, lim.label_chars, chars=True)
        return clean

    def _title(self, title: str) -> str:
        text = title.strip()
        if not text:
            raise Invalid(
                "a node needs a title", next="Give a short title saying what the work is."
            )
        _check_size("title", text, self.e.limits.title_chars, chars=True)
        return text

    async def _parent(self, ref: str, child_project: UUID) -> Node:
        parent = await self.node(ref)
        if parent.project_id != child_project:
            raise Invalid(
                f"{self.refs[parent.id]} is in another project; a parent must be in the child's project",
                next="Link across projects with a blocks edge (add_edge) instead.",
            )
        if parent.status is not Status.OPEN:
            raise Refused(
                f"{self.refs[parent.id]} is {parent.status.value}; children go under open work",
                next=f"Reopen {self.refs[parent.id]} first, or file the child elsewhere.",
            )
        await self.guard(parent)
        return parent

    async def create(self, op: CreateNode) -> None:
        title = self._title(op.title)
        if op.body:
            _check_size("body", op.body, (await self.e.sizes(self.tx)).body_bytes)
        if op.alias is not None:
            if not _ALIAS_RE.match(op.alias) or parse_ulid(op.alias) is not None:
                raise Invalid(
                    f"{op.alias!r} is not a usable alias",
                    next="Use a short name of letters, digits, _ . - starting with a letter, e.g. research.",
                )
            if op.alias in self.aliases:
                raise Invalid(
                    f"alias {op.alias!r} is used twice in this patch",
                    next="Give each created node its own alias.",
                )
        parent_id: UUID | None = None
        if op.parent is not None:
            parent_id = (await self._parent(op.parent, self.project.id)).id
        now = await self.tx.now()
        number = self.next_number
        self.next_number += 1
        node = Node(
            id=new_id(),
            org_id=self.tx.org_id,
            project_id=self.project.id,
            number=number,
            parent_id=parent_id,
            kind=op.kind.strip() or "task",
            title=title,
            body=op.body,
            priority=op.priority,
            assignee_kind=op.assignee_kind,
            assignee=op.assignee or None,
            labels=self._labels(op.labels),
            context_id=uuid.uuid4(),
            created_by=self.actor.id,
            created_at=now,
            updated_at=now,
        )
        self.pending_nodes.append(node)
        self.refs[node.id] = format_ref(self.project.slug, number)
        self.created.add(node.id)
        self._touch(node)
        self.intend(
            "create",
            node=await self.facts(node),
            parent=await self.facts(self.nodes[parent_id]) if parent_id else None,
        )
        if op.alias is not None:
            self.aliases[op.alias] = node.id
        if parent_id is not None:
            self.arcs.append((parent_id, node.id))
        await self.event("create_node", node, after=_node_fields(node))
        for blocker_ref in op.blocked_by:
            await self._link(await self.node(blocker_ref), node)

    async def _link(self, source: Node, target: Node) -> None:
        if source.id == target.id:
            raise CycleError(
                f"{self.refs[source.id]} cannot block itself",
                next="Remove the edge; a node never waits on itself.",
            )
        self.e._writable_project(await self._project(source.project_id))  # pyright: ignore[reportPrivateUsage]
        await self.guard(target)
        self.intend("link", **{"from": await self.facts(source), "to": await self.facts(target)})
        if target.id in self.created:
            # a node this patch created has no edges but the ones this patch added
            if (source.id, target.id) in self.new_edges:
                return
        else:
            existing = await self.tx.edges_into([target.id])
            if any(e.from_id == source.id and e.kind is EdgeKind.BLOCKS for e in existing):
                return
        edge = Edge(
            org_id=self.tx.org_id,
            from_id=source.id,
            to_id=target.id,
            created_at=await self.tx.now(),
        )
        self.new_edges.add((source.id, target.id))
        if target.id in self.created or source.id in self.created:
            self.pending_edges.append(edge)  # after the nodes it joins, in flush()
        else:
            await self.tx.insert_edges([edge])
        self.arcs.append((target.id, source.id))
        self._touch(target)
        await self.event(
            "add_edge",
            target,
            after={"from": self.refs[source.id], "to": self.refs[target.id], "kind": "blocks"},
        )

    def _edge_kind(self, kind: str) -> None:
        if kind != EdgeKind.BLOCKS.value:
            raise Invalid(
                f"edge kind {kind!r} is not supported", next="Use kind 'blocks' (the default)."
            )

    async def add_edge(self, op: AddEdge) -> None:
        self._edge_kind(op.kind)
        await self._link(await self.node(op.from_), await self.node(op.to))

    async def remove_edge(self, op: RemoveEdge) -> None:
        self._edge_kind(op.kind)
        source, target = await self.node(op.from_), await self.node(op.to)
        self.e._writable_project(await self._project(source.project_id))  # pyright: ignore[reportPrivateUsage]
        await self.guard(target)
        self.intend("unlink", **{"from": await self.facts(source), "to": await self.facts(target)})
        if not await self.tx.delete_edge(source.id, target.id, op.kind):
            raise NotFound(
                f"{self.refs[source.id]} does not block {self.refs[target.id]}",
                next=f"'skift explain {self.refs[target.id]}' lists what blocks it.",
            )
        self._touch(target)
        await self.event(
            "remove_edge",
            target,
            before={"from": self.refs[source.id], "to": self.refs[target.id], "kind": op.kind},
        )

    async def update(self, op: UpdateNode) -> None:
        node = await self.node(op.node)
        await self.guard(node)
        changes: dict[str, Any] = {}
        if op.title is not None:
            changes["title"] = self._title(op.title)
        if op.body is not None:
            _check_size("body", op.body, (await self.e.sizes(self.tx)).body_bytes)
            changes["body"] = op.body
        if op.kind is not None:
            changes["kind"] = op.kind.strip() or "task"
        if op.priority is not None:
            changes["priority"] = op.priority
        if op.labels is not None:
            changes["labels"] = self._labels(op.labels)
        if op.assignee is not None:
            changes["assignee"] = op.assignee or None
        if op.assignee_kind is not None:
            if op.assignee_kind == "":
                changes["assignee_kind"] = None
            else:
                try:
                    changes["assignee_kind"] = AssigneeKind(op.assignee_kind)
                except ValueError:
                    raise Invalid(
                        f"assignee_kind {op.assignee_kind!r} is not agent or user",
                        next="Use agent, user, or an empty string to unset it.",
                    ) from None
        if op.parent is not None:
            if op.parent == "":
                new_parent: UUID | None = None
            else:
                parent = await self._parent(op.parent, node.project_id)
                if parent.id == node.id:
                    raise CycleError(
                        f"{self.refs[node.id]} cannot contain itself", next="Choose another parent."
                    )
                new_parent = parent.id
            if new_parent != node.parent_id:
                if node.parent_id is not None:
                    old_parent = await self.node(ulid_str(node.parent_id))
                    await self.guard(old_parent)
                    self._touch(old_parent)
                if new_parent is not None:
                    self.arcs.append((new_parent, node.id))
                    self._touch(self.nodes[new_parent])
                changes["parent_id"] = new_parent
        updated = attrs.evolve(node, **changes)
        changed = [
            "parent" if k == "parent_id" else k for k, v in changes.items() if getattr(node, k) != v
        ]
        money = await set_budget(self.tx, node.id, "node", budget=op.budget, cap=op.cap)
        if money is not None:  # budgets live beside the node (_usage); "cap" is a person's call
            changed += list(money[1])
            await self.event("set_budget", node, before=money[0], after=money[1])
        new_parent_id = changes.get("parent_id")
        self.intend(
            "update",
            node=await self.facts(node),
            parent=await self.facts(self.nodes[new_parent_id]) if new_parent_id else None,
            changes=changed,
        )
        if updated == node:
            self._touch(node)
            return
        before, after = _changed(node, updated)
        await self.write(node, updated)
        await self.event("update_node", updated, before=before, after=after)

    async def _end_lease(self, node: Node) -> None:
        if (
            self.lease is not None
            and self.lease.node_id == node.id
            and self.lease.released_at is None
        ):
            now = await self.tx.now()
            self.lease = attrs.evolve(
                self.lease, released_at=now, release_reason=ReleaseReason.COMPLETE
            )
            await self.tx.update_lease(self.lease)

    async def drop(self, op: DropNode) -> None:
        node = await self.node(op.node)
        reason = self.e._reason(op.reason, "drop")  # pyright: ignore[reportPrivateUsage]
        if node.status is Status.DROPPED:
            raise Refused(f"{self.refs[node.id]} is already dropped", next="Nothing to do.")
        targets = [node]
        if op.cascade is not None:
            targets = await self._cascade(node)
            if len(targets) > op.cascade.max_nodes:
                raise Refused(
                    f"dropping {self.refs[node.id]} with cascade would drop {len(targets)} nodes; "
                    f"the bound is {op.cascade.max_nodes}",
                    next=f"Read what it takes ('skift explain', 'skift list'), then set cascade.max_nodes to "
                    f"{len(targets)} or more, or drop without cascade.",
                    move={"do": "raise_cascade_bound", "count": len(targets)},
                    count=len(targets),
                    bound=op.cascade.max_nodes,
                )
        for target in targets:
            await self.guard(target)
            self.intend("drop", node=await self.facts(target), cascade=target is not node)
            dropped = attrs.evolve(target, status=Status.DROPPED)
            await self.write(target, dropped)
            await self._end_lease(target)
            self.dropped.append(target.id)
            await self.event(
                "drop_node",
                dropped,
                reason=reason,
                before={"status": target.status.value},
                after={
                    "status": "dropped",
                    "cascade_from": self.refs[node.id] if target is not node else None,
                },
            )

    async def _cascade(self, root: Node) -> list[Node]:
        """The node, everything downstream of it through blocks edges, and their descendants."""
        order: list[UUID] = [root.id]
        seen = {root.id}
        frontier = [root.id]
        while frontier:
            nxt: list[UUID] = []
            for e in await self.tx.edges_out_of(frontier):
                if e.to_id not in seen:
                    seen.add(e.to_id)
                    nxt.append(e.to_id)
            for c in await self.tx.children_of(frontier):
                if c.id not in seen:
                    seen.add(c.id)
                    nxt.append(c.id)
            order.extend(nxt)
            frontier = nxt
        out: list[Node] = []
        for nid in order:
            if nid not in self.nodes:
                loaded = (await self.tx.nodes_by_id([nid], lock=True))[nid]
                self.nodes[nid] = loaded
                project = await self._project(loaded.project_id)
                self.refs[nid] = format_ref(project.slug, loaded.number)
            n = self.nodes[nid]
            if n.status is not Status.DROPPED:
                out.append(n)
        return out

    async def complete(self, op: CompleteNode) -> None:
        node = await self.node(op.node)
        if op.result:  # an empty result needs no reading of the organization's limits
            _check_size("result", op.result, (await self.e.sizes(self.tx)).result_bytes)
        if node.status is not Status.OPEN:
            raise Refused(
                f"{self.refs[node.id]} is already {node.status.value}",
                next=f"Reopen it first ('skift reopen {self.refs[node.id]} --reason …') to complete it again.",
            )
        await self.guard(node)
        self.intend("complete", node=await self.facts(node))
        await self._attach(node, op.artifacts)
        done = attrs.evolve(node, status=Status.DONE, result=op.result)
        await self.write(node, done)
        await self._end_lease(node)
        await self.event(
            "complete_node",
            done,
            before={"status": "open"},
            after={"status": "done", "result": op.result},
        )

    async def attach(self, op: AttachArtifact) -> None:
        node = await self.node(op.node)
        await self.guard(node)
        self.intend("attach", node=await self.facts(node))
        await self._attach(node, (op.artifact,))

    async def _attach(self, node: Node, artifacts: Sequence[Artifact]) -> None:
        """Check and store artifacts on a node (the rules are in _artifacts)."""
        if not artifacts:
            return
        sizes = await self.e.sizes(self.tx)
        records = await prepare_artifacts(self.tx, sizes, node.id, artifacts, self.actor.id)
        await self.tx.insert_artifacts(records)
        self._touch(node)
        for r in records:
            await self.event("attach_artifact", node, after=artifact_event(r))

    async def reopen(self, op: ReopenNode) -> None:
        node = await self.node(op.node)
        reason = self.e._reason(op.reason, "reopen")  # pyright: ignore[reportPrivateUsage]
        if node.status is Status.OPEN:
            raise Refused(f"{self.refs[node.id]} is already open", next="Nothing to do.")
        await self.guard(node)
        self.intend("reopen", node=await self.facts(node))
        opened = attrs.evolve(node, status=Status.OPEN)
        await self.write(node, opened)
        await self.event(
            "reopen_node",
            opened,
            reason=reason,
            before={"status": node.status.value},
            after={"status": "open"},
        )

    async def hold(self, op: HoldNode | UnholdNode, *, hold: bool) -> None:
        node = await self.node(op.node)
        self.intend("hold" if hold else "unhold", node=await self.facts(node))
        reason = self.e._reason(op.reason, "hold" if hold else "unhold")  # pyright: ignore[reportPrivateUsage]
        project = await self._project(node.project_id)
        self.e._writable_project(project)  # pyright: ignore[reportPrivateUsage]
        now = await self.tx.now()
        if hold:
            if node.hold is not None:
                raise Refused(
                    f"{self.refs[node.id]} is already held ({node.hold.reason})",
                    next=f"Release it first ('skift unhold {self.refs[node.id]} --reason …') to hold it anew.",
                )
            before_ready = await self._open_subtree(node)
            changed = attrs.evolve(node, hold=Hold(at=now, by=self.actor.id, reason=reason))
        else:
            if node.hold is None:
                raise Refused(
                    f"{self.refs[node.id]} carries no hold of its own",
                    next=f"'skift explain {self.refs[node.id]}' shows where a hold on it comes from.",
                )
            changed = attrs.evolve(node, hold=None)
            before_ready = 0
        await self.write(node, changed)
        if hold:
            self.parked += before_ready
        await self.event("hold_node" if hold else "unhold_node", changed, reason=reason)

    async def _open_subtree(self, node: Node) -> int:
        """How many open nodes a hold on ``node`` parks: it and its open descendants."""
        count = 1 if node.status is Status.OPEN else 0
        frontier = [node.id]
        seen = {node.id}
        while frontier:
            kids = [c for c in await self.tx.children_of(frontier) if c.id not in seen]
            seen.update(c.id for c in kids)
            count += sum(1 for c in kids if c.status is Status.OPEN)
            frontier = [c.id for c in kids]
        return count

    async def check_cycles(self) -> None:
        await self.flush()
        if not self.arcs:
            return
        # The store already holds this patch's writes, so walking it from the new arcs sees the
        # resulting graph; an arc added and then removed again in the patch is not in it.
        arcs = await self.tx.wait_arcs_from({waited for _, waited in self.arcs})
        adj: dict[UUID, list[UUID]] = {}
        for waiter, waited in arcs:
            adj.setdefault(waiter, []).append(waited)
        cycle = _find_cycle(adj)
        if cycle is None:
            return
        names = await self._names(cycle)
        chain = " waits on ".join(names[n] for n in [*cycle, cycle[0]])
        raise CycleError(
            f"this patch would make the work wait on itself: {chain}",
            next="Remove one of these edges or parent links; a parent waits on its children, so a child cannot also block its parent.",
            cycle=[names[n] for n in cycle],
        )

    async def _names(self, ids: Sequence[UUID]) -> dict[UUID, str]:
        missing = [i for i in ids if i not in self.refs]
        if missing:
            for nid, n in (await self.tx.nodes_by_id(missing)).items():
                project = await self._project(n.project_id)
                self.refs[nid] = format_ref(project.slug, n.number)
        return {i: self.refs.get(i, ulid_str(i)) for i in ids}

    async def finish(self, release_after: ReleaseReason | None) -> None:
        now = await self.tx.now()
        if self.lease is not None and self.lease.released_at is None:
            if release_after is not None:
                self.lease = attrs.evolve(self.lease, released_at=now, release_reason=release_after)
                await self.tx.update_lease(self.lease)
                node = (
                    self.nodes.get(self.lease.node_id)
                    or (await self.tx.nodes_by_id([self.lease.node_id]))[self.lease.node_id]
                )
                await self.event(
                    "release",
                    node,
                    reason=release_after.value,
                    before={"lease": ulid_str(self.lease.id)},
                )
            else:
                span = self.lease.ttl
                self.lease = attrs.evolve(
                    self.lease, expires_at=max(self.lease.expires_at, now + span)
                )
                await self.tx.update_lease(self.lease)
        await self.tx.append_events(self.events)


def _find_cycle(adj: dict[UUID, list[UUID]]) -> list[UUID] | None:
    """A cycle in the directed graph ``adj``, as a list of nodes, or None."""
    white, grey, black = 0, 1, 2
    color: dict[UUID, int] = {}
    parent: dict[UUID, UUID] = {}
    for succ in adj.values():
        succ.sort()
    for start in sorted(adj):
        if color.get(start, white) != white:
            continue
        stack: list[tuple[UUID, int]] = [(start, 0)]
        color[start] = grey
        while stack:
            node, i = stack[-1]
            succ = adj.get(node, [])
            if i < len(succ):
                stack[-1] = (node, i + 1)
                nxt = succ[i]
                c = color.get(nxt, white)
                if c == white:
                    color[nxt] = grey
                    parent[nxt] = node
                    stack.append((nxt, 0))
                elif c == grey:
                    cycle = [node]
                    while cycle[-1] != nxt:
                        cycle.append(parent[cycle[-1]])
                    cycle.reverse()
                    return cycle
            else:
                color[node] = black
                stack.pop()
    return None


class _Cone:
    """The upstream cone of one node, loaded once for Explain.

    It answers which blockers are unsatisfied, where a hold upstream stalls the
    node, and whether the node has any path to readiness at all.
    """

    def __init__(self, engine: Engine) -> None:
        self.e = engine
        self.nodes: dict[UUID, Node] = {}
        self.blockers: dict[UUID, list[UUID]] = {}
        self.children: dict[UUID, list[UUID]] = {}
        self.projects: dict[UUID, Project] = {}
        self.ancestors: dict[UUID, list[Node]] = {}

    @classmethod
    async def load(cls, engine: Engine, tx: Tx, root: Node, bound: int = 5000) -> _Cone:
        cone = cls(engine)
        cone.nodes[root.id] = root
        frontier = [root.id]
        while frontier and len(cone.nodes) < bound:
            edges = await tx.edges_into(frontier)
            kids = await tx.children_of(frontier)
            for f in frontier:
                cone.blockers.setdefault(f, [])
                cone.children.setdefault(f, [])
            new_ids = {e.from_id for e in edges} - set(cone.nodes)
            loaded = await tx.nodes_by_id(new_ids) if new_ids else {}
            for e in edges:
                cone.blockers[e.to_id].append(e.from_id)
            for k in kids:
                assert k.parent_id is not None
                cone.children[k.parent_id].append(k.id)
                loaded.setdefault(k.id, k)
            for nid, n in loaded.items():
                if nid not in cone.nodes:
                    cone.nodes[nid] = n
            # only open nodes can hold anything up further
            frontier = [
                nid
                for nid in loaded
                if cone.nodes[nid].status is Status.OPEN and nid not in cone.blockers
            ]
        cone.projects = await tx.projects_by_id({n.project_id for n in cone.nodes.values()})
        for nid, n in cone.nodes.items():
            if n.status is Status.OPEN:
                # a node without a parent has no ancestors: no query (a chain of 100 blockers
                # made 100 of them)
                cone.ancestors[nid] = await tx.ancestors(nid) if n.parent_id is not None else []
        return cone

    def ref(self, node: Node) -> str:
        return format_ref(self.projects[node.project_id].slug, node.number)

    def unsatisfied(self, nid: UUID) -> list[Node]:
        out = [
            self.nodes[b] for b in self.blockers.get(nid, []) if not self.nodes[b].satisfies_edge()
        ]
        return sorted(out, key=lambda n: (n.project_id, n.number))

    def open_children(self, nid: UUID) -> list[Node]:
        out = [
            self.nodes[c] for c in self.children.get(nid, []) if self.nodes[c].status is Status.OPEN
        ]
        return sorted(out, key=lambda n: n.number)

    def hold_of(self, nid: UUID) -> dict[str, Any] | None:
        """The hold that parks this node (its own, an ancestor's, or its project's)."""
        node = self.nodes[nid]
        for holder in [node, *self.ancestors.get(nid, [])]:
            if holder.hold is not None:
                return {
                    "on": self.ref(holder),
                    "by": holder.hold.by,
                    "reason": holder.hold.reason,
                    "at": holder.hold.at.isoformat(),
                    "group": ulid_str(holder.hold.group) if holder.hold.group else None,
                }
        project = self.projects[node.project_id]
        if project.hold is not None:
            return {
                "on": f"project {project.slug}",
                "by": project.hold.by,
                "reason": project.hold.reason,
                "at": project.hold.at.isoformat(),
                "group": ulid_str(project.hold.group) if project.hold.group else None,
            }
        return None

    def hold_upstream(self, nid: UUID) -> dict[str, Any] | None:
        """The first hold found walking up from an open blocker, so Explain traces a stall to it."""
        seen: set[UUID] = set()
        stack = [nid]
        while stack:
            cur = stack.pop(0)
            if cur in seen or cur not in self.nodes or self.nodes[cur].status is not Status.OPEN:
                continue
            seen.add(cur)
            found = self.hold_of(cur)
            if found is not None:
                return found
            stack.extend(b.id for b in self.unsatisfied(cur))
            stack.extend(c.id for c in self.open_children(cur))
        return None

    def doom(self, nid: UUID) -> dict[str, Any] | None:
        """Why a node can never become ready through ordinary work, or None if it can.

        A node is doomed when its project is archived, when a dropped gate blocks
        it (only completion satisfies a gate), or when something it waits on
        (an unsatisfied blocker or an open child) can never be completed.
        """
        memo: dict[UUID, dict[str, Any] | None] = {}

        def walk(cur: UUID, depth: int) -> dict[str, Any] | None:
            if cur in memo:
                return memo[cur]
            memo[cur] = None
            node = self.nodes[cur]
            result: dict[str, Any] | None = None
            project = self.projects[node.project_id]
            if project.archived_at is not None and node.status is Status.OPEN:
                result = {
                    "at": self.ref(node),
                    "why": f"{self.ref(node)} is open in archived project {project.slug}",
                }
            if result is None and cur in self.blockers:
                for b in self.unsatisfied(cur):
                    if b.status is Status.DROPPED:
                        result = {
                            "at": self.ref(b),
                            "why": f"{self.ref(b)} is a dropped gate; only completing it satisfies the edge",
                        }
                        break
                    inner = walk(b.id, depth + 1)
                    if inner is not None:
                        result = inner
                        break
                if result is None:
                    for c in self.open_children(cur):
                        inner = walk(c.id, depth + 1)
                        if inner is not None:
                            result = inner
                            break
            memo[cur] = result
            return result

        return walk(nid, 0)


def filter_from(
    projects: Sequence[str] = (),
    kinds: Sequence[str] = (),
    labels: Sequence[str] = (),
    any_labels: Sequence[str] = (),
    assignee_kind: AssigneeKind | str | None = None,
    min_priority: Priority | str | None = None,
    parent: str | None = None,
    status: Status | str | None = None,
    held: bool | None = None,
) -> NodeFilter:
    try:
        return NodeFilter(
            projects=tuple(projects),
            kinds=tuple(kinds),
            labels=tuple(labels),
            any_labels=tuple(any_labels),
            assignee_kind=AssigneeKind(assignee_kind) if assignee_kind else None,
            min_priority=Priority(min_priority) if min_priority else None,
            parent=parent,
            status=Status(status) if status else None,
            held=held,
        )
    except ValueError as exc:
        raise Invalid(
            str(exc),
            next="assignee_kind is agent|user; min_priority p0..p4; status open|done|dropped.",
        ) from None


def derived_ready(d: Derived, node: Node) -> bool:
    return d.ready and node.status is Status.OPEN
