-- Webhooks (migrations/0009_webhooks.sql, skift._webhooks): endpoints, the
-- delivery outbox written with the events, and the worker's claim.

-- name: _new_ulid
-- A ULID as uuid minted in SQL (48 bits of the store's clock in ms, 80 random bits),
-- for the rows one statement creates per endpoint.
(lpad(to_hex((extract(epoch FROM %(now)s::timestamptz) * 1000)::bigint), 12, '0')
 || substr(md5(random()::text || clock_timestamp()::text), 1, 20))::uuid

-- name: _announce
-- The tail of the statements below: from `ev` (the events just appended: project_id, op,
-- id), coalesce them into the open delivery of every endpoint of their projects (enabled
-- or not) that wants their operations and whose watermark is before them: counts added,
-- through moved to the newest position. Nothing when no endpoint matches.
matched AS (
    SELECT e.id AS endpoint_id, e.project_id, ev.op, count(*) AS n, max(ev.id::text)::uuid AS last_id
    FROM webhook_endpoints e
    JOIN ev ON ev.project_id = e.project_id
    WHERE e.org_id = %(org)s
      AND (cardinality(e.events) = 0 OR ev.op = ANY (e.events))
      AND (pg_current_xact_id(), ev.id) > (e.watermark_seq, e.watermark_id)
    GROUP BY e.id, e.project_id, ev.op
),
per AS (
    SELECT endpoint_id, project_id, max(last_id::text)::uuid AS through_id, jsonb_object_agg(op, n) AS counts
    FROM matched
    GROUP BY endpoint_id, project_id
)
INSERT INTO webhook_deliveries AS d (id, org_id, project_id, endpoint_id, through_seq,
                                     through_id, counts, next_attempt_at, created_at)
SELECT /*:_new_ulid*/, %(org)s, per.project_id, per.endpoint_id, pg_current_xact_id(),
       per.through_id, per.counts, %(now)s, %(now)s
FROM per
ON CONFLICT (org_id, endpoint_id) WHERE sealed_at IS NULL DO UPDATE SET
    through_seq = greatest(d.through_seq, EXCLUDED.through_seq),
    through_id = CASE WHEN (EXCLUDED.through_seq, EXCLUDED.through_id) > (d.through_seq, d.through_id)
                      THEN EXCLUDED.through_id ELSE d.through_id END,
    counts = (SELECT jsonb_object_agg(k, s)
              FROM (SELECT k, sum(v::bigint) AS s
                    FROM (SELECT key AS k, value AS v FROM jsonb_each_text(d.counts)
                          UNION ALL
                          SELECT key, value FROM jsonb_each_text(EXCLUDED.counts)) AS u
                    GROUP BY k) AS t)

-- name: announce_events
-- Coalesce the events a transaction just appended (several, already inserted) into the
-- open deliveries of their projects' endpoints; one statement however many events.
WITH ev AS (
    SELECT x.project_id, x.op, x.id
    FROM unnest(%(projects)s::uuid[], %(ops)s::text[], %(ids)s::uuid[]) AS x (project_id, op, id)
),
/*:_announce*/

-- name: insert_event_announced
-- Append one event and coalesce it into the open deliveries of its project's endpoints:
-- a write of one event costs no statement more for webhooks (ClaimNext waiters are woken
-- after the commit: `wake`).
WITH /*:_event_announced*/

-- name: _event_announced
-- insert_event_announced but its WITH: the tail of the writes that go with one event
-- (graph.sql's claim_writes, complete_writes).
ev AS (
    INSERT INTO events (id, org_id, project_id, node_id, principal_id, principal_kind, on_behalf_of,
                        identity_scheme, request_id, op, reason, before, after, occurred_at)
    VALUES (%(id)s, %(org)s, %(project_id)s, %(node_id)s, %(principal_id)s, %(principal_kind)s,
            %(on_behalf_of)s, %(identity_scheme)s, %(request_id)s, %(op)s, %(reason)s, %(before)s,
            %(after)s, %(occurred_at)s)
    RETURNING project_id, op, id
),
/*:_announce*/

-- name: insert_endpoint
-- A new endpoint; its watermark is the position of its creation event (written
-- earlier in this transaction).
INSERT INTO webhook_endpoints (id, org_id, project_id, url, events, secret, created_at,
                               disabled_at, watermark_seq, watermark_id)
SELECT %(id)s, %(org)s, %(project_id)s, %(url)s, %(events)s, %(secret)s, %(created_at)s,
       %(disabled_at)s, xid, id
FROM events
WHERE org_id = %(org)s AND id = %(start_event)s

-- name: endpoint_by_id
-- One endpoint of the organization.
SELECT * FROM webhook_endpoints WHERE org_id = %(org)s AND id = %(id)s

-- name: endpoint_by_id_locked
-- One endpoint of the organization, locked for a change.
SELECT * FROM webhook_endpoints WHERE org_id = %(org)s AND id = %(id)s FOR UPDATE

-- name: endpoint_by_url
-- A project's endpoint at this URL (one per URL per project).
SELECT * FROM webhook_endpoints
WHERE org_id = %(org)s AND project_id = %(project_id)s AND url = %(url)s

-- name: endpoints
-- A project's endpoints (every project's when the project is NULL), oldest first.
SELECT * FROM webhook_endpoints
WHERE org_id = %(org)s AND (%(project_id)s::uuid IS NULL OR project_id = %(project_id)s)
ORDER BY id

-- name: endpoint_page
-- A project's endpoints (every project's when the project is NULL) by id, none of the
-- hidden projects, after an id (keyset: reads webhook_endpoints_page, or the primary key
-- for every project, from the id on; every one when the limit is NULL).
SELECT * FROM webhook_endpoints
WHERE org_id = %(org)s AND (%(project_id)s::uuid IS NULL OR project_id = %(project_id)s)
  AND project_id <> ALL (%(hidden)s::uuid[])
  AND (%(after)s::uuid IS NULL OR id > %(after)s::uuid)
ORDER BY id
LIMIT %(limit)s

-- name: update_endpoint
-- Write an endpoint's secret, events and disabled_at.
UPDATE webhook_endpoints SET secret = %(secret)s, events = %(events)s, disabled_at = %(disabled_at)s
WHERE org_id = %(org)s AND id = %(id)s

-- name: deliveries
-- Deliveries newest first, of one endpoint and/or project (all when NULL), parked only
-- when asked, none of the hidden projects, after a (created_at, id) key (keyset: reads
-- webhook_deliveries_page from the key on, only the page's rows).
SELECT d.*, d.after_seq::text AS after_seq_text, d.through_seq::text AS through_seq_text
FROM webhook_deliveries d
WHERE d.org_id = %(org)s
  AND (%(endpoint_id)s::uuid IS NULL OR d.endpoint_id = %(endpoint_id)s)
  AND (%(project_id)s::uuid IS NULL OR d.project_id = %(project_id)s)
  AND (NOT %(parked_only)s OR d.parked_at IS NOT NULL)
  AND d.project_id <> ALL (%(hidden)s::uuid[])
  AND (%(after_at)s::timestamptz IS NULL
       OR (d.created_at, d.id) < (%(after_at)s::timestamptz, %(after_id)s::uuid))
ORDER BY d.created_at DESC, d.id DESC
LIMIT %(limit)s

-- name: delivery_by_id
-- One delivery of the organization, locked for a change.
SELECT d.*, d.after_seq::text AS after_seq_text, d.through_seq::text AS through_seq_text
FROM webhook_deliveries d WHERE d.org_id = %(org)s AND d.id = %(id)s FOR UPDATE

-- name: insert_delivery
-- A delivery made whole (a test delivery: sealed, with an empty window).
INSERT INTO webhook_deliveries (id, org_id, project_id, endpoint_id, after_seq, after_id,
                                through_seq, through_id, counts, sealed_at, attempts,
                                next_attempt_at, created_at)
VALUES (%(id)s, %(org)s, %(project_id)s, %(endpoint_id)s, %(after_seq)s::text::xid8, %(after_id)s,
        %(through_seq)s::text::xid8, %(through_id)s, %(counts)s, %(sealed_at)s, %(attempts)s,
        %(next_attempt_at)s, %(created_at)s)

-- name: update_delivery
-- Write a delivery's attempts, next attempt, delivered_at and parked_at (redeliver).
UPDATE webhook_deliveries
SET attempts = %(attempts)s, next_attempt_at = %(next_attempt_at)s,
    delivered_at = %(delivered_at)s, parked_at = %(parked_at)s
WHERE org_id = %(org)s AND id = %(id)s

-- name: claim_deliveries
-- The worker's claim, in every organization: up to `limit` deliveries due now, of
-- enabled endpoints, rows others hold skipped. An endpoint's deliveries go one at a
-- time, oldest first: a sealed one waits for no older sealed one still pending, an
-- open one for none at all. An open one is sealed only once its through is below
-- the change stream's horizon (every transaction that could add to its window has
-- finished): after becomes the endpoint's watermark, the watermark its through.
-- Each claimed row's next attempt moves `until` ahead (the attempt's lease).
WITH h AS (SELECT /*:_horizon*/ AS xmin),
picked AS (
    SELECT d.org_id, d.id, d.sealed_at IS NULL AS opening
    FROM webhook_deliveries d
    JOIN webhook_endpoints e ON e.org_id = d.org_id AND e.id = d.endpoint_id
    WHERE d.delivered_at IS NULL AND d.parked_at IS NULL
      AND d.next_attempt_at <= %(now)s
      AND e.disabled_at IS NULL
      AND (d.sealed_at IS NOT NULL OR d.through_seq < (SELECT xmin FROM h))
      AND NOT EXISTS (
          SELECT 1 FROM webhook_deliveries o
          WHERE o.endpoint_id = d.endpoint_id
            AND o.sealed_at IS NOT NULL AND o.delivered_at IS NULL AND o.parked_at IS NULL
            AND o.id <> d.id
            AND (d.sealed_at IS NULL OR o.id < d.id))
    ORDER BY d.next_attempt_at, d.id
    LIMIT %(limit)s
    FOR UPDATE OF d SKIP LOCKED
),
claimed AS (
    UPDATE webhook_deliveries d
    SET attempts = d.attempts + 1,
        next_attempt_at = %(until)s,
        sealed_at = coalesce(d.sealed_at, %(now)s),
        after_seq = CASE WHEN p.opening THEN e.watermark_seq ELSE d.after_seq END,
        after_id = CASE WHEN p.opening THEN e.watermark_id ELSE d.after_id END
    FROM picked p, webhook_endpoints e
    WHERE d.org_id = p.org_id AND d.id = p.id AND e.org_id = d.org_id AND e.id = d.endpoint_id
    RETURNING d.*, p.opening, e.url, e.secret
),
moved AS (
    UPDATE webhook_endpoints e
    SET watermark_seq = c.through_seq, watermark_id = c.through_id
    FROM claimed c
    WHERE c.opening AND e.org_id = c.org_id AND e.id = c.endpoint_id
)
SELECT c.*, c.after_seq::text AS after_seq_text, c.through_seq::text AS through_seq_text,
       pr.slug AS project_slug
FROM claimed c JOIN projects pr ON pr.org_id = c.org_id AND pr.id = c.project_id
ORDER BY c.next_attempt_at, c.id

-- name: settle_delivery
-- An attempt's outcome, if the delivery is still on that attempt: delivered, retried
-- at retry_at, or parked (not delivered and no retry_at).
UPDATE webhook_deliveries
SET delivered_at = CASE WHEN %(delivered)s THEN %(now)s END,
    parked_at = CASE WHEN NOT %(delivered)s AND %(retry_at)s::timestamptz IS NULL THEN %(now)s END,
    next_attempt_at = coalesce(%(retry_at)s::timestamptz, next_attempt_at),
    last_status = %(status)s,
    last_error = %(error)s
WHERE org_id = %(org)s AND id = %(id)s AND attempts = %(attempts)s
  AND delivered_at IS NULL AND parked_at IS NULL

-- name: delivery_stats
-- Deliveries by state in every organization, and when the oldest pending one was made.
SELECT count(*) FILTER (WHERE delivered_at IS NULL AND parked_at IS NULL) AS pending,
       count(*) FILTER (WHERE delivered_at IS NOT NULL) AS delivered,
       count(*) FILTER (WHERE parked_at IS NOT NULL) AS parked,
       min(created_at) FILTER (WHERE delivered_at IS NULL AND parked_at IS NULL) AS oldest_pending_at
FROM webhook_deliveries

-- name: store_now
-- The store's clock outside a transaction: the database's, shifted only by a test's offset.
SELECT now() + %(offset)s::interval AS now
