-- Size limits an organization sets for itself (docs/results-artifacts-cost.md):
-- name to value, e.g. {"comment_bytes": 4096}; a name absent is the server's
-- limit. A column on orgs rather than a table because an organization has one
-- set, read with the org row's key by any request that checks a size, and
-- jsonb because the names are the engine's (skift.Limits), checked there
-- against the server's ceiling, so a new size limit needs no migration.
ALTER TABLE orgs ADD COLUMN limits jsonb NOT NULL DEFAULT '{}'::jsonb;
