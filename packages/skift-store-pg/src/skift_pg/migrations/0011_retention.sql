-- Retention of what is not audit (skift._retention, docs/operations.md).
--
-- A request id whose idempotency record was pruned is refused if it comes
-- again: its events still carry it. This index finds them by
-- (org, request id) without reading the organization's history.
--
-- Building it locks writes to events (a SHARE lock) for as long as the build
-- takes: a few seconds per million events. On a large table, build it first
-- without blocking writes, and this migration then skips it:
--   CREATE INDEX CONCURRENTLY IF NOT EXISTS events_request
--       ON events (org_id, request_id) WHERE request_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_request ON events (org_id, request_id)
    WHERE request_id IS NOT NULL;

-- Claim cursors unused for a window are pruned by updated_at.
CREATE INDEX IF NOT EXISTS claim_cursors_updated ON claim_cursors (updated_at);

-- One row per prune run that removed (not a dry run): what it removed, for
-- skift admin stats and /metrics. A handful of rows a day at most.
CREATE TABLE prune_runs (
    at                    timestamptz PRIMARY KEY,
    requests              bigint NOT NULL,
    claim_cursors         bigint NOT NULL,
    requests_before       timestamptz NOT NULL,
    claim_cursors_before  timestamptz NOT NULL
);
