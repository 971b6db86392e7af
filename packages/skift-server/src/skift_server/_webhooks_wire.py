"""skift.v1's webhook RPCs (docs/webhooks.md): the messages both ways, and the handlers
(decode, call the API, encode; the rules are the engine's)."""

from __future__ import annotations

import skift

from . import _paging as paging
from ._convert import enum_pb, enum_word, opt_ts, ts, utc
from ._proto.skift import v1


def webhook_pb(w: skift.WebhookInfo) -> v1.Webhook:
    return v1.Webhook(
        id=w.id,
        url=w.url,
        project=w.project,
        events=list(w.events),
        created_at=utc(w.created_at),
        disabled_at=utc(w.disabled_at),
    )


def webhook_view(m: v1.Webhook | None, secret: str | None = None) -> skift.WebhookInfo:
    m = m or v1.Webhook()
    return skift.WebhookInfo(
        id=m.id,
        url=m.url,
        project=m.project,
        events=tuple(m.events),
        created_at=ts(m.created_at),
        disabled_at=opt_ts(m.disabled_at),
        secret=secret or None,
    )


def delivery_pb(d: skift.DeliveryInfo) -> v1.WebhookDelivery:
    return v1.WebhookDelivery(
        id=d.id,
        webhook=d.webhook,
        project=d.project,
        state=enum_pb(v1.DeliveryState, d.state),
        attempts=d.attempts,
        next_attempt_at=utc(d.next_attempt_at),
        last_status=d.last_status,
        last_error=d.last_error,
        after=d.after,
        through=d.through,
        counts=dict(d.counts),
        created_at=utc(d.created_at),
        delivered_at=utc(d.delivered_at),
        parked_at=utc(d.parked_at),
    )


def delivery_view(m: v1.WebhookDelivery | None) -> skift.DeliveryInfo:
    m = m or v1.WebhookDelivery()
    return skift.DeliveryInfo(
        id=m.id,
        webhook=m.webhook,
        project=m.project,
        state=enum_word(m.state, v1.DeliveryState, "state") or "",
        attempts=m.attempts,
        next_attempt_at=opt_ts(m.next_attempt_at),
        last_status=m.last_status,
        last_error=m.last_error,
        after=m.after,
        through=m.through,
        counts={k: int(v) for k, v in sorted(m.counts.items())},
        created_at=ts(m.created_at),
        delivered_at=opt_ts(m.delivered_at),
        parked_at=opt_ts(m.parked_at),
    )


# ------------------------------------------------------------------ handlers


def _size(sk: skift.LocalSkift, page_size: int) -> int:
    return sk.engine.page_size(page_size or None)


async def add_webhook(sk: skift.LocalSkift, r: v1.AddWebhookRequest) -> v1.AddWebhookResponse:
    got = await sk.add_webhook(r.project, r.url, events=list(r.events) or None)
    return v1.AddWebhookResponse(webhook=webhook_pb(got), secret=got.secret or "")


async def list_webhooks(sk: skift.LocalSkift, r: v1.ListWebhooksRequest) -> v1.ListWebhooksResponse:
    token = paging.decode("ListWebhooks", r)
    got = [webhook_pb(w) for w in await sk.webhooks(project=r.project)]
    items, nxt = paging.slice_page("ListWebhooks", got, token, _size(sk, r.page_size), r)
    return v1.ListWebhooksResponse(webhooks=items, next_page_token=nxt)


async def rotate_webhook_secret(
    sk: skift.LocalSkift, r: v1.RotateWebhookSecretRequest
) -> v1.RotateWebhookSecretResponse:
    got = await sk.rotate_webhook_secret(r.webhook)
    return v1.RotateWebhookSecretResponse(webhook=webhook_pb(got), secret=got.secret or "")


async def disable_webhook(
    sk: skift.LocalSkift, r: v1.DisableWebhookRequest
) -> v1.DisableWebhookResponse:
    return v1.DisableWebhookResponse(webhook=webhook_pb(await sk.disable_webhook(r.webhook)))


async def enable_webhook(
    sk: skift.LocalSkift, r: v1.EnableWebhookRequest
) -> v1.EnableWebhookResponse:
    return v1.EnableWebhookResponse(webhook=webhook_pb(await sk.enable_webhook(r.webhook)))


async def list_webhook_deliveries(
    sk: skift.LocalSkift, r: v1.ListWebhookDeliveriesRequest
) -> v1.ListWebhookDeliveriesResponse:
    token = paging.decode("ListWebhookDeliveries", r)
    got = await sk.webhook_deliveries(
        r.webhook,
        project=r.project,
        parked=r.parked,
        limit=_size(sk, r.page_size),
        page=token.core if token else None,
    )
    items = paging.encoded(delivery_pb(d) for d in got)
    k = paging.fit(items)
    return v1.ListWebhookDeliveriesResponse(
        deliveries=items[:k], next_page_token=paging.next_token(got, k, r)
    )


async def redeliver_webhook(
    sk: skift.LocalSkift, r: v1.RedeliverWebhookRequest
) -> v1.RedeliverWebhookResponse:
    return v1.RedeliverWebhookResponse(delivery=delivery_pb(await sk.redeliver(r.delivery)))


async def test_webhook(sk: skift.LocalSkift, r: v1.TestWebhookRequest) -> v1.TestWebhookResponse:
    return v1.TestWebhookResponse(delivery=delivery_pb(await sk.test_webhook(r.webhook)))
