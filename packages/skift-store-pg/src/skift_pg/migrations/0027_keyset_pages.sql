-- 0027: keyset pages (issue 30; docs/grpc.md, "Pages").
--
-- ListWebhookDeliveries pages after the (created_at, id) of the last delivery sent,
-- newest first: the index carries the id too, so a page reads from the key on and
-- only its own rows (limit + 1), however many deliveries come before it.
DROP INDEX webhook_deliveries_list;
CREATE INDEX webhook_deliveries_page ON webhook_deliveries (org_id, created_at DESC, id DESC);
