-- Growth made visible (skift._growth): table sizes, the events table's
-- partitions, the oldest parked delivery. Catalog reads only: cheap at any size.

-- name: table_sizes
-- skift's tables in this schema (partitions counted in their parent's row),
-- largest first: the planner's row estimate and bytes with indexes and TOAST.
SELECT c.relname AS name,
       greatest(c.reltuples, 0)::bigint AS rows,
       CASE WHEN c.relkind = 'p'
            THEN (SELECT coalesce(sum(pg_total_relation_size(i.inhrelid)), 0)
                  FROM pg_inherits i WHERE i.inhparent = c.oid)
            ELSE pg_total_relation_size(c.oid) END::bigint AS bytes
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND NOT c.relispartition
ORDER BY bytes DESC, name

-- name: event_partitions
-- The events table's partitions with their bounds (none while it is one table).
SELECT c.relname AS name, greatest(c.reltuples, 0)::bigint AS rows,
       pg_total_relation_size(c.oid)::bigint AS bytes,
       pg_get_expr(c.relpartbound, c.oid) AS bound
FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = to_regclass('events')
ORDER BY name

-- name: oldest_parked
-- When the longest-parked delivery was parked.
SELECT min(parked_at) AS at FROM webhook_deliveries
WHERE parked_at IS NOT NULL AND delivered_at IS NULL
