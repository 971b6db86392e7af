-- The change stream (skift._stream, docs/events.md). A position is (xid, id):
-- the writing transaction's id, then the event's id within it. The horizon is
-- the oldest transaction this statement's snapshot sees running, leaving out
-- those known to run in another database (xids are cluster-wide, but a
-- transaction never changes database, so one elsewhere can never write these
-- events; without that, a bulk load in another database would stall every
-- watcher here). Every transaction below the horizon that could write here
-- has finished, so nothing can ever commit below it again. A running xid that
-- pg_stat_activity does not place (it ended meanwhile, or is hidden from this
-- role) is kept: the horizon only errs low. Each query reads the horizon in
-- the same statement as the rows, so both come from one snapshot (a later
-- snapshot's horizon could pass a commit this one did not see).

-- name: _horizon
-- The horizon as an xid8 expression (see above); backend_xid is a 32-bit xid.
-- least() skips a NULL (a reader that wrote nothing has no xid).
least(
    coalesce(
        (SELECT min(x) FROM pg_snapshot_xip(pg_current_snapshot()) AS x
         WHERE NOT EXISTS (
             SELECT 1 FROM pg_stat_activity a
             WHERE a.backend_xid::text = (x::text::numeric %% 4294967296)::text
               AND a.datname <> current_database())),
        pg_snapshot_xmax(pg_current_snapshot())),
    -- the reading transaction's own, if it wrote (the snapshot does not list it)
    pg_current_xact_id_if_assigned())

-- name: events_after
-- A page of the stream: events strictly after (xid, id) and below the horizon,
-- in commit order, of some projects and operations (all when the list is
-- empty), each row carrying the horizon (one row of NULLs and the horizon when
-- there are none). Reads events_cursor (org_id, xid, id) from the position on.
-- whole: above the horizon too (an export reading all it sees in one snapshot).
WITH h AS (SELECT /*:_horizon*/ AS xmin)
SELECT h.xmin::text AS horizon, e.xid::text AS seq, e.*
FROM h LEFT JOIN LATERAL (
    SELECT * FROM events
    WHERE org_id = %(org)s
      AND (xid, id) > (%(seq)s::text::xid8, %(id)s::uuid)
      AND (xid < h.xmin OR %(whole)s)
      AND (cardinality(%(projects)s::uuid[]) = 0 OR project_id = ANY (%(projects)s::uuid[]))
      AND (cardinality(%(ops)s::text[]) = 0 OR op = ANY (%(ops)s::text[]))
      AND (project_id IS NULL OR project_id <> ALL (%(hidden)s::uuid[]))
    ORDER BY xid, id
    LIMIT %(limit)s
) e ON true
ORDER BY e.xid, e.id

-- name: replay_start
-- Where a watcher without a cursor starts: before the oldest transaction that
-- wrote an event of the organization at or after the start of the replay
-- window, or the horizon if that is lower (a transaction still running may yet
-- commit an event in the window). Reads events_org_time.
WITH h AS (SELECT /*:_horizon*/ AS xmin)
SELECT least(
    h.xmin,
    (SELECT min(xid) FROM events WHERE org_id = %(org)s AND occurred_at >= %(since)s)
)::text AS seq
FROM h

-- name: event_positions
-- The positions of some events, with the horizon (one row of NULLs and the
-- horizon when none is found).
WITH h AS (SELECT /*:_horizon*/ AS xmin)
SELECT h.xmin::text AS horizon, e.xid::text AS seq, e.id
FROM h LEFT JOIN events e ON e.org_id = %(org)s AND e.id = ANY (%(ids)s::uuid[])
