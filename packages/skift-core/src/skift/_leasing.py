"""People's authority over leases: preempting a stuck attempt, and the organization's live leases.

A lease is a fencing token held by whoever claimed the node, usually an
agent. A person (a ``user`` principal) may take any lease back with reason
``preempted`` (``preempt``): the lease is released at once, so every later
write under its id is refused as fenced, and the node returns to the ready
set. The default policy refuses preemption to agents and services with the
next move. ``live_leases`` lists the leases that are live now; a lease's id,
the token, is shown only to its holder.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING
from uuid import UUID

import attrs

from ._errors import Conflict, Invalid
from ._intent import intent
from ._models import ReleaseReason
from ._pages import Page, cut, read_limit, read_position, scoped
from ._refs import ulid_str

if TYPE_CHECKING:
    from ._context import Actor
    from ._store import Tx
    from ._views import LeaseInfo, NodeInfo
    from ._work import Work

REASON_CHARS = 2000


def _reason(text: str | None) -> str:
    why = (text or "").strip()
    if not why:
        raise Invalid(
            "preempting a lease needs a reason",
            next="Say why (a reason): the holder's next read of the node will show it.",
            move={"do": "give_reason"},
            field="reason",
        )
    if len(why) > REASON_CHARS:
        raise Invalid(
            f"the reason is {len(why)} characters; at most {REASON_CHARS}",
            next="Say it in fewer words, and put the detail in a comment on the node.",
            field="reason",
        )
    return why


async def preempt(
    engine: Work, tx: Tx, actor: Actor, ref: str, project_ref: str | None, reason: str
) -> NodeInfo:
    """Release whoever's live lease is on ``ref``, as a person, with reason ``preempted``."""
    why = _reason(reason)
    node = await engine.node_in(tx, ref, project_ref, lock=True)
    info = (await engine.infos(tx, [node]))[0]
    await engine.authorize(
        tx, actor, [intent("preempt", node={"ref": info.ref, "project": info.project})]
    )
    current = await tx.unreleased_lease(node.id)
    now = await tx.now()
    lease = await tx.lease_by_id(current.id, lock=True) if current is not None else None
    if lease is None or not lease.live(now):
        raise Conflict(
            f"{info.ref} has no live lease: there is nothing to preempt",
            next=f"Nobody holds it; change it directly, or claim {info.ref}.",
            move={"do": "claim", "ref": info.ref},
        )
    holders = await tx.principals_by_id({lease.holder})
    holder = holders[lease.holder].name if lease.holder in holders else "?"
    await tx.update_lease(
        attrs.evolve(lease, released_at=now, release_reason=ReleaseReason.PREEMPTED)
    )
    event = await engine._event(  # pyright: ignore[reportPrivateUsage]
        tx,
        actor,
        "preempt",
        project_id=node.project_id,
        node_id=node.id,
        reason=why,
        before={"lease": ulid_str(lease.id), "holder": holder},
        after={"release_reason": ReleaseReason.PREEMPTED.value},
    )
    await tx.append_events([event])
    return (await engine.infos(tx, [node]))[0]


async def live_leases(
    engine: Work,
    tx: Tx,
    actor: Actor,
    projects: Sequence[str],
    *,
    mine: bool = False,
    limit: int | None = None,
    page: str | None = None,
) -> Page[LeaseInfo]:
    """The organization's live leases (of ``projects`` when given; the caller's own with
    ``mine``), oldest first (created_at, id): every one when ``limit`` is None, else
    ``limit`` of them after ``page`` (keyset: a lease taken or released meanwhile moves
    no other).

    Each names its node, title, holder, harness, agent and expiry; ``id`` is
    the holder's alone and is empty on everyone else's.
    """
    size = None if limit is None else engine.page_size(limit)
    project_ids: list[UUID] | None = None
    if projects:
        project_ids = [(await engine.resolve_project(tx, p)).id for p in projects]
    name = scoped("live_leases", sorted(project_ids or ()), mine)
    after = read_position(name, page, (datetime, UUID))
    got = await tx.live_lease_page(
        project_ids,
        holder=actor.id if mine else None,
        hidden=await engine.hidden(tx),
        after=after,
        limit=read_limit(size),
    )
    leases, ends, more = cut(name, got, size, lambda x: (x.created_at, x.id))
    if not leases:
        return Page(more=more)
    nodes = await tx.nodes_by_id([lease.node_id for lease in leases])
    ordered = [nodes[lease.node_id] for lease in leases if lease.node_id in nodes]
    infos = {n.id: i for n, i in zip(ordered, await engine.infos(tx, ordered), strict=True)}
    holders = await tx.principals_by_id({lease.holder for lease in leases})
    out: list[LeaseInfo] = []
    kept: list[str] = []
    for lease, end in zip(leases, ends, strict=True):
        info = infos.get(lease.node_id)
        if info is None:
            continue
        who = holders[lease.holder].name if lease.holder in holders else "?"
        view = engine.lease_info(lease, info.ref, who)
        out.append(
            attrs.evolve(view, title=info.title, id=view.id if lease.holder == actor.id else "")
        )
        kept.append(end)
    return Page(out, ends=kept, more=more)


async def live_lease_of(
    engine: Work, tx: Tx, actor: Actor, node_id: UUID, ref: str
) -> LeaseInfo | None:
    """The node's live lease as ``show`` carries it (its id only to its holder), or None."""
    lease = (await tx.live_leases([node_id])).get(node_id)
    if lease is None:
        return None
    holders = await tx.principals_by_id({lease.holder})
    who = holders[lease.holder].name if lease.holder in holders else "?"
    view = engine.lease_info(lease, ref, who)
    return view if lease.holder == actor.id else attrs.evolve(view, id="")
