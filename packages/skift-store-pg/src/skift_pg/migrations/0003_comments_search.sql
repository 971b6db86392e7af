-- 0003: comments and search.
--
-- Comments are content on a node and their own entity, not events: events
-- are immutable, and comments are the one thing people edit, thread and
-- resolve. Search is lexical, over node titles, bodies, results and comment
-- bodies, with generated tsvector columns and GIN indexes.
--
-- How text becomes words (the same in skift._search, so the in-memory store
-- agrees on which nodes match): every run of characters that are not letters
-- or digits becomes a space, and the 'simple' configuration lowercases what
-- is left without stemming or stop words. Without the replacement the
-- default parser would keep e-mail addresses, URLs, hyphenated words and
-- decimals as tokens of their own, which the in-memory store cannot mimic.

-- One comment. in_reply_to threads it (the engine checks the parent is on
-- the same node); resolved_at/resolved_by are set once, together. body is
-- the current text; earlier texts live in comment_revisions.
CREATE TABLE comments (
    id           uuid PRIMARY KEY,
    org_id       uuid NOT NULL REFERENCES orgs (id),
    project_id   uuid NOT NULL REFERENCES projects (id),
    node_id      uuid NOT NULL REFERENCES nodes (id),
    author_id    uuid NOT NULL REFERENCES principals (id),
    body         text NOT NULL,
    in_reply_to  uuid REFERENCES comments (id),
    created_at   timestamptz NOT NULL,
    edited_at    timestamptz,
    resolved_at  timestamptz,
    resolved_by  uuid REFERENCES principals (id),
    -- a resolution is all-or-nothing: when and who travel together
    CHECK ((resolved_at IS NULL) = (resolved_by IS NULL)),
    CHECK (in_reply_to IS DISTINCT FROM id),
    -- the comment's words for search; weight D (below titles, bodies and results)
    -- is applied where a node's comments are folded into its document
    search       tsvector GENERATED ALWAYS AS (
        to_tsvector('simple'::regconfig, regexp_replace(body, '[^[:alnum:]]+', ' ', 'g'))
    ) STORED
);
-- A node's comments in order (list_comments, the per-node fold of search).
CREATE INDEX comments_node ON comments (node_id, created_at, id);
-- The comments hint of a claim: unresolved comments of one node, newest first.
CREATE INDEX comments_unresolved ON comments (node_id, created_at) WHERE resolved_at IS NULL;
-- Search candidates among comments.
CREATE INDEX comments_search ON comments USING gin (search);

-- Every body a comment had before an edit: who wrote that text and when.
-- Rows are only ever added; n orders them (1 is the original text).
CREATE TABLE comment_revisions (
    comment_id  uuid NOT NULL REFERENCES comments (id),
    n           integer NOT NULL CHECK (n >= 1),
    org_id      uuid NOT NULL REFERENCES orgs (id),
    body        text NOT NULL,
    author_id   uuid NOT NULL REFERENCES principals (id),
    at          timestamptz NOT NULL,
    PRIMARY KEY (comment_id, n)
);

-- A node's own words for search: title (weight A) above body (B) above
-- result (C), so ts_rank puts a title hit above a body-only one.
ALTER TABLE nodes ADD COLUMN search tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('simple'::regconfig, regexp_replace(title, '[^[:alnum:]]+', ' ', 'g')), 'A')
    || setweight(to_tsvector('simple'::regconfig, regexp_replace(body, '[^[:alnum:]]+', ' ', 'g')), 'B')
    || setweight(to_tsvector('simple'::regconfig,
                             regexp_replace(coalesce(result, ''), '[^[:alnum:]]+', ' ', 'g')), 'C')
) STORED;
-- Search candidates among nodes.
CREATE INDEX nodes_search ON nodes USING gin (search);

-- Concatenates a node's comment vectors into one, so a query's words may
-- match across comments (and across a comment and the node's own fields).
CREATE AGGREGATE skift_tsvector_agg (tsvector) (
    SFUNC = tsvector_concat,
    STYPE = tsvector,
    INITCOND = ''
);
