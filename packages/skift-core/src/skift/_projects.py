"""Projects: creating, renaming, re-prioritizing and archiving them, and how callers see them."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

import attrs

from ._context import Actor, Context, check_size, check_vcs_url, jsonable
from ._errors import Conflict, Invalid, LimitExceeded, NotFound, Refused
from ._intent import intent
from ._models import Priority, Project
from ._refs import check_slug, disambiguate, new_id, slugify, ulid_str
from ._store import Tx
from ._usage import set_budget
from ._views import ProjectInfo

_MAX_READERS = 1000


class Projects(Context):
    """The project rules: slugs, titles, VCS URLs, budgets, archiving."""

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
        await self.authorize(tx, actor, [intent("create_project")])
        title = title.strip()
        if not title:
            raise Invalid(
                "a project needs a title", next="Give a short human-readable title.", field="title"
            )
        check_size("title", title, self.limits.title_chars, chars=True)
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
        await self.authorize(tx, actor, [intent("update_project")])
        project = await self.resolve_project(tx, ref)
        project = await tx.project_by_id(project.id, lock=True) or project
        self._writable_project(project)
        changes: dict[str, Any] = {}
        if title is not None:
            title = title.strip()
            if not title:
                raise Invalid(
                    "a project needs a title",
                    next="Give a short human-readable title.",
                    field="title",
                )
            check_size("title", title, self.limits.title_chars, chars=True)
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
        before = {k: jsonable(getattr(project, k)) for k in changes}
        after = {k: jsonable(getattr(updated, k)) for k in changes}
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
        await self.authorize(tx, actor, [intent("archive_project")])
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

    # ------------------------------------------------------------ who reads it

    async def restrict_project(
        self, tx: Tx, actor: Actor, ref: str, readers: Sequence[str], reason: str
    ) -> Project:
        """Make a project readable (and so writable) only by ``readers`` and the person
        restricting it; to everyone else it is a slug nobody created. Restricting a
        restricted project replaces its readers. An admin's call: an admin who does not read
        the project restricts it too, and so joins its readers (the event says so)."""
        project, joins = await self._restrictable(tx, actor, ref, "restrict_project")
        reason = self._reason(reason, "restriction")
        if len(readers) > _MAX_READERS:
            raise LimitExceeded(
                f"{len(readers)} readers; a project lists at most {_MAX_READERS}",
                next="List fewer readers, or give the rest access through the organization's policy.",
                limit="readers",
                bound=_MAX_READERS,
            )
        ids: list[UUID] = [actor.id]  # the restricting person always reads it
        for name in readers:
            p = await tx.principal_by_name(name.strip())
            if p is None:
                raise NotFound(
                    f"no principal {name.strip()!r}",
                    next="Name registered principals (the list of principals shows them).",
                    move={"do": "list_principals"},
                )
            if p.id not in ids:
                ids.append(p.id)
        before = await self._reader_names(tx, project.readers)
        updated = attrs.evolve(project, readers=tuple(ids))
        await tx.update_project(updated)
        after: dict[str, Any] = {"readers": await self._reader_names(tx, updated.readers)}
        if joins:
            after["admin_joined"] = actor.principal.name
        await tx.append_events(
            [
                await self._event(
                    tx,
                    actor,
                    "restrict_project",
                    project_id=project.id,
                    reason=reason,
                    before={"readers": before},
                    after=after,
                )
            ]
        )
        self.forget_hidden(tx)
        return updated

    async def unrestrict_project(self, tx: Tx, actor: Actor, ref: str, reason: str) -> Project:
        """Make a restricted project readable by the whole organization again (an admin's
        call, a reader of it or not: the event says which)."""
        project, joins = await self._restrictable(tx, actor, ref, "unrestrict_project")
        reason = self._reason(reason, "restriction's end")
        if project.readers is None:
            raise Refused(f"{project.slug} is not restricted", next="Nothing to do.")
        before = await self._reader_names(tx, project.readers)
        updated = attrs.evolve(project, readers=None)
        await tx.update_project(updated)
        await tx.append_events(
            [
                await self._event(
                    tx,
                    actor,
                    "unrestrict_project",
                    project_id=project.id,
                    reason=reason,
                    before={"readers": before},
                    after={"readers": None, "admin_joined": actor.principal.name}
                    if joins
                    else {"readers": None},
                )
            ]
        )
        self.forget_hidden(tx)
        return updated

    async def _restrictable(
        self, tx: Tx, actor: Actor, ref: str, action: str
    ) -> tuple[Project, bool]:
        """The project an admin restricts or unrestricts, locked, and whether the admin
        reads it only from now on. To anyone but an admin a project it does not read is a
        slug nobody created, as everywhere; an admin names it (and is then refused nothing
        the policy allows)."""
        actor = await self.current(tx, actor)
        project = await self.resolve_project(tx, ref, hidden_too=actor.principal.admin)
        await self.authorize(tx, actor, [intent(action, project=project.slug)])
        project = await tx.project_by_id(project.id, lock=True) or project
        joins = project.readers is not None and actor.id not in project.readers
        return project, joins

    async def _reader_names(self, tx: Tx, ids: Sequence[UUID] | None) -> list[str] | None:
        if ids is None:
            return None
        found = await tx.principals_by_id(ids)
        return [found[i].name if i in found else ulid_str(i) for i in ids]

    async def project_infos(self, tx: Tx, projects: Sequence[Project]) -> list[ProjectInfo]:
        activity = await tx.project_activity([p.id for p in projects])
        reader_ids = {r for p in projects for r in p.readers or ()}
        names = await tx.principals_by_id(reader_ids) if reader_ids else {}
        return [
            attrs.evolve(
                self._project_info(p, activity.get(p.id, p.created_at)),
                readers=tuple(names[r].name if r in names else ulid_str(r) for r in p.readers)
                if p.readers is not None
                else None,
            )
            for p in projects
        ]

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
