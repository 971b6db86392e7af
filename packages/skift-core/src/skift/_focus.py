"""Holds on whole projects, and focus: holding everything outside a keep-set in one sweep.

A hold on a single node is a patch operation (``_patch``); a hold's inheritance
(a held ancestor or project parks its descendants) is derived by the store and
explained by ``_reads``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar
from uuid import UUID

import attrs

from ._context import Actor, Context, ref_of
from ._convert import from_json, to_json
from ._errors import IdempotencyMismatch, Invalid, LimitExceeded, Refused
from ._models import Event, Hold, Project, Status
from ._ops import canonical_digest
from ._refs import new_id, ulid_str
from ._retention import refuse_pruned_request
from ._store import ReadyQuery, Tx
from ._views import FocusResult

_R = TypeVar("_R")


@attrs.frozen
class _Count:
    """How many nodes a project hold parked or freed (its stored idempotent answer)."""

    count: int


class Focus(Context):
    """Project holds and focus sweeps (org scope and project scope)."""

    # ------------------------------------------------------------------ focus

    async def focus(
        self,
        tx: Tx,
        actor: Actor,
        keep: Sequence[str],
        reason: str,
        project_ref: str | None,
        *,
        request_id: str,
    ) -> FocusResult:
        """Hold everything outside ``keep`` in one scope, replacing the scope's previous sweep.

        Org scope (no project): ``keep`` names projects, and every other live
        project that is not already held is held. Project scope: ``keep`` names
        nodes of that project, and the topmost open nodes outside the keep-set
        (never an ancestor or a descendant of a kept node) that are not already
        held are held. All new holds share one ``hold_group``; a hold placed by
        hand is never touched.
        """
        doc = {"op": "focus", "keep": list(keep), "reason": reason, "project": project_ref}
        return await self._once(
            tx,
            actor,
            request_id,
            doc,
            FocusResult,
            lambda: self._focus(tx, actor, keep, reason, project_ref, request_id),
        )

    async def _focus(
        self,
        tx: Tx,
        actor: Actor,
        keep: Sequence[str],
        reason: str,
        project_ref: str | None,
        rid: str,
    ) -> FocusResult:
        await self._may_hold(tx, actor, "focus")
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
            released = await self._clear_org_sweep(tx, actor, reason, rid)
            group = new_id()
            now = await tx.now()
            held: list[Project] = []
            # a project the caller may not read is not theirs to park (nor to see)
            unread = await self.hidden(tx)
            for p in await tx.list_projects(archived=False, limit=10**9, offset=0, hidden=unread):
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
                    request_id=rid,
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
                    field="nodes",
                )
        released = await self._clear_project_sweep(tx, actor, project, reason, rid)
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
                    request_id=rid,
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
        self, tx: Tx, actor: Actor, reason: str, project_ref: str | None, *, request_id: str
    ) -> FocusResult:
        """Release the holds of the scope's focus sweep; hand-placed holds stay."""
        doc = {"op": "clear_focus", "reason": reason, "project": project_ref}
        return await self._once(
            tx,
            actor,
            request_id,
            doc,
            FocusResult,
            lambda: self._clear_focus(tx, actor, reason, project_ref, request_id),
        )

    async def _clear_focus(
        self, tx: Tx, actor: Actor, reason: str, project_ref: str | None, rid: str
    ) -> FocusResult:
        await self._may_hold(tx, actor, "focus")
        reason = self._reason(reason, "clear a focus")
        if project_ref is None:
            released = await self._clear_org_sweep(tx, actor, reason, rid)
            scope = "org"
        else:
            project = await self.resolve_project(tx, project_ref)
            self._writable_project(project)
            released = await self._clear_project_sweep(tx, actor, project, reason, rid)
            scope = project.slug
        return FocusResult(
            scope=scope, group=None, held=(), released=tuple(sorted(released)), parked=0
        )

    async def _clear_org_sweep(self, tx: Tx, actor: Actor, reason: str, rid: str) -> list[str]:
        released: list[str] = []
        events: list[Event] = []
        unread = await self.hidden(tx)
        for p in await tx.list_projects(archived=True, limit=10**9, offset=0, hidden=unread):
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
                    request_id=rid,
                    before={"group": ulid_str(locked.hold.group)},
                )
            )
        await tx.append_events(events)
        return released

    async def _clear_project_sweep(
        self, tx: Tx, actor: Actor, project: Project, reason: str, rid: str
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
                    request_id=rid,
                    before={"group": ulid_str(locked.hold.group)},
                )
            )
        await tx.append_events(events)
        return released

    async def hold_project(
        self, tx: Tx, actor: Actor, ref: str, reason: str, *, hold: bool, request_id: str
    ) -> int:
        """Park or release a whole project; returns how many open nodes it parks or frees."""
        op = "hold_project" if hold else "unhold_project"
        doc = {"op": op, "project": ref, "reason": reason}
        got = await self._once(
            tx,
            actor,
            request_id,
            doc,
            _Count,
            lambda: self._hold_project(tx, actor, ref, reason, hold, request_id),
        )
        return got.count

    async def _once(
        self,
        tx: Tx,
        actor: Actor,
        request_id: str,
        doc: dict[str, Any],
        cls: type[_R],
        run: Callable[[], Awaitable[_R]],
    ) -> _R:
        """Run a write once per request id: a retry with the same id and the same request
        gets the first answer; the same id for something else is refused."""
        fp = canonical_digest(doc)
        stored = await tx.reserve_request(actor.id, request_id, fp)
        if stored is not None:
            if stored.fingerprint != fp or stored.response is None:
                raise IdempotencyMismatch(
                    f"request id {request_id!r} was already used for a different request",
                    next="Use a fresh request id for new content; reuse an id only to retry "
                    "the same request.",
                )
            return from_json(stored.response, cls)
        await refuse_pruned_request(tx, actor.id, request_id, self.limits.request_retention)
        result = await run()
        await tx.save_response(actor.id, request_id, to_json(result))
        return result

    async def _hold_project(
        self, tx: Tx, actor: Actor, ref: str, reason: str, hold: bool, rid: str
    ) -> _Count:
        await self._may_hold(tx, actor, "hold_project" if hold else "unhold_project")
        project = await self.resolve_project(tx, ref)
        project = await tx.project_by_id(project.id, lock=True) or project
        self._writable_project(project)
        reason = self._reason(reason, "hold" if hold else "unhold")
        now = await tx.now()
        if hold:
            if project.hold is not None:
                raise Refused(
                    f"{project.slug} is already held since {project.hold.at:%Y-%m-%d %H:%M} ({project.hold.reason})",
                    next=f"Release the project's hold on {project.slug} first, with a reason.",
                    move={"do": "unhold_project", "project": project.slug},
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
                    request_id=rid,
                )
            ]
        )
        return _Count(count)
