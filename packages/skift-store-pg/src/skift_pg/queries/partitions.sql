-- Events partitioned by time (migrations/0012_event_partitions.sql, docs/operations.md):
-- creating partitions ahead, archiving old ones to a file and attaching them back.

-- name: extend_event_partitions
-- Create the partitions that cover the present and the configured time ahead (under the
-- partition lock, in the function); how many were created.
SELECT skift_extend_event_partitions(now() + %(offset)s::interval) AS made

-- name: partitioned
-- Whether events is partitioned yet (migrate extends partitions only then).
SELECT to_regprocedure('skift_extend_event_partitions(timestamptz)') IS NOT NULL AS yes

-- name: partition_lock_timeout
-- A scheduled run gives up rather than queue behind a long reader (the next run retries).
SET LOCAL lock_timeout = '5s'

-- name: event_partition_list
-- Every partition of events (skift._partitions), oldest first, the default last.
SELECT name, lo, hi, is_default FROM skift_event_partitions()
ORDER BY is_default, hi NULLS LAST

-- name: event_columns
-- The columns of events in table order: an archive's COPY names them.
SELECT attname FROM pg_attribute
WHERE attrelid = 'events'::regclass AND attnum > 0 AND NOT attisdropped
ORDER BY attnum

-- name: database_now
-- The database's clock: which partitions have ended.
SELECT now()

-- name: attach_event_partition
-- Attach a partition written back from an archive, with its bounds.
SELECT skift_attach_event_partition(%(name)s, %(lo)s, %(hi)s)
