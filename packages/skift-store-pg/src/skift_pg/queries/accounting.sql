-- Usage and cost, budgets and caps, artifacts and blob metadata (0004).
-- Same conventions as graph.sql: `-- name:` blocks, psycopg placeholders,
-- org_id in every predicate.

-- name: _usage_scope
-- The nodes a usage report covers: one node (and, with subtree, its
-- descendants through parent_id), or every node of a project.
usage_scope AS (
    SELECT n.id FROM nodes n
    WHERE n.org_id = %(org)s
      AND (n.id = %(node)s::uuid OR n.project_id = %(project)s::uuid)
    UNION
    SELECT c.id FROM nodes c JOIN usage_scope s ON c.parent_id = s.id
    WHERE %(subtree)s AND c.org_id = %(org)s
)

-- name: insert_usage
-- Append one usage record.
INSERT INTO usage_records (id, org_id, project_id, node_id, lease_id, principal_id, model,
    input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, kind, basis, created_at)
VALUES (%(id)s, %(org)s, %(project_id)s, %(node_id)s, %(lease_id)s, %(principal_id)s, %(model)s,
    %(input_tokens)s, %(output_tokens)s, %(cache_read_tokens)s, %(cache_write_tokens)s,
    %(kind)s, %(basis)s, %(created_at)s)

-- name: usage_records
-- The newest records in a scope, newest first.
WITH RECURSIVE /*:_usage_scope*/
SELECT u.* FROM usage_records u JOIN usage_scope s ON s.id = u.node_id
WHERE u.org_id = %(org)s
ORDER BY u.created_at DESC, u.id DESC
LIMIT %(limit)s

-- name: usage_totals
-- Token sums per kind and model in a scope: every actual, and only the
-- newest estimate of each node (its current estimate). Sums stay numeric
-- (sum(bigint) is): a sum past bigint's range is the core's to bound, never
-- a "bigint out of range" error that fails every report of the scope.
WITH RECURSIVE /*:_usage_scope*/,
current_estimates AS (
    SELECT DISTINCT ON (u.node_id) u.*
    FROM usage_records u JOIN usage_scope s ON s.id = u.node_id
    WHERE u.org_id = %(org)s AND u.kind = 'estimate'
    ORDER BY u.node_id, u.created_at DESC, u.id DESC
),
picked AS (
    SELECT u.* FROM usage_records u JOIN usage_scope s ON s.id = u.node_id
    WHERE u.org_id = %(org)s AND u.kind = 'actual'
    UNION ALL
    SELECT * FROM current_estimates
)
SELECT kind, model,
    sum(input_tokens) AS input_tokens,
    sum(output_tokens) AS output_tokens,
    sum(cache_read_tokens) AS cache_read_tokens,
    sum(cache_write_tokens) AS cache_write_tokens
FROM picked
GROUP BY kind, model
ORDER BY kind, model

-- name: rates
-- The organization's rate table.
SELECT * FROM rates WHERE org_id = %(org)s ORDER BY model

-- name: rate_page
-- The organization's rates by model, after a model (keyset: reads the primary key from
-- the model on, only the page's rows; every one when the limit is NULL).
SELECT * FROM rates
WHERE org_id = %(org)s AND (%(after)s::text IS NULL OR model > %(after)s::text)
ORDER BY model
LIMIT %(limit)s

-- name: upsert_rate
-- Set a model's rate, replacing the old one.
INSERT INTO rates (org_id, model, input, output, cache_read, cache_write, currency, updated_by, updated_at)
VALUES (%(org)s, %(model)s, %(input)s, %(output)s, %(cache_read)s, %(cache_write)s, %(currency)s,
    %(updated_by)s, %(updated_at)s)
ON CONFLICT (org_id, model) DO UPDATE SET
    input = EXCLUDED.input, output = EXCLUDED.output, cache_read = EXCLUDED.cache_read,
    cache_write = EXCLUDED.cache_write, currency = EXCLUDED.currency,
    updated_by = EXCLUDED.updated_by, updated_at = EXCLUDED.updated_at

-- name: budgets
-- The budget rows of these nodes or projects.
SELECT * FROM budgets WHERE org_id = %(org)s AND scope_id = ANY (%(ids)s::uuid[])

-- name: set_budget
-- Set a node's or a project's budget and cap.
INSERT INTO budgets (scope_id, org_id, scope, budget, cap, updated_at)
VALUES (%(scope_id)s, %(org)s, %(scope)s, %(budget)s, %(cap)s, %(updated_at)s)
ON CONFLICT (org_id, scope_id) DO UPDATE SET
    budget = EXCLUDED.budget, cap = EXCLUDED.cap, updated_at = EXCLUDED.updated_at

-- name: capped_nodes
-- Every node budget row that carries a cap (ClaimNext's skip list starts here).
SELECT * FROM budgets WHERE org_id = %(org)s AND cap IS NOT NULL

-- name: subtree_ids
-- A node and all its descendants.
WITH RECURSIVE sub AS (
    SELECT n.id FROM nodes n WHERE n.org_id = %(org)s AND n.id = %(id)s
    UNION
    SELECT c.id FROM nodes c JOIN sub s ON c.parent_id = s.id WHERE c.org_id = %(org)s
)
SELECT id FROM sub

-- name: insert_artifact
-- Attach one artifact.
INSERT INTO artifacts (id, org_id, node_id, name, description, parts, metadata, author_id, created_at)
VALUES (%(id)s, %(org)s, %(node_id)s, %(name)s, %(description)s, %(parts)s, %(metadata)s,
    %(author_id)s, %(created_at)s)

-- name: artifacts_of
-- The artifacts of these nodes, in attach order.
SELECT * FROM artifacts
WHERE org_id = %(org)s AND node_id = ANY (%(ids)s::uuid[])
ORDER BY created_at, id

-- name: artifact_page
-- A node's artifacts by (created_at, id), after a key (keyset: reads artifacts_node from
-- the key on, only the page's rows; every one when the limit is NULL).
SELECT * FROM artifacts
WHERE org_id = %(org)s AND node_id = %(id)s
  AND (%(after_at)s::timestamptz IS NULL
       OR (created_at, id) > (%(after_at)s::timestamptz, %(after_id)s::uuid))
ORDER BY created_at, id
LIMIT %(limit)s

-- name: count_artifacts
-- How many artifacts a node has (the artifacts_per_node limit).
SELECT count(*) AS n FROM artifacts WHERE org_id = %(org)s AND node_id = %(id)s

-- name: blob
-- This organization's record of a blob.
SELECT * FROM blobs WHERE org_id = %(org)s AND digest = %(digest)s

-- name: blob_readable
-- This organization's record of a blob if the principal may read it: an artifact of a node
-- outside the hidden projects names it, or no artifact names it and the principal uploaded it.
SELECT b.* FROM blobs b
WHERE b.org_id = %(org)s AND b.digest = %(digest)s
  AND (EXISTS (SELECT 1 FROM artifacts a JOIN nodes n ON n.org_id = a.org_id AND n.id = a.node_id
               WHERE a.org_id = b.org_id AND a.parts @> %(probe)s
                 AND n.project_id <> ALL (%(hidden)s::uuid[]))
       OR (b.created_by = %(principal)s
           AND NOT EXISTS (SELECT 1 FROM artifacts a
                           WHERE a.org_id = b.org_id AND a.parts @> %(probe)s)))

-- name: insert_blob
-- Record that this organization holds a blob; the first upload's row stays, touched again
-- (its sweep grace starts over).
INSERT INTO blobs (org_id, digest, size, media_type, created_by, created_at, touched_at)
VALUES (%(org)s, %(digest)s, %(size)s, %(media_type)s, %(created_by)s, %(created_at)s,
        %(created_at)s)
ON CONFLICT (org_id, digest) DO UPDATE SET touched_at = excluded.touched_at

-- name: touch_blob
-- This organization's record of a blob, touched (an artifact about to name it). The row lock
-- this takes until commit keeps a sweep off the row (it skips locked rows, and locks before
-- it checks for artifacts naming it); if a sweep removed the row first, nothing is found.
UPDATE blobs SET touched_at = greatest(coalesce(touched_at, created_at), %(now)s)
WHERE org_id = %(org)s AND digest = %(digest)s
RETURNING *

-- name: lock_blob
-- An upload of these bytes is under way until this transaction ends: a sweep never deletes
-- them meanwhile (it takes the same key exclusively). hashtext may collide: then two digests
-- merely share a lock.
SELECT pg_advisory_xact_lock_shared(1936419188, hashtext(%(digest)s))

-- name: org_limits
-- The size limits the organization set itself ({} when none).
SELECT limits FROM orgs WHERE id = %(org)s

-- name: set_org_limits
-- Replace the organization's own size limits.
UPDATE orgs SET limits = %(limits)s WHERE id = %(org)s
