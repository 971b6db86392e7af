-- Queries of the store's plumbing: migrations and the change listener. Same
-- format as graph.sql: `-- name: NAME`, a one-line comment, the SQL.

-- name: migration_lock
-- Serialize migrators, for one transaction (a pooler in transaction mode keeps no session
-- lock): several servers starting at once apply each migration once.
SELECT pg_advisory_xact_lock(%(key)s)

-- name: migrations_table
-- The record of applied migrations (it cannot be a migration itself).
CREATE TABLE IF NOT EXISTS skift_migrations (
    version     integer PRIMARY KEY,
    name        text NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now()
)

-- name: applied_migrations
-- Which migrations this database already has.
SELECT version FROM skift_migrations

-- name: record_migration
-- Note a migration as applied, in the transaction that applied it.
INSERT INTO skift_migrations (version, name) VALUES (%(version)s, %(name)s)

-- name: listen_changes
-- The ClaimNext wake-up: notifications that something in an organization changed.
LISTEN skift_changes

-- name: transaction_settings
-- Behind a pooler in transaction mode: what a direct connection carries from its start
-- (the statement timeout, no JIT, generic plans for prepared statements; skift_pg._store),
-- for this transaction only. plan_cache_mode matters only behind a pooler that keeps
-- prepared statements (pooler=transaction-prepared): nothing else is prepared there.
SELECT set_config('statement_timeout', %(timeout)s, true), set_config('jit', 'off', true),
       set_config('plan_cache_mode', 'force_generic_plan', true)

-- name: probe
-- The health probe's question on its own connection: does the database answer?
SELECT 1
