"""skift.v1's webhook RPCs (docs/webhooks.md): the handlers (decode, call the API, encode;
the rules are the engine's)."""

from __future__ import annotations

import skift

from . import _paging as paging
from ._convert_types import to_pb
from ._proto.skift import v1

# ------------------------------------------------------------------ handlers


def _size(sk: skift.LocalSkift, page_size: int) -> int:
    return sk.engine.page_size(page_size or None)


async def add_webhook(sk: skift.LocalSkift, r: v1.AddWebhookRequest) -> v1.AddWebhookResponse:
    got = await sk.add_webhook(r.project, r.url, events=list(r.events) or None)
    return to_pb(v1.AddWebhookResponse, got)


async def list_webhooks(sk: skift.LocalSkift, r: v1.ListWebhooksRequest) -> v1.ListWebhooksResponse:
    token = paging.decode("ListWebhooks", r)
    got = [to_pb(v1.Webhook, w) for w in await sk.webhooks(project=r.project)]
    items, nxt = paging.slice_page("ListWebhooks", got, token, _size(sk, r.page_size), r)
    return v1.ListWebhooksResponse(webhooks=items, next_page_token=nxt)


async def rotate_webhook_secret(
    sk: skift.LocalSkift, r: v1.RotateWebhookSecretRequest
) -> v1.RotateWebhookSecretResponse:
    got = await sk.rotate_webhook_secret(r.webhook)
    return to_pb(v1.RotateWebhookSecretResponse, got)


async def disable_webhook(
    sk: skift.LocalSkift, r: v1.DisableWebhookRequest
) -> v1.DisableWebhookResponse:
    return v1.DisableWebhookResponse(webhook=to_pb(v1.Webhook, await sk.disable_webhook(r.webhook)))


async def enable_webhook(
    sk: skift.LocalSkift, r: v1.EnableWebhookRequest
) -> v1.EnableWebhookResponse:
    return v1.EnableWebhookResponse(webhook=to_pb(v1.Webhook, await sk.enable_webhook(r.webhook)))


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
    items = paging.encoded(to_pb(v1.WebhookDelivery, d) for d in got)
    k = paging.fit(items)
    return v1.ListWebhookDeliveriesResponse(
        deliveries=items[:k], next_page_token=paging.next_token(got, k, r)
    )


async def redeliver_webhook(
    sk: skift.LocalSkift, r: v1.RedeliverWebhookRequest
) -> v1.RedeliverWebhookResponse:
    return v1.RedeliverWebhookResponse(
        delivery=to_pb(v1.WebhookDelivery, await sk.redeliver(r.delivery))
    )


async def test_webhook(sk: skift.LocalSkift, r: v1.TestWebhookRequest) -> v1.TestWebhookResponse:
    return v1.TestWebhookResponse(
        delivery=to_pb(v1.WebhookDelivery, await sk.test_webhook(r.webhook))
    )
