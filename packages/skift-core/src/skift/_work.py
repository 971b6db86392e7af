"""The work protocol: claims, leases as fencing tokens, heartbeats, releases and expiry.

A claim takes a ready node under a lease (its id is the fencing token every
write under it carries; :func:`skift._context.fence` checks it), hands over the
predecessors' results as inputs, and refuses with the reasons Explain gives
when the node is not ready. Gates (nodes only a person completes) are never
handed to an agent: ``ReadyQuery.agent_only`` and the policy see to it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, cast
from uuid import UUID

import attrs

from ._artifacts import ArtifactInfo, artifact_infos
from ._context import Actor, fence, node_facts, ref_of
from ._convert import seconds, to_json
from ._errors import Invalid, NothingReady, Refused
from ._filter import NodeFilter
from ._intent import intent
from ._models import Event, Lease, Node, Project, ReleaseReason, Status
from ._pages import Page, bad_position, cut, position, read_limit, read_position, scoped
from ._reads import Reads
from ._refs import format_ref, new_id, ulid_str
from ._store import NOT_SIMPLE, Authors, NotSimple, ReadyQuery, TransientError, Tx
from ._usage import capped_out, check_cap
from ._views import Claim, CommentsHint, Input, LeaseInfo, NodeInfo, Reason


class Work(Reads):
    """Claim, claim-next, heartbeat, release, sweep of expired leases, lease history."""

    # ------------------------------------------------------------------ leases

    def ttl(self, ttl: timedelta | None) -> timedelta:
        lim = self.limits
        if ttl is None:
            return lim.lease_ttl_default
        if ttl <= timedelta(0):
            raise Invalid(
                "a lease TTL must be positive",
                next=f"Ask for a TTL between {seconds(lim.lease_ttl_floor)} and "
                f"{seconds(lim.lease_ttl_ceiling)}.",
                field="ttl",
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
                next=f"Reopen {ref_text} first (with a reason) if the work must be redone.",
                move={"do": "reopen", "ref": ref_text},
            )
        await self.authorize(
            tx, actor, [intent("claim", node=node_facts(node, ref_text, owner.slug, actor))]
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
        scope = flt.scope_hash()
        node: Node | NotSimple | None = NOT_SIMPLE
        q: ReadyQuery | None = None
        if not flt.projects and flt.parent is None and self.base_policy.is_default:
            # Nothing to resolve, and the base policy hides nothing by itself: the store may
            # take the node in one step, where nothing else hides a project or caps a node
            # (Tx.take_next_ready; a store that cannot tell answers NOT_SIMPLE).
            q, _ = await self.resolve_filter(tx, actor, flt, for_work=True, hide=False)
            node = await tx.take_next_ready(actor.id, scope, q)
        if node is NOT_SIMPLE or q is None:
            cursor = await tx.get_cursor(actor.id, scope)  # first: see Reads.ready
            q, _ = await self.resolve_filter(tx, actor, flt, for_work=True)
            # nodes under a spent cap are skipped, never handed out (_usage.capped_out)
            node = await tx.lock_next_ready(
                attrs.evolve(q, after_project=cursor, exclude=await capped_out(tx))
            )
        if isinstance(node, Node):
            owner = await tx.project_by_id(node.project_id)
            assert owner is not None
            await self.authorize(
                tx,
                actor,
                [intent("claim", node=node_facts(node, ref_of(node, owner), owner.slug, actor))],
            )
            await tx.set_cursor(actor.id, scope, node.project_id)
            return await self._take(tx, actor, node, owner, span, harness, agent_ref, session_ref)
        held, exact = await self.held_count(tx, q)
        raise NothingReady(
            "nothing ready matches" + (f" ({held}{'' if exact else '+'} held)" if held else ""),
            next="Wait for work, widen the filter, or ask a person to release held work.",
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
        if stale is not None and stale.live(now):
            # Another claimer committed a lease after our snapshot was taken
            # but before we locked the row; the whole claim is retried.
            raise TransientError(
                f"{format_ref(project.slug, node.number)} was claimed concurrently"
            )
        # What the claim hands over is read before its writes (a store sends these reads
        # with the lock: Tx.take_next_ready, lock_next_ready): the node's predecessors,
        # who wrote them, its derived facts and comments hint. None of them is changed by
        # the writes below but the node's own derived facts, set here as the writes make
        # them: it is claimed (so not ready), and written by a person if a person claims.
        edges = await tx.edges_into([node.id])
        sources = await tx.nodes_by_id({e.from_id for e in edges})
        # who wrote the node and its predecessors: one read for all of them
        authors = await tx.authors([node.id, *sources])
        seen = (await self.infos(tx, [node], authors=authors))[0]
        info = attrs.evolve(
            seen, claimed=True, ready=False, human_written=seen.human_written or actor.is_user
        )
        inputs = await self.inputs(tx, node.id, list(sources.values()), authors)
        comments = await _comments_hint(tx, node.id)
        if stale is not None:
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
        return Claim(
            node=info,
            lease=self.lease_info(lease, info.ref, actor.principal.name),
            inputs=tuple(inputs),
            input_ends=inputs.ends,
            comments=comments,
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

    async def input_page(
        self, tx: Tx, ref: str, project_ref: str | None, *, limit: int | None, page: str | None
    ) -> Page[Input]:
        """A node's inputs (every one when ``limit`` is None, as a claim carries them),
        from ``page`` on: keyset, after the (project, number) of the last predecessor
        sent, so one added or removed between pages moves no other. A page of another
        node's inputs is refused naming ``page_token``."""
        node = await self.node_in(tx, ref, project_ref)
        at = read_position("inputs", page, (UUID, UUID, int))
        if at is not None and at[0] != node.id:
            raise bad_position(cast(str, page), "was made for the inputs of another node")
        size = None if limit is None else self.page_size(limit)
        got = await tx.input_sources(
            node.id,
            after=None if at is None else (at[1], at[2]),
            limit=None if size is None else size + 1,
            hidden=tuple(await self.hidden(tx)),
        )
        kept = got if size is None else got[:size]
        out = await self.inputs(tx, node.id, kept, await tx.authors([n.id for n in kept]))
        return Page(out, ends=out.ends, more=len(got) > len(kept))

    async def inputs(
        self, tx: Tx, node_id: UUID, sources: Sequence[Node], authors: Mapping[UUID, Authors]
    ) -> Page[Input]:
        """The predecessors' results of node ``node_id``, attributed to who completed each
        (``authors``, from ``tx.authors``), with their artifacts: a fixed number of reads
        however many predecessors there are. In the order of the predecessors' (project,
        number), which a page of them goes on from (``ends``: see :meth:`input_page`)."""
        hidden = await self.hidden(tx)
        # a predecessor in a project the caller may not read is left out
        sources = [n for n in sources if n.project_id not in hidden]
        if not sources:
            return Page()
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
        ends = [position("inputs", node_id, n.project_id, n.number) for n in ordered]
        return Page(out, ends=ends)

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
        lease = await fence(tx, actor, lease_ref, node=node)
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
        lease = await fence(tx, actor, lease_ref, node=node)
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

    async def leases(
        self,
        tx: Tx,
        ref: str,
        project_ref: str | None,
        *,
        limit: int | None = None,
        page: str | None = None,
    ) -> Page[LeaseInfo]:
        """Every attempt on a node, oldest first (created_at, id): all when ``limit`` is
        None, else ``limit`` of them after ``page`` (keyset)."""
        size = None if limit is None else self.page_size(limit)
        node = await self.node_in(tx, ref, project_ref)
        name = scoped("leases", node.id)
        after = read_position(name, page, (datetime, UUID))
        info = (await self.infos(tx, [node]))[0]
        got = await tx.lease_page(node.id, after=after, limit=read_limit(size))
        history, ends, more = cut(name, got, size, lambda x: (x.created_at, x.id))
        holders = await tx.principals_by_id({lease.holder for lease in history})
        return Page(
            [
                self.lease_info(
                    lease, info.ref, holders[lease.holder].name if lease.holder in holders else "?"
                )
                for lease in history
            ],
            ends=ends,
            more=more,
        )


async def _comments_hint(tx: Tx, node_id: UUID) -> CommentsHint:
    """A claim's comments hint: how many comments are unresolved and when the newest was written."""
    unresolved, newest = await tx.comment_hint(node_id)
    return CommentsHint(unresolved=unresolved, newest_at=newest)


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
        return f"Ask a person to release the hold on {d.get('on', ref)}, or take other work."
    if reason.kind == "blocked_by":
        return f"Finish {d['ref']} first, or take other work (explaining {ref} shows the chain)."
    if reason.kind == "leased":
        return "Someone is working on it; take other work, or wait for the lease to end."
    if reason.kind == "open_children":
        return "Its children are the work; claim one of them."
    return f"Explain {ref} to see why."
