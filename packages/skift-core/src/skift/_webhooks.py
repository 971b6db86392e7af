"""Webhooks: the rules of endpoints and deliveries (seed 004, docs/webhooks.md).

A project nominates endpoints to be told when its events commit. The store
writes a delivery in the same transaction as the events (coalescing into the
endpoint's one open delivery); the server's worker attempts it afterwards, so a
broken receiver never rolls back or slows a write. A delivery says what changed
and nothing more: a window ``(after, through]`` of the change stream's cursor
and counts by operation; the receiver reads the events through the API.

Who manages endpoints follows the policy (the default: a person; an agent is
refused and files a gate to ask). Creating, rotating, disabling and enabling an
endpoint are events; a secret never is.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Collection, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING
from urllib.parse import urlsplit
from uuid import UUID

import attrs

from . import _stream
from ._errors import Conflict, Invalid, LimitExceeded, NotFound
from ._intent import intent
from ._pages import Page, read_limit, read_position, scoped
from ._pages import cut as cut_page
from ._refs import new_id, parse_ulid, ulid_str
from ._seal import CursorSeal
from ._store import EventPosition
from ._webhook_records import Delivery, DueDelivery, Endpoint
from ._webhook_wire import SECRET_BYTES, address_refusal, headers, payload, secret_text

if TYPE_CHECKING:
    from ._context import Actor, Context
    from ._models import Project
    from ._store import Tx

URL_MIN_BYTES = 8
URL_MAX_BYTES = 2048
_OP = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_LIST_NEXT = "List the project's webhooks."


@attrs.frozen(kw_only=True)
class WebhookInfo:
    """An endpoint as a caller sees it. ``secret`` (``whsec_…``) is filled only by
    :meth:`~skift.LocalSkift.add_webhook` and :meth:`~skift.LocalSkift.rotate_webhook_secret`:
    it is shown once and never again."""

    id: str
    url: str
    project: str
    events: tuple[str, ...]
    created_at: datetime
    disabled_at: datetime | None = None
    secret: str | None = attrs.field(default=None, repr=False)


@attrs.frozen(kw_only=True)
class DeliveryInfo:
    """A delivery as a caller sees it.

    ``state``: ``pending``, ``delivered`` or ``parked``. ``after`` and ``through``
    are change-stream cursors: ``watch_events(after=after, projects=[project])``
    returns the window's events first, ending with the one whose cursor is
    ``through``. ``after`` is None until the first attempt fixes the window (until
    then, what commits coalesces into it). ``next_attempt_at`` only while pending.
    """

    id: str
    webhook: str
    project: str
    state: str
    attempts: int
    next_attempt_at: datetime | None
    last_status: int | None
    last_error: str | None
    after: str | None
    through: str
    counts: Mapping[str, int]
    created_at: datetime
    delivered_at: datetime | None = None
    parked_at: datetime | None = None


# ------------------------------------------------------------------ views


def _cursor(pos: tuple[int, UUID], seal: CursorSeal) -> str:
    """A window bound as a cursor, dated by its event's id (a ULID carries the millisecond
    it was minted, as the event occurred), so one position is always one string: a
    delivery's ``after`` is the previous one's ``through``, attempt after attempt."""
    at = datetime.fromtimestamp((pos[1].int >> 80) / 1000, UTC)
    return _stream.encode(EventPosition(seq=pos[0], id=pos[1]), at, seal)


def delivery_info(d: Delivery, slug: str, seal: CursorSeal) -> DeliveryInfo:
    """A delivery as a caller sees it; its cursors sealed for its organization (``seal``)."""
    return DeliveryInfo(
        id=ulid_str(d.id),
        webhook=ulid_str(d.endpoint_id),
        project=slug,
        state=d.state,
        attempts=d.attempts,
        next_attempt_at=d.next_attempt_at if d.state == "pending" else None,
        last_status=d.last_status,
        last_error=d.last_error,
        after=_cursor(d.after, seal) if d.after is not None else None,
        through=_cursor(d.through, seal),
        counts=dict(sorted(d.counts.items())),
        created_at=d.created_at,
        delivered_at=d.delivered_at,
        parked_at=d.parked_at,
    )


def delivery_request(
    due: DueDelivery, seal: CursorSeal, *, timestamp: int | None = None
) -> tuple[bytes, dict[str, str]]:
    """The body and headers of one attempt at a claimed delivery (Standard Webhooks v1);
    ``seal`` is the delivery's organization's (``cursor_seal(store, org_id)``)."""
    info = delivery_info(due.delivery, due.project_slug, seal)
    body = payload(
        delivery=info.id,
        project=due.project_slug,
        after=info.after,
        through=info.through,
        counts=info.counts,
    )
    return body, headers(due.secret, info.id, body, timestamp=timestamp)


def _info(ep: Endpoint, slug: str, secret: bytes | None = None) -> WebhookInfo:
    return WebhookInfo(
        id=ulid_str(ep.id),
        url=ep.url,
        project=slug,
        events=ep.events,
        created_at=ep.created_at,
        disabled_at=ep.disabled_at,
        secret=secret_text(secret) if secret is not None else None,
    )


async def _slugs(tx: Tx, ids: Collection[UUID]) -> dict[UUID, str]:
    return {pid: p.slug for pid, p in (await tx.projects_by_id(set(ids))).items()}


# ------------------------------------------------------------------ checks


def check_url(url: str, *, allow_private: bool) -> str:
    """The endpoint URL, checked: http or https, a host, 8 to 2,048 bytes, and not a
    literal loopback or private address (unless the server allows them).

    A name is resolved only when a delivery connects (where every address it
    resolves to is checked again), so a name that later points somewhere private
    is still refused.
    """
    text = url.strip()
    size = len(text.encode())
    if not URL_MIN_BYTES <= size <= URL_MAX_BYTES:
        raise Invalid(
            f"a webhook URL is {URL_MIN_BYTES} to {URL_MAX_BYTES} bytes; this one is {size}",
            next="Give the full address of the receiver, e.g. https://hooks.example.com/skift.",
            field="url",
        )
    try:
        parts = urlsplit(text)
        host = parts.hostname
        parts.port  # noqa: B018 (a bad port raises here)
    except ValueError as exc:
        raise Invalid(
            f"{text!r} is not a URL ({exc})", next="Give an http or https URL.", field="url"
        ) from None
    if parts.scheme not in ("http", "https") or not host:
        raise Invalid(
            f"{text!r} is not an http or https URL with a host",
            next="Give an address like https://hooks.example.com/skift.",
            field="url",
        )
    if parts.fragment:
        raise Invalid(f"{text!r} has a fragment", next="Leave out the '#…' part.", field="url")
    refusal = _literal_refusal(host, allow_private=allow_private)
    if refusal:
        raise Invalid(
            f"deliveries may not go to {host}: {refusal}",
            next="Give a public address (a server set to allow private addresses accepts "
            "loopback and private ones, for tests and private networks).",
            field="url",
        )
    return text


def _literal_refusal(host: str, *, allow_private: bool) -> str | None:
    if host.lower() in ("localhost", "localhost.") or host.lower().endswith(".localhost"):
        return None if allow_private else f"{host} is a loopback name"
    try:
        return address_refusal(host, allow_private=allow_private)
    except ValueError:
        return None  # a name: checked when a delivery connects


def check_events(events: Sequence[str] | None) -> tuple[str, ...]:
    """The operations an endpoint wants, deduplicated and sorted (empty: all)."""
    out: set[str] = set()
    for op in events or ():
        name = op.strip()
        if not _OP.match(name):
            raise Invalid(
                f"{op!r} is not an event operation",
                next="Give operation names such as create_node or complete_node "
                "(see 'Events' in docs/concepts.md), or none for all.",
                field="operations",
            )
        out.add(name)
    return tuple(sorted(out))


async def _authorize(e: Context, tx: Tx, actor: Actor, project: Project) -> None:
    await e.authorize(tx, actor, [intent("manage_webhook", project=project.slug)])


async def _endpoint(e: Context, tx: Tx, ref: str, *, lock: bool = False) -> Endpoint:
    """The endpoint ``ref`` names; one of a project the caller may not read is, like one
    nobody made, ``no webhook`` (never its project's id)."""
    ident = parse_ulid(ref.strip())
    ep = await tx.endpoint_by_id(ident, lock=lock) if ident is not None else None
    if ep is None or ep.project_id in await e.hidden(tx):
        raise NotFound(f"no webhook {ref!r}", next=_LIST_NEXT)
    return ep


# ------------------------------------------------------------------ rules


async def add_webhook(
    e: Context, tx: Tx, actor: Actor, project: str, url: str, events: Sequence[str] | None
) -> WebhookInfo:
    """Register an endpoint; the result carries its secret, shown this once."""
    proj = await e.resolve_project(tx, project)
    checked = check_url(url, allow_private=e.limits.webhook_allow_private)
    ops = check_events(events)
    await _authorize(e, tx, actor, proj)
    existing = await tx.endpoint_by_url(proj.id, checked)
    if existing is not None:
        raise Conflict(
            f"{checked} is already webhook {ulid_str(existing.id)} of {proj.slug}",
            next="Use that one (rotate it for a new secret, enable it if it is disabled); one "
            "endpoint per URL per project.",
            webhook=ulid_str(existing.id),
        )
    count = len(await tx.endpoints(proj.id))
    bound = e.limits.webhooks_per_project
    if count >= bound:
        raise LimitExceeded(
            f"{proj.slug} has {count} webhooks, the most a project may have",
            next="Disable one you no longer need, or point several consumers at one receiver.",
            limit="webhooks_per_project",
            bound=bound,
        )
    now = await tx.now()
    secret = secrets.token_bytes(SECRET_BYTES)
    ep = Endpoint(
        id=new_id(),
        org_id=tx.org_id,
        project_id=proj.id,
        url=checked,
        events=ops,
        secret=secret,
        created_at=now,
    )
    event = await e._event(  # pyright: ignore[reportPrivateUsage]
        tx,
        actor,
        "create_webhook",
        project_id=proj.id,
        after={"webhook": ulid_str(ep.id), "url": checked, "events": list(ops)},
    )
    await tx.append_events([event])
    # after its creation event, so the endpoint is told of what commits after it
    await tx.insert_endpoint(ep, start_event=event.id)
    return _info(ep, proj.slug, secret)


async def rotate_webhook_secret(e: Context, tx: Tx, actor: Actor, ref: str) -> WebhookInfo:
    """Give an endpoint a new secret (returned this once); the old one stops signing at once."""
    ep = await _endpoint(e, tx, ref, lock=True)
    proj = await e.resolve_project(tx, ulid_str(ep.project_id))
    await _authorize(e, tx, actor, proj)
    secret = secrets.token_bytes(SECRET_BYTES)
    await tx.update_endpoint(attrs.evolve(ep, secret=secret))
    await _append(e, tx, actor, "rotate_webhook_secret", ep)
    return _info(attrs.evolve(ep, secret=secret), proj.slug, secret)


async def set_webhook_enabled(
    e: Context, tx: Tx, actor: Actor, ref: str, *, enabled: bool
) -> WebhookInfo:
    """Disable an endpoint (nothing is sent to it; what commits meanwhile still coalesces
    into its pending delivery) or enable it again (that delivery goes out)."""
    ep = await _endpoint(e, tx, ref, lock=True)
    proj = await e.resolve_project(tx, ulid_str(ep.project_id))
    await _authorize(e, tx, actor, proj)
    if (ep.disabled_at is None) == enabled:
        return _info(ep, proj.slug)
    changed = attrs.evolve(ep, disabled_at=None if enabled else await tx.now())
    await tx.update_endpoint(changed)
    await _append(e, tx, actor, "enable_webhook" if enabled else "disable_webhook", ep)
    return _info(changed, proj.slug)


async def _append(e: Context, tx: Tx, actor: Actor, op: str, ep: Endpoint) -> None:
    event = await e._event(  # pyright: ignore[reportPrivateUsage]
        tx, actor, op, project_id=ep.project_id, after={"webhook": ulid_str(ep.id), "url": ep.url}
    )
    await tx.append_events([event])


async def list_webhooks(
    e: Context,
    tx: Tx,
    project: str | None,
    *,
    limit: int | None = None,
    page: str | None = None,
) -> Page[WebhookInfo]:
    """A project's endpoints (every project's the caller may read when None), by id: every
    one when ``limit`` is None, else ``limit`` of them after ``page`` (keyset)."""
    size = None if limit is None else e.page_size(limit)
    proj = await e.resolve_project(tx, project) if project else None
    name = scoped("webhooks", proj.id if proj else None)
    after = read_position(name, page, (UUID,))
    got = await tx.endpoint_page(
        proj.id if proj else None,
        hidden=await e.hidden(tx),
        after=None if after is None else after[0],
        limit=read_limit(size),
    )
    eps, ends, more = cut_page(name, got, size, lambda ep: (ep.id,))
    slugs = await _slugs(tx, {ep.project_id for ep in eps})
    return Page([_info(ep, slugs[ep.project_id]) for ep in eps], ends=ends, more=more)


async def list_deliveries(
    e: Context,
    tx: Tx,
    *,
    webhook: str | None,
    project: str | None,
    parked: bool,
    limit: int | None,
    page: str | None = None,
) -> Page[DeliveryInfo]:
    """Deliveries newest first (created_at, then id, descending): of one endpoint, of one
    project's, or of every one; ``limit`` of them after ``page`` (keyset: deliveries
    queued meanwhile are before the position and move nothing after it)."""
    size = e.page_size(limit)
    after = read_position("deliveries", page, (datetime, UUID))
    endpoint_id = (await _endpoint(e, tx, webhook)).id if webhook else None
    proj = await e.resolve_project(tx, project) if project else None
    got = await tx.deliveries(
        endpoint_id=endpoint_id,
        project_id=proj.id if proj else None,
        parked_only=parked,
        limit=size + 1,
        hidden=await e.hidden(tx),
        after=None if after is None else (after[0], after[1]),
    )
    rows, ends, more = cut_page("deliveries", got, size, lambda d: (d.created_at, d.id))
    slugs = await _slugs(tx, {d.project_id for d in rows})
    seal = await _stream.seal_of(tx)
    return Page([delivery_info(d, slugs[d.project_id], seal) for d in rows], ends=ends, more=more)


async def _delivery(e: Context, tx: Tx, ref: str) -> Delivery:
    ident = parse_ulid(ref.strip())
    d = await tx.delivery_by_id(ident, lock=True) if ident is not None else None
    if d is None or d.project_id in await e.hidden(tx):
        raise NotFound(f"no delivery {ref!r}", next="List the webhook's deliveries.")
    return d


async def redeliver(e: Context, tx: Tx, actor: Actor, ref: str) -> DeliveryInfo:
    """Queue a delivered or parked delivery again: the same id, the same window, a fresh
    retry schedule."""
    d = await _delivery(e, tx, ref)
    proj = await e.resolve_project(tx, ulid_str(d.project_id))
    await _authorize(e, tx, actor, proj)
    if d.state == "pending":
        raise Conflict(
            f"delivery {ref} is still pending (attempt {d.attempts} made)",
            next="Wait for it: it is attempted on the retry schedule, then delivered or parked.",
        )
    now = await tx.now()
    again = attrs.evolve(d, delivered_at=None, parked_at=None, attempts=0, next_attempt_at=now)
    await tx.update_delivery(again)
    return delivery_info(again, proj.slug, await _stream.seal_of(tx))


async def queue_test_delivery(e: Context, tx: Tx, actor: Actor, ref: str) -> DeliveryInfo:
    """Queue a delivery with an empty window (``after`` equal to ``through``, no counts),
    to check that a receiver is reachable and verifies the signature."""
    ep = await _endpoint(e, tx, ref)
    proj = await e.resolve_project(tx, ulid_str(ep.project_id))
    await _authorize(e, tx, actor, proj)
    assert ep.watermark is not None
    now = await tx.now()
    d = Delivery(
        id=new_id(),
        org_id=tx.org_id,
        project_id=ep.project_id,
        endpoint_id=ep.id,
        through=ep.watermark,
        after=ep.watermark,
        sealed_at=now,
        next_attempt_at=now,
        created_at=now,
    )
    await tx.insert_delivery(d)
    return delivery_info(d, proj.slug, await _stream.seal_of(tx))
