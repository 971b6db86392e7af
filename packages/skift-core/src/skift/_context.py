"""The transaction context every rule runs in, and the bottom layer of the rules.

Who is acting (:class:`Actor`), size checks, the policy question
(:meth:`Context.authorize`), event construction, the organization's effective size
limits for one transaction, and resolution of project and node references. The
concerns above it (the patch, the work protocol, holds and focus, reads, projects,
principals, and the content rules: comments, artifacts, usage, organization limits)
use it and never each other's internals. It talks to a store only through
:class:`~skift._store.Tx`, so the in-memory store and PostgreSQL obey the same code.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final
from urllib.parse import urlsplit
from uuid import UUID

import attrs

from ._errors import FencingError, Invalid, LimitExceeded, NotFound, Refused
from ._intent import intent
from ._limits import Limits
from ._limits import effective as org_effective
from ._models import (
    Event,
    Hold,
    Lease,
    Node,
    Principal,
    PrincipalKind,
    Project,
    ReleaseReason,
    Status,
)
from ._origins import node_by_external_id
from ._policy import Policy, default_digest
from ._refs import format_ref, new_id, parse_node_ref, parse_ulid, ulid_str
from ._store import Authors, Derived, Tx
from ._views import EventInfo, NodeInfo, Resolved


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


def jsonable(value: object) -> Any:
    if isinstance(value, UUID):
        return ulid_str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, tuple):
        items: tuple[object, ...] = value  # pyright: ignore[reportUnknownVariableType]
        return [jsonable(v) for v in items]
    if isinstance(value, Hold):
        return {"at": value.at.isoformat(), "by": ulid_str(value.by), "reason": value.reason}
    return value


ROLE_ACTIONS = frozenset({"admin", "set_policy", "restrict_project", "unrestrict_project"})
"""The policy actions the default policy gives to the organization's admins only
(``admin_actions`` in policy/default.rego): asked with the role as stored now."""


def principal_input(actor: Actor) -> dict[str, Any]:
    """The policy's ``input.principal``."""
    p = actor.principal
    return {"id": ulid_str(p.id), "name": p.name, "kind": p.kind.value, "admin": p.admin}


def node_fields(node: Node, names: Iterable[str] | None = None) -> dict[str, Any]:
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
    return {k: jsonable(getattr(node, k)) for k in keys}


def changed_fields(before: Node, after: Node) -> tuple[dict[str, Any], dict[str, Any]]:
    names = [
        f.name
        for f in attrs.fields(Node)
        if f.name not in ("updated_at",) and getattr(before, f.name) != getattr(after, f.name)
    ]
    return node_fields(before, names), node_fields(after, names)


def check_size(what: str, text: str, limit: int, *, chars: bool = False) -> None:
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
            field="vcs_url",
        )
    return url


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


def lease_gone(lease: Lease) -> dict[str, Any]:
    """The next move after writing under a lease that ended: a gated node waits for its person."""
    if lease.release_reason is ReleaseReason.GATE:
        return {
            "next": "You gated this node: it is ready again when the person completes the gate "
            "(its result is then an input); take other work meanwhile.",
            "move": {"do": "await_gate"},
        }
    if lease.release_reason is ReleaseReason.COMPLETE:
        return {"next": "The node is complete; nothing to do.", "move": {"do": "nothing"}}
    return lease_gone_default


lease_gone_default: dict[str, Any] = {
    "next": "Stop work on this attempt; claim the node again if it is still ready.",
    "move": {"do": "stop_attempt"},
}


async def fence(
    tx: Tx,
    actor: Actor,
    lease_ref: str,
    *,
    node: Node | None = None,
    refused: str = "writes under it are refused",
) -> Lease:
    """The fencing check, the one place it is made: the live lease ``lease_ref`` names,
    held by ``actor`` (and on ``node``, when the write names one), its row locked for the
    transaction; else FencingError saying why and what to do next. ``refused`` ends the
    message (a patch says "this patch is refused")."""
    ident = parse_ulid(lease_ref.strip())
    lease = await tx.lease_by_id(ident, lock=True) if ident else None
    now = await tx.now()
    if lease is None:
        raise FencingError(f"lease {lease_ref} is unknown; {refused}", **lease_gone_default)
    if node is not None and lease.node_id != node.id:
        raise FencingError(
            f"lease {lease_ref} is not a lease on this node",
            next="Use the lease id that Claim returned for this node, or claim it again.",
        )
    if lease.released_at is not None:
        why = lease.release_reason.value if lease.release_reason else "released"
        raise FencingError(f"lease {lease_ref} is released ({why}); {refused}", **lease_gone(lease))
    if lease.expires_at <= now:
        raise FencingError(
            f"lease {lease_ref} is expired (at {lease.expires_at.isoformat()}); {refused}",
            **lease_gone_default,
        )
    if lease.holder != actor.id:
        raise FencingError(
            f"lease {lease_ref} belongs to another principal; {refused}",
            next="Only the holder writes under a lease; claim your own work.",
        )
    return lease


def _request(
    actor: Actor, intents: Sequence[dict[str, Any]], lease: Lease | None
) -> dict[str, Any]:
    """The policy's input for a write request."""
    return {
        "principal": principal_input(actor),
        "lease": {"id": ulid_str(lease.id), "node": ulid_str(lease.node_id)} if lease else None,
        "intents": list(intents),
    }


def _refuse(denials: list[dict[str, str]]) -> None:
    """Refused naming the first denial (all of them in its details), if any."""
    if denials:
        first = denials[0]
        raise Refused(first["msg"], next=first["next"], denials=denials)


class Context:
    """What every rule needs inside a store transaction: limits, policy, events, resolution."""

    def __init__(
        self, limits: Limits, *, org: str = "default", policy: Policy | None = None
    ) -> None:
        self.limits = limits
        self.org = org
        self.base_policy = policy or Policy.default()
        """The process's policy (the default, or the one a program passed to ``skift.open``);
        an organization's stored modules layer on it (:meth:`policy_in`)."""
        # the effective size limits, read once per transaction (see sizes)
        self._sizes: weakref.WeakKeyDictionary[Tx, Limits] = weakref.WeakKeyDictionary()
        # who reads through each transaction, and the projects hidden from them (see hidden)
        self._readers: weakref.WeakKeyDictionary[Tx, Actor] = weakref.WeakKeyDictionary()
        self._hidden: weakref.WeakKeyDictionary[Tx, frozenset[UUID]] = weakref.WeakKeyDictionary()
        # the policy in force, read once per transaction (see policy_in)
        self._policies: weakref.WeakKeyDictionary[Tx, Policy] = weakref.WeakKeyDictionary()
        # why the organization's policy tripped its budget, not yet recorded (see take_trips)
        self._trips: list[str] = []

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

    # ------------------------------------------------------------------- reads

    def reading_as(self, tx: Tx, actor: Actor) -> None:
        """Say whose request a transaction serves: its reads follow that principal's
        read decision (``hidden``). A transaction nobody reads through hides nothing
        (the engine's own work, e.g. creating an organization)."""
        self._readers[tx] = actor

    async def hidden(self, tx: Tx) -> frozenset[UUID]:
        """The projects the request's principal may not read, decided once per request.

        The policy's read decision (``data.skift.authz.unreadable``) is asked once,
        with the organization's restricted projects as input; the answer is a set of
        project ids every read path leaves out (pushed into the store's queries,
        never checked row by row). Empty, and no policy evaluation, when nothing is
        restricted and the policy is the default.
        """
        got = self._hidden.get(tx)
        if got is None:
            actor = self._readers.get(tx)
            got = frozenset[UUID]() if actor is None else await self._unreadable(tx, actor)
            self._hidden[tx] = got
        return got

    def forget_hidden(self, tx: Tx) -> None:
        """Decide again after a transaction changed who reads a project."""
        self._hidden.pop(tx, None)

    async def _unreadable(self, tx: Tx, actor: Actor) -> frozenset[UUID]:
        restricted = await tx.restricted_projects()
        policy = await self.policy_in(tx)  # the organization's stored modules may hide too
        if not restricted and policy.digest == default_digest():
            return frozenset()
        request = {
            "principal": principal_input(actor),
            "restricted": [
                {
                    "id": ulid_str(p.project_id),
                    "slug": p.slug,
                    "readers": [ulid_str(r) for r in p.readers],
                    "reader_names": list(p.names),
                }
                for p in restricted
            ],
        }
        by_id = {ulid_str(p.project_id): p.project_id for p in restricted}
        out: set[UUID] = set()
        try:
            items = await policy.unreadable_within(request, tx.org_id, *self._policy_budget())
        finally:
            self._note_trip(policy, tx)
        for item in items:
            if item in by_id:
                out.add(by_id[item])
                continue
            ident = parse_ulid(item)
            found = await tx.project_by_id(ident) if ident is not None else None
            if found is None:
                found = await tx.project_by_slug(item.strip().lower())
            if found is not None:
                out.add(found.id)
        return frozenset(out)

    async def policy_in(self, tx: Tx) -> Policy:
        """The policy that decides this transaction's requests: the base policy with the
        organization's stored modules (``skift policy set``) on top.

        The stored digest is read once per transaction, so a change made through
        any server over the database applies from the next transaction; the
        modules themselves are read only when the digest is new to this process.
        """
        got = self._policies.get(tx)
        if got is None:
            digest = await tx.org_policy_digest()
            if not digest:
                got = self.base_policy
            else:
                got = self.base_policy.cached_layer(digest)
                if got is None:
                    stored = await tx.org_policy()
                    modules = stored.modules if stored else ()
                    got = self.base_policy.layered(modules, stored.digest if stored else "")
            self._policies[tx] = got
        return got

    def forget_policy(self, tx: Tx) -> None:
        """Drop a transaction's reading after it changed the organization's policy."""
        self._policies.pop(tx, None)
        self._hidden.pop(tx, None)

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

    async def resolve_project(self, tx: Tx, ref: str, *, hidden_too: bool = False) -> Project:
        """The project ``ref`` names; one the principal may not read is a slug nobody created
        (``hidden_too``: an admin restricting a project it does not read names it)."""
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
        if project is not None and not hidden_too and project.id in await self.hidden(tx):
            project = None  # a project the principal may not read is a slug nobody created
        if project is None:
            raise NotFound(
                f"no project {ref!r}",
                next="List the projects, or create one.",
                move={"do": "list_projects"},
            )
        return project

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
                next="Say why (a reason), because a change nobody can explain is one nobody dares undo.",
                move={"do": "give_reason"},
                field="reason",
            )
        check_size("reason", text, self.limits.reason_chars, chars=True)
        return text

    async def authorize(
        self,
        tx: Tx,
        actor: Actor,
        intents: Sequence[dict[str, Any]],
        lease: Lease | None = None,
    ) -> None:
        """Ask the policy in force (:meth:`policy_in`) about a resolved request; one denial
        refuses all of it. A request with an action only an admin takes is decided with the
        principal's role as stored now (:meth:`current`)."""
        if any(i.get("action") in ROLE_ACTIONS for i in intents):
            actor = await self.current(tx, actor)
        policy = await self.policy_in(tx)
        request = _request(actor, intents, lease)
        try:
            if policy.budgeted:  # an organization's stored modules: in a worker process
                _refuse(await policy.deny_within(request, tx.org_id, *self._policy_budget()))
            else:  # the process's own policy, in process (the hot path)
                _refuse(policy.deny(request))
        finally:
            self._note_trip(policy, tx)

    def _policy_budget(self) -> tuple[float, int]:
        """An evaluation's CPU budget (seconds) and the worker processes evaluating
        organizations' stored policies (skift._policy_pool)."""
        return self.limits.policy_budget.total_seconds(), self.limits.policy_workers

    def _note_trip(self, policy: Policy, tx: Tx) -> None:
        why = policy.take_trip(tx.org_id)
        if why is not None:
            self._trips.append(why)

    def take_trips(self) -> list[str]:
        """Why the organization's policy tripped its evaluation budget in this context's
        requests since last asked (each trip once): the caller records an event for each,
        in a transaction of its own, since the request that tripped it is refused."""
        out, self._trips = self._trips, []
        return out

    async def current(self, tx: Tx, actor: Actor) -> Actor:
        """The actor with its principal as stored now: a handle reads its principal once,
        when it is made, and the ``admin`` role may have been granted or revoked since."""
        found = (await tx.principals_by_id([actor.id])).get(actor.id)
        if found is None or found == actor.principal:
            return actor
        return attrs.evolve(actor, principal=found)

    def authorize_base(self, actor: Actor, intents: Sequence[dict[str, Any]]) -> None:
        """Ask the base policy alone: the coarse check a transport makes before any work, and
        who may change the organization's stored policy (never decided by that policy)."""
        _refuse(self.base_policy.deny(_request(actor, intents, None)))

    async def _may_hold(self, tx: Tx, actor: Actor, action: str = "hold") -> None:
        await self.authorize(tx, actor, [intent(action)])

    # ------------------------------------------------------------------- nodes

    async def resolve_node(
        self, tx: Tx, ref: str, project: Project | None, *, lock: bool = False
    ) -> Node:
        try:
            parsed = parse_node_ref(ref)
        except Invalid:
            imported = await node_by_external_id(tx, ref, project)  # a beads id (skift._origins)
            if imported is None or imported.project_id in await self.hidden(tx):
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
                    next="Qualify it as slug#N, or name the project.",
                    move={"do": "name_project", "ref": ref},
                    field="project",
                )
            node = await tx.node_by_number(target.id, parsed.number, lock=lock)
        if node is not None and node.project_id in await self.hidden(tx):
            node = None  # in a project the principal may not read: nothing
        if node is None:
            raise NotFound(
                f"no node {ref!r}",
                next="Check the reference; listing a project's nodes shows them.",
                move={"do": "list_nodes"},
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
        derived: Mapping[UUID, Derived] | None = None,
    ) -> list[NodeInfo]:
        """The nodes as callers see them; attributed when ``authors`` (``tx.authors``) is
        given; with ``derived``, their derived facts as the caller worked them out."""
        if not nodes:
            return []
        projects = await tx.projects_by_id({n.project_id for n in nodes})
        parent_ids = {n.parent_id for n in nodes if n.parent_id is not None}
        parents = await tx.nodes_by_id(parent_ids) if parent_ids else {}
        if derived is None:
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

    def page_size(self, limit: int | None) -> int:
        size = min(self.limits.default_page_size, self.limits.page_size) if limit is None else limit
        if size <= 0:
            raise Invalid(
                f"the page size is {size}; it must be 1 or more",
                next="Ask for a page of 1 or more, or leave the size out for the default.",
                field="page_size",
            )
        if size > self.limits.page_size:
            raise LimitExceeded(
                f"a page of {size} is over the limit of {self.limits.page_size}",
                next=f"Ask for at most {self.limits.page_size} and follow next_page.",
                limit="page_size",
                bound=self.limits.page_size,
            )
        return size

    # ------------------------------------------------------------------ events

    async def event_infos(self, tx: Tx, events: Sequence[Event]) -> list[EventInfo]:
        """The events as the request's principal sees them: an event of a project it may
        read keeps its place, but a reference it carries to a node of a project it may not
        read (an edge's other end, the node a cascade came from, with that drop's reason)
        becomes Explain's placeholder for an unreadable blocker (``""``, and
        ``"unreadable": true`` beside it)."""
        principals = await tx.principals_by_id({e.principal_id for e in events})
        projects = await tx.projects_by_id({e.project_id for e in events if e.project_id})
        nodes = await tx.nodes_by_id({e.node_id for e in events if e.node_id})
        unread = await self.unread_slugs(tx, events)
        out: list[EventInfo] = []
        for e in events:
            proj = projects.get(e.project_id) if e.project_id else None
            node = nodes.get(e.node_id) if e.node_id else None
            node_proj = projects.get(node.project_id) if node else None
            if unread:
                e = masked_event(e, unread)
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

    async def unread_slugs(self, tx: Tx, events: Sequence[Event]) -> frozenset[str]:
        """The slugs, among those the events' references name, of projects the request's
        principal may not read (nothing to look up when it reads everything)."""
        hidden = await self.hidden(tx)
        if not hidden:
            return frozenset()
        slugs = {
            ref.rpartition("#")[0]
            for e in events
            for doc in (e.before, e.after)
            if doc
            for key in REF_KEYS
            if isinstance(ref := doc.get(key), str) and "#" in ref
        }
        out: set[str] = set()
        for slug in slugs:  # a retired slug still names its project
            project = await tx.project_by_slug(slug.lower())
            if project is not None and project.id in hidden:
                out.add(slug)
        return frozenset(out)


REF_KEYS: Final = ("from", "to", "cascade_from")
"""The keys of an event's ``before``/``after`` whose value is a node reference that may
name another project's node (an edge's ends, the node a cascade drop came from)."""


def masked_event(e: Event, unread: frozenset[str]) -> Event:
    """The event with the references into ``unread`` projects replaced by the placeholder;
    a cascade drop from such a node loses its reason too (the reason is that drop's)."""

    def hides(ref: Any) -> bool:
        return isinstance(ref, str) and ref.rpartition("#")[0] in unread

    changed = False
    docs: list[dict[str, Any] | None] = []
    for doc in (e.before, e.after):
        if doc and any(hides(doc.get(k)) for k in REF_KEYS):
            doc = {k: ("" if k in REF_KEYS and hides(v) else v) for k, v in doc.items()}
            doc["unreadable"] = True
            changed = True
        docs.append(doc)
    if not changed:
        return e
    cascade = any(d is not None and d.get("cascade_from") == "" for d in docs)
    reason = "" if cascade and e.reason is not None else e.reason
    return attrs.evolve(e, before=docs[0], after=docs[1], reason=reason)
