-- Blobs unreferenced for a grace period are swept by prune (skift._retention,
-- docs/operations.md). A blob row's grace runs from the last time it was
-- touched: uploaded (again) or named by an artifact being attached. A row
-- from before this migration counts from its creation (touched_at NULL).
ALTER TABLE blobs ADD COLUMN touched_at timestamptz;

-- The sweep asks whether any organization still records a digest (the bytes
-- are shared); the primary key leads with org_id.
CREATE INDEX blobs_digest ON blobs (digest);

-- What a prune run removed of blobs: rows, and files of bytes no row names.
ALTER TABLE prune_runs
    ADD COLUMN blobs bigint NOT NULL DEFAULT 0,
    ADD COLUMN blob_files bigint NOT NULL DEFAULT 0;
