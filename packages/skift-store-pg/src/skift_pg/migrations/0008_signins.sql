-- 0008: board sign-in codes and sessions (skift._signin, docs/board.md).
--
-- `skift board` mints a one-time code for its caller; the web board spends it,
-- once, for a session whose secret the browser keeps in a cookie. Both are
-- credentials like bearer tokens: only the `sha256:` digest of the secret is
-- kept. They live here rather than in one server's memory because any server
-- over this database may be the one that redeems a code or serves a session.
-- Spending keeps the row (spent_at) until it has long expired, when minting
-- forgets it.

CREATE TABLE signins (
    digest        text PRIMARY KEY,
    kind          text NOT NULL CHECK (kind IN ('code', 'session')),
    org_id        uuid NOT NULL REFERENCES orgs (id),
    principal_id  uuid NOT NULL REFERENCES principals (id),
    created_at    timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL,
    spent_at      timestamptz
);
CREATE INDEX signins_expiry ON signins (expires_at);
