-- The change stream's replay window (docs/events.md). A watcher that gives no
-- cursor starts at the oldest transaction that wrote an event of its
-- organization inside the window (replay_start in queries/events.sql). The
-- audit record is kept forever, so an organization's history before the
-- window only grows; this index finds the window's events without reading it,
-- and carries xid so the minimum is read from the index alone.
CREATE INDEX events_org_time ON events (org_id, occurred_at) INCLUDE (xid);
