-- Secrets of the server itself, shared by every server over this database and
-- kept across restarts: today the key that seals event cursors (skift._seal),
-- so a cursor one server handed out opens on another and after a restart.
-- Never readable through the API; made on first use.
CREATE TABLE server_secrets (
    name        text PRIMARY KEY,
    value       bytea NOT NULL CHECK (length(value) >= 32),
    created_at  timestamptz NOT NULL
);
