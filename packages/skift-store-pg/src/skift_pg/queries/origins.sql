-- Named queries of node origins (imports; conventions as in graph.sql).

-- name: origins_of_project
-- Every origin of one source in a project.
SELECT o.node_id, o.org_id, o.project_id, o.source, o.external_id, o.extra FROM node_origins o
WHERE o.org_id = %(org)s AND o.project_id = %(project_id)s AND o.source = %(source)s

-- name: origins_by_external_id
-- The origins naming one external id, in any project of the organization.
SELECT o.node_id, o.org_id, o.project_id, o.source, o.external_id, o.extra FROM node_origins o
WHERE o.org_id = %(org)s AND o.external_id = %(external_id)s
ORDER BY o.project_id

-- name: upsert_origin
-- Record where a node came from, or what its source says now.
INSERT INTO node_origins (node_id, org_id, project_id, source, external_id, extra)
VALUES (%(node_id)s, %(org)s, %(project_id)s, %(source)s, %(external_id)s, %(extra)s)
ON CONFLICT (org_id, node_id, source) DO UPDATE
SET external_id = excluded.external_id, extra = excluded.extra

-- name: origins_scratch
-- An empty scratch table for many origins at once (upsert_origins_scratch reads it), gone at
-- the end of the transaction.
CREATE TEMP TABLE IF NOT EXISTS origins_in (LIKE node_origins INCLUDING DEFAULTS) ON COMMIT DROP

-- name: origins_scratch_clear
-- Empty the scratch table (a second batch in one transaction).
TRUNCATE origins_in

-- name: upsert_origins_scratch
-- Record the origins copied into the scratch table (upsert_origin for many).
INSERT INTO node_origins (node_id, org_id, project_id, source, external_id, extra)
SELECT node_id, org_id, project_id, source, external_id, extra FROM origins_in
ON CONFLICT (org_id, node_id, source) DO UPDATE
SET external_id = excluded.external_id, extra = excluded.extra
