"""skift.v1's webhook RPCs written by hand (docs/webhooks.md): the paged lists, ListWebhooks
and ListWebhookDeliveries. The others are made from their declarations (``_simple``); the
rules are the engine's."""

from __future__ import annotations

import skift

from . import _paging as paging
from ._convert_wire import encoded
from ._proto.skift import v1

# ------------------------------------------------------------------ handlers


def _size(sk: skift.LocalSkift, page_size: int) -> int:
    return sk.engine.page_size(page_size or None)


async def list_webhooks(sk: skift.LocalSkift, r: v1.ListWebhooksRequest) -> v1.ListWebhooksResponse:
    token = paging.decode("ListWebhooks", r)
    got = await sk.webhooks(
        project=r.project, limit=_size(sk, r.page_size), page=token.core if token else None
    )
    items, nxt = paging.core_page(got, v1.Webhook, r)
    return v1.ListWebhooksResponse(webhooks=items, next_page_token=nxt)


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
    items = encoded(v1.WebhookDelivery, got)
    k = paging.fit(items)
    return v1.ListWebhookDeliveriesResponse(
        deliveries=items[:k], next_page_token=paging.next_token(got, k, r)
    )
