-- 0030: a node's live-lease probe reads that node's entry, whatever the statistics say
-- (issue 31; docs/benchmarks.md, "live-lease probes by key").
--
-- A probe "has this node an unreleased lease" (org_id = ?, node_id = ?, released_at IS
-- NULL) matched three partial indexes WHERE released_at IS NULL: leases_one_unreleased
-- (org_id, node_id), leases_live_page (org_id, created_at, id) and leases_expiry (org_id,
-- expires_at). Without statistics (a new database, never ANALYZEd) the planner costs the
-- three the same, one row each, and picked leases_live_page: each probe then walked every
-- live lease of the organization (a generic plan kept for the connection's life).
--
-- The organization's live lists and the sweeper now find unreleased leases by
-- release_reason IS NULL, the same rows (CHECK ((released_at IS NULL) = (release_reason IS
-- NULL)) since 0001), and their indexes by that predicate: a probe by node, which says
-- released_at IS NULL, cannot use them, and is read from leases_one_unreleased (or
-- leases_page, by node) by its key.
--
-- Building the two indexes locks writes to leases (a SHARE lock) while the table is read
-- once each. On a large table, build them first without blocking writes, and this
-- migration then skips them:
--   CREATE INDEX CONCURRENTLY IF NOT EXISTS leases_live_list
--       ON leases (org_id, created_at, id) WHERE release_reason IS NULL;
--   CREATE INDEX CONCURRENTLY IF NOT EXISTS leases_sweep
--       ON leases (org_id, expires_at) WHERE release_reason IS NULL;
-- Each DROP takes a brief ACCESS EXCLUSIVE lock on leases; nothing is scanned.
CREATE INDEX IF NOT EXISTS leases_live_list ON leases (org_id, created_at, id)
    WHERE release_reason IS NULL;
CREATE INDEX IF NOT EXISTS leases_sweep ON leases (org_id, expires_at)
    WHERE release_reason IS NULL;
DROP INDEX leases_live_page;
DROP INDEX leases_expiry;
