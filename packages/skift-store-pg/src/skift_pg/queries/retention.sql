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
SELECT (/*:_request_applied_at*/) AS at

-- name: _request_applied_at
-- The time of request_applied_at (reserve_request brings it along).
-- The request's events are found apart (OFFSET 0), then their least time taken: min() over
-- the table itself may be planned as a walk of the organization's events in time order
-- (events_org_time), a filter on the request, where events_request finds them at once.
SELECT min(t) FROM (SELECT occurred_at AS t FROM events
WHERE org_id = %(org)s AND request_id = %(rid)s AND principal_id = %(principal)s OFFSET 0) x

-- name: blob_rows_count
-- What a blob sweep would remove: rows untouched since the cut-off that no artifact of their
-- organization names, and the digests all of whose rows those are (their bytes go too).
WITH c AS (
    SELECT b.org_id, b.digest FROM blobs b
    WHERE coalesce(b.touched_at, b.created_at) < %(before)s
      AND NOT EXISTS (
          SELECT 1 FROM artifacts a CROSS JOIN LATERAL jsonb_array_elements(a.parts) AS p
          WHERE a.org_id = b.org_id AND p ->> 'type' = 'blob' AND p ->> 'digest' = b.digest)
)
SELECT (SELECT count(*) FROM c) AS n,
       (SELECT count(DISTINCT c.digest) FROM c
        WHERE (SELECT count(*) FROM blobs o WHERE o.digest = c.digest)
            = (SELECT count(*) FROM c c2 WHERE c2.digest = c.digest)) AS files

-- name: blob_rows_lock
-- Lock the blob rows untouched since the cut-off, skipping any an attach or an upload is
-- touching right now (theirs to keep). Read apart from the delete below, so that one's
-- snapshot is taken once these locks are held: an attach that touched a row and committed
-- before is seen there; one that comes after waits for this transaction.
SELECT org_id, digest FROM blobs
WHERE coalesce(touched_at, created_at) < %(before)s
FOR UPDATE SKIP LOCKED

-- name: blob_rows_delete
-- Of the rows locked above, remove those no artifact of their organization names.
DELETE FROM blobs b
USING unnest(%(orgs)s::uuid[], %(digests)s::text[]) AS l (org_id, digest)
WHERE b.org_id = l.org_id AND b.digest = l.digest
  AND NOT EXISTS (
      SELECT 1 FROM artifacts a CROSS JOIN LATERAL jsonb_array_elements(a.parts) AS p
      WHERE a.org_id = b.org_id AND p ->> 'type' = 'blob' AND p ->> 'digest' = b.digest)
RETURNING b.digest

-- name: blob_sweep_lock
-- Take a digest's upload lock exclusively for this transaction, or learn an upload holds it.
-- (Whether a row records it is asked by the next statement: this one's snapshot was taken
-- before the lock, so it could miss the row of an upload that committed while it waited.)
SELECT pg_try_advisory_xact_lock(1936419188, hashtext(%(digest)s)) AS got

-- name: blob_unrecorded
-- Whether no organization records a digest.
SELECT NOT EXISTS (SELECT 1 FROM blobs b WHERE b.digest = %(digest)s) AS unrecorded

-- name: record_blob_sweep
-- Add what the blob sweep removed to the prune run's record.
UPDATE prune_runs SET blobs = %(blobs)s, blob_files = %(files)s WHERE at = %(at)s
