-- Events partitioned by time (docs/operations.md, "Event partitions").
--
-- events becomes a table partitioned by RANGE (occurred_at):
--   events_before_YYYYMMDD  today's table, attached as is: every event before the cut-off
--   events_YYYYMMDD         one per interval (event_partitioning.every, a year by default)
--                           from the cut-off on, created ahead (event_partitioning.ahead)
--   events_default          the safety net: an event no partition covers lands here, so an
--                           insert never fails for a missing partition; creating a partition
--                           moves the default's rows of its range into it
-- Partitions are kept for ever (the audit record); `skift admin events archive` detaches old
-- ones to a file and `skift admin events attach` brings them back.
--
-- The primary key becomes (id, occurred_at): a unique index on a partitioned table must
-- include the partition key. Nothing references events.id; ids stay ULIDs allocated once.
--
-- What this locks, on a large table: ACCESS EXCLUSIVE on events for the whole migration.
-- Two steps scan today's table under it, unless done beforehand without blocking writes
-- (then the migration takes the lock for milliseconds; measured in docs/benchmarks.md):
--   CREATE UNIQUE INDEX CONCURRENTLY events_id_time ON events (id, occurred_at);
--   ALTER TABLE events ADD CONSTRAINT events_partition_bound
--       CHECK (occurred_at < '2027-02-01 00:00:00+00') NOT VALID;   -- a month start ahead
--   ALTER TABLE events VALIDATE CONSTRAINT events_partition_bound;
-- Without them the migration builds the index and checks the bound itself.

-- How partitions are cut: every `every` from the newest partition's end, at least `ahead`
-- past the present. Changing `every` applies to partitions created afterwards. A year by
-- default: every read of the events (a change-stream page, a node's history) is planned
-- over every partition, so their number is what a read pays for (docs/benchmarks.md:
-- 30 monthly partitions made a stream page 1.12x as slow as one table, five yearly
-- ones 1.04x); archiving goes by whole partitions.
CREATE TABLE event_partitioning (
    one    boolean PRIMARY KEY DEFAULT true CHECK (one),
    every  interval NOT NULL DEFAULT '1 year' CHECK (every >= interval '1 day'),
    ahead  interval NOT NULL DEFAULT '3 months' CHECK (ahead >= interval '0')
);
INSERT INTO event_partitioning DEFAULT VALUES;

-- The partitions of events with their bounds (lo NULL: from the beginning; both NULL and
-- is_default: the default partition).
CREATE FUNCTION skift_event_partitions(
    OUT name text, OUT lo timestamptz, OUT hi timestamptz, OUT is_default boolean
) RETURNS SETOF record LANGUAGE sql STABLE AS $$
    SELECT c.relname::text,
           substring(b FROM 'FROM \(''([^'']+)''\)')::timestamptz,
           substring(b FROM 'TO \(''([^'']+)''\)')::timestamptz,
           b = 'DEFAULT'
    FROM pg_inherits i
    JOIN pg_class c ON c.oid = i.inhrelid
    CROSS JOIN LATERAL pg_get_expr(c.relpartbound, c.oid) AS b
    WHERE i.inhparent = to_regclass('events')
$$;

-- Attach the table `part` (shaped like events) for [lo, hi) (lo NULL: from the beginning):
-- the default partition's rows of that range move into it first (else attaching fails).
-- Returns how many moved.
CREATE FUNCTION skift_attach_event_partition(part text, lo timestamptz, hi timestamptz)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    moved bigint := 0;
BEGIN
    IF to_regclass('events_default') IS NOT NULL THEN
        EXECUTE format(
            'WITH m AS (DELETE FROM events_default WHERE ($1 IS NULL OR occurred_at >= $1) '
            'AND occurred_at < $2 RETURNING *) INSERT INTO %I SELECT * FROM m', part) USING lo, hi;
        GET DIAGNOSTICS moved = ROW_COUNT;
    END IF;
    EXECUTE format('ALTER TABLE events ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%L)',
                   part, coalesce(quote_literal(lo), 'MINVALUE'), hi);
    RETURN moved;
END
$$;

-- Create the partitions that cover `at` and `ahead` past it, each `every` long, following
-- on from the newest (a stretch with no partition, idle longer than `ahead`, stays with the
-- default partition). Serialized by a transaction-level advisory lock, so servers and
-- migrators creating at once never collide. Returns how many were created.
CREATE FUNCTION skift_extend_event_partitions(at timestamptz) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    cfg event_partitioning;
    lo timestamptz;
    made integer := 0;
    part text;
BEGIN
    PERFORM pg_advisory_xact_lock(126905167016963);  -- 0x736B696674_03: skift's partition lock
    SELECT * INTO cfg FROM event_partitioning;
    SELECT max(p.hi) INTO lo FROM skift_event_partitions() p;
    IF lo IS NULL THEN
        RAISE EXCEPTION 'events has no range partition';
    END IF;
    WHILE lo + cfg.every <= at LOOP
        lo := lo + cfg.every;
    END LOOP;
    WHILE lo < at + cfg.ahead LOOP
        part := 'events_' || to_char(lo AT TIME ZONE 'UTC', 'YYYYMMDD');
        EXECUTE format('CREATE TABLE %I (LIKE events INCLUDING DEFAULTS INCLUDING CONSTRAINTS)',
                       part);
        PERFORM skift_attach_event_partition(part, lo, lo + cfg.every);
        made := made + 1;
        lo := lo + cfg.every;
    END LOOP;
    RETURN made;
END
$$;

-- Today's table becomes the first partition.
DO $$
DECLARE
    bound text;
    newest timestamptz;
    cutoff timestamptz;
    legacy text;
    ix text;
BEGIN
    SELECT substring(pg_get_constraintdef(oid) FROM '''([^'']+)''') INTO bound
    FROM pg_constraint
    WHERE conrelid = 'events'::regclass AND conname = 'events_partition_bound';
    IF bound IS NOT NULL THEN
        cutoff := bound::timestamptz;
    ELSE
        -- past the newest event (read per organization from events_org_time) and this month
        SELECT max(x.m) INTO newest
        FROM orgs o, LATERAL (SELECT max(occurred_at) AS m FROM events e WHERE e.org_id = o.id) x;
        cutoff := date_trunc('month', greatest(now(), newest), 'UTC') + interval '1 month';
        EXECUTE format('ALTER TABLE events ADD CONSTRAINT events_partition_bound '
                       'CHECK (occurred_at < %L)', cutoff);
    END IF;
    legacy := 'events_before_' || to_char(cutoff AT TIME ZONE 'UTC', 'YYYYMMDD');

    IF to_regclass('events_id_time') IS NULL THEN
        CREATE UNIQUE INDEX events_id_time ON events (id, occurred_at);
    END IF;
    ALTER TABLE events DROP CONSTRAINT events_pkey;
    ALTER TABLE events ADD CONSTRAINT events_id_time PRIMARY KEY USING INDEX events_id_time;
    EXECUTE format('ALTER INDEX events_id_time RENAME TO %I', legacy || '_pkey');
    FOREACH ix IN ARRAY ARRAY['cursor', 'node', 'project_time', 'org_time', 'request'] LOOP
        EXECUTE format('ALTER INDEX %I RENAME TO %I', 'events_' || ix, legacy || '_' || ix);
    END LOOP;
    EXECUTE format('ALTER TABLE events RENAME TO %I', legacy);

    EXECUTE format('CREATE TABLE events (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS) '
                   'PARTITION BY RANGE (occurred_at)', legacy);
    ALTER TABLE events DROP CONSTRAINT events_partition_bound;
    ALTER TABLE events ADD CONSTRAINT events_pkey PRIMARY KEY (id, occurred_at);
    ALTER TABLE events ADD CONSTRAINT events_org_id_fkey FOREIGN KEY (org_id) REFERENCES orgs (id);
    -- the same indexes as before (0001, 0005, 0011): attaching reuses today's
    CREATE INDEX events_cursor ON events (org_id, xid, id);
    CREATE INDEX events_node ON events (node_id, id) WHERE node_id IS NOT NULL;
    CREATE INDEX events_project_time ON events (project_id, occurred_at)
        WHERE project_id IS NOT NULL;
    CREATE INDEX events_org_time ON events (org_id, occurred_at) INCLUDE (xid);
    CREATE INDEX events_request ON events (org_id, request_id) WHERE request_id IS NOT NULL;

    EXECUTE format('ALTER TABLE events ATTACH PARTITION %I FOR VALUES FROM (MINVALUE) TO (%L)',
                   legacy, cutoff);
    CREATE TABLE events_default PARTITION OF events DEFAULT;
    PERFORM skift_extend_event_partitions(now());
END
$$;
