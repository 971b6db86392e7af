-- Named queries of comments and search (conventions as in graph.sql: a
-- `-- name: NAME` header, a one-line comment, %(name)s parameters, org_id in
-- every predicate). Comment rows are read without their search vector.

-- name: _comment_columns
-- A comment's columns, without the generated search vector.
c.id, c.org_id, c.project_id, c.node_id, c.author_id, c.body, c.in_reply_to, c.created_at,
c.edited_at, c.resolved_at, c.resolved_by

-- name: insert_comment
-- Add a comment.
INSERT INTO comments (id, org_id, project_id, node_id, author_id, body, in_reply_to, created_at,
                      edited_at, resolved_at, resolved_by)
VALUES (%(id)s, %(org)s, %(project_id)s, %(node_id)s, %(author_id)s, %(body)s, %(in_reply_to)s,
        %(created_at)s, %(edited_at)s, %(resolved_at)s, %(resolved_by)s)

-- name: update_comment
-- Write a comment's body, edit time and resolution.
UPDATE comments SET body = %(body)s, edited_at = %(edited_at)s, resolved_at = %(resolved_at)s,
    resolved_by = %(resolved_by)s
WHERE org_id = %(org)s AND id = %(id)s

-- name: insert_comment_revision
-- Keep a comment's prior body as its next revision (the comment row is locked by the edit).
INSERT INTO comment_revisions (comment_id, n, org_id, body, author_id, at)
SELECT %(comment)s, coalesce(max(r.n), 0) + 1, %(org)s, %(body)s, %(author)s, %(at)s
FROM comment_revisions r WHERE r.org_id = %(org)s AND r.comment_id = %(comment)s

-- name: comment_by_id
-- One comment.
SELECT /*:_comment_columns*/ FROM comments c WHERE c.org_id = %(org)s AND c.id = %(id)s

-- name: comment_by_id_locked
-- One comment, locked for an edit or a resolution.
SELECT /*:_comment_columns*/ FROM comments c WHERE c.org_id = %(org)s AND c.id = %(id)s
FOR UPDATE

-- name: comments_of
-- The comments on some nodes, oldest first.
SELECT /*:_comment_columns*/ FROM comments c
WHERE c.org_id = %(org)s AND c.node_id = ANY (%(ids)s::uuid[])
ORDER BY c.created_at, c.id

-- name: comment_page
-- A node's comments by (created_at, id), after a key (keyset: reads comments_node from
-- the key on, only the page's rows; every one when the limit is NULL).
SELECT /*:_comment_columns*/ FROM comments c
WHERE c.org_id = %(org)s AND c.node_id = %(id)s
  AND (%(after_at)s::timestamptz IS NULL
       OR (c.created_at, c.id) > (%(after_at)s::timestamptz, %(after_id)s::uuid))
ORDER BY c.created_at, c.id
LIMIT %(limit)s

-- name: comment_revisions
-- The prior bodies of some comments, oldest first.
SELECT r.comment_id, r.body, r.author_id, r.at FROM comment_revisions r
WHERE r.org_id = %(org)s AND r.comment_id = ANY (%(ids)s::uuid[])
ORDER BY r.comment_id, r.n

-- name: comment_hint
-- A claim's comments hint: how many of a node's comments are unresolved, and the newest one's time.
SELECT count(*) AS unresolved, max(c.created_at) AS newest_at FROM comments c
WHERE c.org_id = %(org)s AND c.node_id = %(id)s AND c.resolved_at IS NULL

-- name: _q_all
-- The query: every term (a search's terms are letters and digits only).
plainto_tsquery('simple'::regconfig, array_to_string(%(terms)s::text[], ' '))

-- name: _q_some
-- Any of the terms: what picks candidates from the GIN indexes.
to_tsquery('simple'::regconfig, array_to_string(%(terms)s::text[], ' | '))

-- name: search
-- Nodes whose title, body, result and comments together hold every term, best first.
-- Candidates come from the GIN indexes (any term, in the node or one of its
-- comments); each candidate's whole document (its own vector and its
-- comments' at weight D) must then hold every term. A page after a (rank, project,
-- number) key ranks every match and returns only those after it.
WITH candidates AS (
    SELECT n.id FROM nodes n WHERE n.org_id = %(org)s AND n.search @@ /*:_q_some*/
    UNION
    SELECT c.node_id FROM comments c WHERE c.org_id = %(org)s AND c.search @@ /*:_q_some*/
),
docs AS MATERIALIZED (
    SELECT n.id,
           n.search || coalesce(
               (SELECT skift_tsvector_agg(setweight(c.search, 'D')) FROM comments c
                WHERE c.node_id = n.id),
               ''::tsvector) AS doc
    FROM candidates k
    JOIN nodes n ON n.org_id = %(org)s AND n.id = k.id
    JOIN projects p ON p.org_id = n.org_id AND p.id = n.project_id
    WHERE n.org_id = %(org)s
      AND (%(archived)s OR p.archived_at IS NULL)
      AND (cardinality(%(projects)s::uuid[]) = 0 OR n.project_id = ANY (%(projects)s::uuid[]))
      AND n.project_id <> ALL (%(hidden)s::uuid[])
)
SELECT * FROM (
    -- float8: the rank travels in page tokens, and float4 text does not round-trip
    SELECT n.*, ts_rank(d.doc, /*:_q_all*/)::float8 AS rank
    FROM docs d JOIN nodes n ON n.org_id = %(org)s AND n.id = d.id
    WHERE d.doc @@ /*:_q_all*/
) s
WHERE %(after_rank)s::float8 IS NULL OR s.rank < %(after_rank)s::float8
   OR (s.rank = %(after_rank)s::float8
       AND (s.project_id, s.number) > (%(after_project)s::uuid, %(after_number)s::bigint))
ORDER BY s.rank DESC, s.project_id, s.number
LIMIT %(limit)s

-- name: input_sources
-- ListInputs: the nodes with an edge into a node (its inputs' sources), by project then
-- number after a (project, number) key (keyset), none in the projects the caller may not
-- read; at most %(limit)s (NULL: all). The edges' primary key starts with to_id.
SELECT n.*
FROM edges e JOIN nodes n ON n.id = e.from_id AND n.org_id = e.org_id
WHERE e.org_id = %(org)s AND e.to_id = %(node)s
  AND n.project_id <> ALL (%(hidden)s::uuid[])
  AND (%(after_project)s::uuid IS NULL
       OR (n.project_id, n.number) > (%(after_project)s::uuid, %(after_number)s::bigint))
ORDER BY n.project_id, n.number
LIMIT %(limit)s
