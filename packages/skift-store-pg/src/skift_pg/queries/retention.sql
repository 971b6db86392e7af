-- Retention of what is not audit (skift._retention): pruning idempotency
-- records and claim cursors past their windows, across organizations, under
-- one advisory lock so two servers over one database never prune at once.

-- name: prune_lock
-- Take the prune lock for this transaction, or learn another run holds it.
SELECT pg_try_advisory_xact_lock(%(key)s) AS got, now() + %(offset)s::interval AS now

-- name: prune_count
-- What a prune would remove.
SELECT (SELECT count(*) FROM requests WHERE created_at < %(requests_before)s) AS requests,
       (SELECT count(*) FROM claim_cursors WHERE updated_at < %(cursors_before)s) AS claim_cursors

-- name: prune_delete
-- Remove request records and claim cursors past their windows (reads
-- requests_created and claim_cursors_updated), and record the run.
WITH r AS (DELETE FROM requests WHERE created_at < %(requests_before)s RETURNING 1),
     c AS (DELETE FROM claim_cursors WHERE updated_at < %(cursors_before)s RETURNING 1),
     n AS (SELECT (SELECT count(*) FROM r) AS requests, (SELECT count(*) FROM c) AS claim_cursors),
     ins AS (
         INSERT INTO prune_runs (at, requests, claim_cursors, requests_before, claim_cursors_before)
         SELECT %(now)s, n.requests, n.claim_cursors, %(requests_before)s, %(cursors_before)s FROM n
         ON CONFLICT (at) DO NOTHING
     )
SELECT requests, claim_cursors FROM n

-- name: last_prune
-- The last prune run that removed (not a dry run).
SELECT * FROM prune_runs ORDER BY at DESC LIMIT 1

-- name: request_applied_at
-- When this principal's events first carried a request id (reads events_request).
SELECT min(occurred_at) AS at FROM events
WHERE org_id = %(org)s AND request_id = %(rid)s AND principal_id = %(principal)s
