-- The graph store's named queries. Each block starts with `-- name: NAME`
-- and a one-line comment saying what it is for. Blocks whose name starts
-- with an underscore are fragments: the loader splices them where another
-- query says /*:_name*/, once, at load time. Parameters are psycopg's
-- %(name)s placeholders; nothing is ever formatted into SQL at run time.
-- Every predicate carries org_id: a transaction never sees another
-- organization's rows.

-- name: _held_tree
-- The held subtree: every node that carries a hold or has an ancestor that does.
held_tree AS (
    SELECT h.id FROM nodes h WHERE h.org_id = %(org)s AND h.held_at IS NOT NULL
    UNION
    SELECT c.id FROM nodes c JOIN held_tree t ON c.parent_id = t.id WHERE c.org_id = %(org)s
)

-- name: _blocked
-- A blocks edge into n whose source has not satisfied it: open, or a dropped gate.
EXISTS (
    SELECT 1 FROM edges e JOIN nodes s ON s.org_id = e.org_id AND s.id = e.from_id
    WHERE e.org_id = n.org_id AND e.to_id = n.id AND e.kind = 'blocks'
      AND (s.status = 'open' OR (s.status = 'dropped' AND s.assignee_kind IS NOT DISTINCT FROM 'user'))
)

-- name: _open_children
-- n has a child that is still open (the nodes_open_children index answers it).
EXISTS (SELECT 1 FROM nodes c WHERE c.parent_id = n.id AND c.status = 'open')

-- name: _claimed
-- n has a live lease: unreleased and not yet expired by the transaction's clock.
-- A probe by node says released_at IS NULL, the predicate of leases_one_unreleased alone
-- (the lists' and the sweeper's indexes say release_reason IS NULL: migration 0030), and
-- ends in OFFSET 0, so it stays a subquery run per row by n's key: never an anti-join whose
-- inner side walks the organization's live leases for each node (Ready on a new database)
-- nor a hashed subplan that reads them all (derive after ANALYZE). It reads that node's
-- entries whatever the statistics say.
EXISTS (
    SELECT 1 FROM leases l
    WHERE l.org_id = n.org_id AND l.node_id = n.id AND l.released_at IS NULL
      AND l.expires_at > %(now)s OFFSET 0
)

-- name: _held
-- n, an ancestor or its project carries a hold (needs the held_tree CTE and p).
(p.held_at IS NOT NULL OR n.id IN (SELECT id FROM held_tree))

-- name: _held_one
-- n, an ancestor or its project carries a hold (needs p), by walking up from
-- n alone: for a few rows (a claim's candidates, derive's ids) this is a
-- handful of primary-key probes, where the held_tree CTE walks every held
-- subtree of the organization.
-- The walk carries each ancestor's hold and stops at the first one; EXISTS
-- reads it lazily, so a node without a parent costs nothing.
(p.held_at IS NOT NULL OR n.held_at IS NOT NULL OR EXISTS (
  WITH RECURSIVE up (next, held, depth) AS (
    SELECT a.parent_id, a.held_at IS NOT NULL, 1 FROM nodes a
    WHERE a.id = n.parent_id AND a.org_id = %(org)s
    UNION ALL
    SELECT a.parent_id, a.held_at IS NOT NULL, up.depth + 1 FROM up JOIN nodes a ON a.id = up.next
    WHERE NOT up.held AND a.org_id = %(org)s AND up.depth < 10000
  )
  SELECT 1 FROM up WHERE up.held
))

-- name: _filter
-- The NodeFilter of Ready, ClaimNext and ListNodes, and the projects the
-- caller may not read (%(hidden)s, the policy's read decision; usually empty).
-- %(skip)s is the bookkeeping kind Ready and ClaimNext leave out, else ''
-- (no node's kind: an empty kind is stored as task). The parameters' names are
-- short: the claim's statements splice it among several fragments (psycopg caches
-- the parsed form of every named query whatever its length, see skift_pg._tx).
n.org_id = %(org)s
AND (cardinality(%(projects)s::uuid[]) = 0 OR n.project_id = ANY (%(projects)s::uuid[]))
AND (cardinality(%(kinds)s::text[]) = 0 OR n.kind = ANY (%(kinds)s::text[]))
AND n.labels @> %(labels)s::text[]
AND (cardinality(%(anyl)s::text[]) = 0 OR n.labels && %(anyl)s::text[])
AND (%(akind)s::text IS NULL OR n.assignee_kind = %(akind)s::text)
AND (NOT %(agents)s OR n.assignee_kind IS DISTINCT FROM 'user')
AND n.kind <> %(skip)s
AND n.priority <= %(max_rank)s
AND (%(parent)s::uuid IS NULL OR n.parent_id = %(parent)s::uuid)
AND n.id <> ALL (%(exclude)s::uuid[])
AND n.project_id <> ALL (%(hidden)s::uuid[])

-- name: _ready_unheld
-- Ready but for holds: open, in a live project, unblocked, no open children, no live lease.
n.status = 'open'
AND p.archived_at IS NULL
AND NOT /*:_blocked*/
AND NOT /*:_open_children*/
AND NOT /*:_claimed*/

-- name: ready_heads
-- Ready, a project at a time: the projects in turn order (ascending id after
-- the caller's rotation cursor, then wrapping around), and for each the top
-- %(per)s ready nodes by priority, age and number, read off the
-- nodes_open_order index and stopping there. The nested loop keeps the
-- projects' order and the outer LIMIT stops it once enough rows are in, so a
-- page of 50 over a million nodes reads about 50 projects' heads instead of
-- ranking every ready node. The store assembles the turns (one node per
-- project per pass) from these rows. A walk's later page passes, for each
-- project it has sent nodes of, the (priority, age, number) of the last one
-- (%(kp)s, %(kr)s, %(kc)s, %(kn)s, one element per project): the project's
-- walk of the index starts after it, so a page reads only its own rows.
SELECT x.*, (%(after)s::uuid IS NOT NULL AND x.project_id <= %(after)s::uuid) AS wrapped
FROM (
    SELECT p.id, p.archived_at, p.held_at,
           coalesce(k.r, -1) AS kr, coalesce(k.c, '-infinity') AS kc, coalesce(k.n, 0) AS kn
    FROM projects p
    LEFT JOIN unnest(%(kp)s::uuid[], %(kr)s::smallint[], %(kc)s::timestamptz[], %(kn)s::bigint[])
        AS k (p, r, c, n) ON k.p = p.id
    WHERE p.org_id = %(org)s AND p.archived_at IS NULL AND p.held_at IS NULL
      AND (cardinality(%(projects)s::uuid[]) = 0 OR p.id = ANY (%(projects)s::uuid[]))
      AND p.id <> ALL (%(hidden)s::uuid[])
    ORDER BY (%(after)s::uuid IS NOT NULL AND p.id <= %(after)s::uuid), p.id
) p
CROSS JOIN LATERAL (
    SELECT n.* FROM nodes n
    WHERE n.project_id = p.id AND /*:_filter*/ AND /*:_ready_unheld*/ AND NOT /*:_held_one*/
      AND (n.priority, n.created_at, n.number) > (p.kr, p.kc, p.kn)
    ORDER BY n.org_id, n.project_id, n.priority, n.created_at, n.number
    LIMIT %(per)s
) x
LIMIT %(limit)s

-- name: held_count
-- How many nodes in scope would be ready but for a hold, counting at most
-- %(at_most)s of them (NULL: all). Driven from the holds (the open nodes of
-- held projects, and the held subtrees) rather than from every node, and each
-- parked node checked on its own (LATERAL ... OFFSET 0 keeps the planner,
-- which cannot estimate a recursive walk, from hashing the whole graph
-- instead). Every parked node is reached exactly once (a held subtree's walk
-- stops above the next held node, which walks its own, and a node of a held
-- project counts with its project), so nothing is sorted or de-duplicated:
-- the walk is lazy and stops as soon as %(at_most)s nodes have counted. The
-- walk carries the columns the filter reads, so a candidate is not read twice.
WITH RECURSIVE held_tree (
    id, org_id, project_id, kind, labels, assignee_kind, priority, parent_id, status, depth
) AS (
    SELECT h.id, h.org_id, h.project_id, h.kind, h.labels, h.assignee_kind, h.priority,
           h.parent_id, h.status, 1
    FROM nodes h WHERE h.org_id = %(org)s AND h.held_at IS NOT NULL
      AND (cardinality(%(projects)s::uuid[]) = 0 OR h.project_id = ANY (%(projects)s::uuid[]))
    UNION ALL
    SELECT c.*, t.depth + 1 FROM held_tree t CROSS JOIN LATERAL (
        SELECT c.id, c.org_id, c.project_id, c.kind, c.labels, c.assignee_kind, c.priority,
               c.parent_id, c.status
        FROM nodes c
        WHERE c.parent_id = t.id AND c.org_id = %(org)s AND c.held_at IS NULL OFFSET 0
    ) c
    WHERE t.depth < 10000
)
SELECT count(*) AS n FROM (
    SELECT 1 FROM (
        SELECT n.id, n.org_id, n.project_id, n.kind, n.labels, n.assignee_kind, n.priority,
               n.parent_id, n.status, true AS by_project
        FROM projects p JOIN nodes n ON n.project_id = p.id
        WHERE p.org_id = %(org)s AND p.held_at IS NOT NULL AND n.org_id = %(org)s
          AND n.status = 'open'
          AND (cardinality(%(projects)s::uuid[]) = 0 OR p.id = ANY (%(projects)s::uuid[]))
        UNION ALL
        SELECT id, org_id, project_id, kind, labels, assignee_kind, priority, parent_id, status,
               false
        FROM held_tree WHERE status = 'open'
    ) n CROSS JOIN LATERAL (
        SELECT 1 FROM projects p
        WHERE p.org_id = n.org_id AND p.id = n.project_id AND (n.by_project OR p.held_at IS NULL)
          AND /*:_filter*/ AND /*:_ready_unheld*/
        OFFSET 0
    ) x
    LIMIT %(at_most)s::bigint
) counted

-- name: lock_next_ready
-- ClaimNext's take: the top ready node (priority, age, number) of the first
-- project after the rotation cursor that has one, wrapping around to the
-- projects up to the cursor; locked, skipping rows other claimers hold. The
-- projects with open nodes are found in turn order by a loose index scan of
-- nodes_open_order (one probe each, the wrapped range only when the first has no
-- ready node), and for each, by LATERAL, a LIMIT 1 walk of its nodes (no window
-- function, so FOR UPDATE is allowed, and the walk stops at the first ready row):
-- the readiness is spliced once, so planning it, which happens on every call,
-- costs about a third of what the two ranges' splices cost (take_next_ready's
-- _take_turns is the same walk). The node's project comes along (p_*) so the
-- claim needs no second read of it.
WITH RECURSIVE turns_a (id) AS (
SELECT (SELECT n.project_id FROM nodes n WHERE n.org_id = %(org)s AND n.status = 'open'
AND (%(after)s::uuid IS NULL OR n.project_id > %(after)s::uuid)
ORDER BY n.org_id, n.project_id LIMIT 1)
UNION ALL
SELECT (SELECT n.project_id FROM nodes n WHERE n.org_id = %(org)s AND n.status = 'open'
AND n.project_id > t.id ORDER BY n.org_id, n.project_id LIMIT 1)
FROM turns_a t WHERE t.id IS NOT NULL
), turns_b (id) AS (
SELECT (SELECT n.project_id FROM nodes n WHERE n.org_id = %(org)s AND n.status = 'open'
AND n.project_id <= %(after)s::uuid ORDER BY n.org_id, n.project_id LIMIT 1)
UNION ALL
SELECT (SELECT n.project_id FROM nodes n WHERE n.org_id = %(org)s AND n.status = 'open'
AND n.project_id > t.id AND n.project_id <= %(after)s::uuid
ORDER BY n.org_id, n.project_id LIMIT 1)
FROM turns_b t WHERE t.id IS NOT NULL
), picked AS (
SELECT x.* FROM (SELECT id FROM turns_a UNION ALL SELECT id FROM turns_b) t
CROSS JOIN LATERAL (
SELECT n.* FROM nodes n JOIN projects p ON p.org_id = n.org_id AND p.id = n.project_id
WHERE t.id IS NOT NULL AND n.project_id = t.id
AND /*:_filter*/ AND /*:_ready_unheld*/ AND NOT /*:_held_one*/
ORDER BY n.org_id, n.project_id, n.priority, n.created_at, n.number
LIMIT 1 FOR UPDATE OF n SKIP LOCKED
) x LIMIT 1
)
SELECT x.*, p.slug AS p_slug, p.title AS p_title, p.node_counter AS p_node_counter,
       p.priority AS p_priority, p.vcs_url AS p_vcs_url, p.archived_at AS p_archived_at,
       p.held_at AS p_held_at, p.held_by AS p_held_by, p.held_reason AS p_held_reason,
       p.hold_group AS p_hold_group, p.created_at AS p_created_at, p.readers AS p_readers,
       set_config('skift.claimed', x.id::text, true) AS claimed_mark
FROM picked x JOIN projects p ON p.org_id = x.org_id AND p.id = x.project_id

-- name: take_next_ready
-- ClaimNext's first statement when nothing about the filter needs working out in Python:
-- the caller's rotation cursor (read here, not sent), the transaction's clock, and the
-- next ready node of the filter in turn order, locked as lock_next_ready locks it; taken
-- only when the organization has no restricted project, no stored policy and no cap
-- (simple: the projects hidden from the caller and the nodes under a spent cap are then
-- none, which the caller states by sending empty hidden and exclude). Otherwise nothing
-- is locked and the caller works them out and calls lock_next_ready. One row either way,
-- with the clock, restricted projects, policy digest and caps as `get_cursor` has them.
-- Planned for each call's values (an optional filter); take_next_ready_any, for a filter
-- of nothing, is prepared.
WITH RECURSIVE /*:_take_cursor*/, /*:_take_turns*/
AND /*:_filter*/ AND /*:_take_ready*/
/*:_take_lock*/

-- name: take_next_ready_any
-- take_next_ready for an agent's filter of nothing (every project, kind, label and
-- priority; no gate, and not the bookkeeping kind, as _filter leaves them out): prepared
-- and planned once per connection. Nothing but the organization, the caller and the clock is
-- a parameter: with the assignee rule and the bookkeeping kind as parameters the generic
-- plan's estimate fell to one row, so its LIMIT 1 saved nothing on paper, PostgreSQL judged
-- it 300x dearer than a plan made for the values and planned every call again (3.4 ms of
-- planning a claim against 0.6 ms of execution). The kind is skift.BOOKKEEPING_KIND
-- (_tx_graph checks it).
WITH RECURSIVE /*:_take_cursor*/, /*:_take_turns*/
AND n.assignee_kind IS DISTINCT FROM 'user' AND /*:_take_any*/
/*:_take_lock*/

-- name: take_next_ready_any_person
-- take_next_ready_any for a person's filter of nothing: gates too.
WITH RECURSIVE /*:_take_cursor*/, /*:_take_turns*/
AND /*:_take_any*/
/*:_take_lock*/

-- name: _take_any
-- take_next_ready_any's condition but the assignee's: not bookkeeping, and ready.
n.kind <> 'sweep-state' AND /*:_take_ready*/

-- name: _take_cursor
-- take_next_ready's first CTEs: the cursor, clock, restricted projects, policy digest and
-- caps (c), and the cursor and clock when none of those needs the engine (ok).
c AS MATERIALIZED (
SELECT (SELECT project_id FROM claim_cursors WHERE org_id = %(org)s
AND principal_id = %(principal)s AND filter_hash = %(hash)s) AS project_id,
now() + %(offset)s::interval AS now, /*:_restricted*/ AS restricted,
/*:_policy_digest*/ AS policy_digest,
EXISTS (SELECT 1 FROM budgets WHERE org_id = %(org)s AND cap IS NOT NULL) AS has_caps
), ok AS MATERIALIZED (
SELECT c.project_id AS after, c.now FROM c
WHERE c.restricted = '[]'::jsonb AND c.policy_digest = '' AND NOT c.has_caps
)

-- name: _take_turns
-- take_next_ready's walk, opening the CTE `picked`: the projects that have open nodes, in
-- turn order (ascending id after the caller's rotation cursor, all when there is none,
-- then wrapping around to those up to it), each found by one probe of nodes_open_order
-- from the one before (a loose index scan: projects without open nodes cost nothing, the
-- wrapped range is walked only when the first has no ready node); for each, by LATERAL,
-- its nodes_open_order index walked to the first ready node, locked, skipping rows other
-- claimers hold (the outer LIMIT 1 stops at the first project that has one). The
-- readiness is spliced once, not once per range as before: a new connection plans the
-- statement in about half the time. The caller's conditions on n follow, then _take_lock.
turns_a (id) AS (
SELECT (SELECT n.project_id FROM nodes n WHERE n.org_id = %(org)s AND n.status = 'open'
AND n.project_id > coalesce((SELECT after FROM ok), '00000000-0000-0000-0000-000000000000')
ORDER BY n.org_id, n.project_id LIMIT 1)
UNION ALL
SELECT (SELECT n.project_id FROM nodes n WHERE n.org_id = %(org)s AND n.status = 'open'
AND n.project_id > t.id ORDER BY n.org_id, n.project_id LIMIT 1)
FROM turns_a t WHERE t.id IS NOT NULL
), turns_b (id) AS (
SELECT (SELECT n.project_id FROM nodes n WHERE n.org_id = %(org)s AND n.status = 'open'
AND n.project_id <= (SELECT after FROM ok) ORDER BY n.org_id, n.project_id LIMIT 1)
UNION ALL
SELECT (SELECT n.project_id FROM nodes n WHERE n.org_id = %(org)s AND n.status = 'open'
AND n.project_id > t.id AND n.project_id <= (SELECT after FROM ok)
ORDER BY n.org_id, n.project_id LIMIT 1)
FROM turns_b t WHERE t.id IS NOT NULL
), picked AS (
SELECT x.* FROM (SELECT id FROM turns_a UNION ALL SELECT id FROM turns_b) t
CROSS JOIN LATERAL (
SELECT n.* FROM nodes n JOIN projects p ON p.org_id = n.org_id AND p.id = n.project_id
WHERE t.id IS NOT NULL AND n.org_id = %(org)s AND n.project_id = t.id

-- name: _take_lock
-- take_next_ready's end: the walk's order and lock (closing _take_turns), and its row:
-- the picked node with its project (p_*), the cursor, the clock and the rest of c.
ORDER BY n.org_id, n.project_id, n.priority, n.created_at, n.number
LIMIT 1 FOR UPDATE OF n SKIP LOCKED
) x LIMIT 1
)
SELECT x.*, p.slug AS p_slug, p.title AS p_title, p.node_counter AS p_node_counter,
p.priority AS p_priority, p.vcs_url AS p_vcs_url, p.archived_at AS p_archived_at,
p.held_at AS p_held_at, p.held_by AS p_held_by, p.held_reason AS p_held_reason,
p.hold_group AS p_hold_group, p.created_at AS p_created_at, p.readers AS p_readers,
set_config('skift.claimed', x.id::text, true) AS claimed_mark,
c.project_id AS cursor, c.now, c.restricted, c.policy_digest, c.has_caps,
EXISTS (SELECT 1 FROM ok) AS simple
FROM c LEFT JOIN (picked x JOIN projects p ON p.org_id = x.org_id AND p.id = x.project_id) ON true

-- name: _take_ready
-- _ready_unheld and not held, the live lease judged by the clock of ok, and only when ok
-- has its row (take_next_ready). The values of ok are scalar subqueries, each worked out
-- once.
-- The live-lease test ends in OFFSET 0, so it stays a probe of leases_one_unreleased by each
-- candidate's key, not a join over every lease: take_next_ready_any is planned without
-- sequential scans on tables that may be empty (SEEK_PLANNED), where the two cost the same.
EXISTS (SELECT 1 FROM ok) AND n.status = 'open' AND p.archived_at IS NULL
AND NOT /*:_blocked*/ AND NOT /*:_open_children*/
AND NOT EXISTS (SELECT 1 FROM leases l
WHERE l.org_id = n.org_id AND l.node_id = n.id AND l.released_at IS NULL
AND l.expires_at > (SELECT now FROM ok) OFFSET 0)
AND NOT /*:_held_one*/

-- name: _claimed_id
-- The node this transaction's lock_next_ready or take_next_ready locked (its
-- transaction-local setting skift.claimed; null when none).
nullif(current_setting('skift.claimed', true), '')::uuid

-- name: claim_reads
-- What a claim reads of the node take_next_ready just locked (Work._take), one statement
-- sent right behind it (its snapshot follows the lock, as the check of a lease committed
-- meanwhile needs): the node's derived facts by the statement's clock, its unreleased lease
-- (l_*, null when none), the edges into it (e_*, arrays in step), who wrote it and those
-- edges' sources (a_*, arrays in step) and its comments hint. One row (none when nothing
-- was locked), where five statements each cost a parse, a plan and a result of their own.
-- The lease is a LATERAL probe by the node's key (OFFSET 0: see _take_ready).
WITH k AS MATERIALIZED (SELECT /*:_claimed_id*/ AS id),
e AS MATERIALIZED (
SELECT x.from_id, x.kind, x.created_at FROM edges x, k WHERE x.org_id = %(org)s AND x.to_id = k.id
), a AS MATERIALIZED (
/*:_authors_columns*/
FROM (SELECT id FROM k UNION SELECT from_id FROM e) AS i (id)
/*:_authors_of*/
)
SELECT /*:_derived*/, /*:_claimed_now*/ AS claimed,
l.id AS l_id, l.org_id AS l_org_id, l.node_id AS l_node_id, l.holder AS l_holder,
l.harness AS l_harness, l.agent_ref AS l_agent_ref, l.session_ref AS l_session_ref,
l.created_at AS l_created_at, l.expires_at AS l_expires_at, l.ttl AS l_ttl,
l.on_behalf_of AS l_on_behalf_of, l.released_at AS l_released_at,
l.release_reason AS l_release_reason,
ee.e_from, ee.e_kind, ee.e_created,
aa.a_node, aa.a_body_id, aa.a_body_kind, aa.a_body_name,
aa.a_result_id, aa.a_result_kind, aa.a_result_name,
ch.unresolved, ch.newest_at
FROM k JOIN nodes n ON n.org_id = %(org)s AND n.id = k.id
JOIN projects p ON p.org_id = n.org_id AND p.id = n.project_id
LEFT JOIN LATERAL (SELECT * FROM leases l WHERE l.org_id = n.org_id AND l.node_id = n.id
AND l.released_at IS NULL OFFSET 0) l ON true
CROSS JOIN (SELECT array_agg(from_id) AS e_from, array_agg(kind) AS e_kind,
array_agg(created_at) AS e_created FROM e) ee
CROSS JOIN (SELECT array_agg(node_id) AS a_node, array_agg(body_id) AS a_body_id,
array_agg(body_kind) AS a_body_kind, array_agg(body_name) AS a_body_name,
array_agg(result_id) AS a_result_id, array_agg(result_kind) AS a_result_kind,
array_agg(result_name) AS a_result_name FROM a) aa
CROSS JOIN (SELECT count(*) AS unresolved, max(c.created_at) AS newest_at FROM comments c
WHERE c.org_id = %(org)s AND c.node_id = (SELECT id FROM k) AND c.resolved_at IS NULL) ch

-- name: unreleased_lease_of_claimed
-- unreleased_lease of the node lock_next_ready just locked (named by the transaction's
-- skift.claimed setting), sent in the same round trip right behind it: a statement of its
-- own, so its snapshot is taken after the lock, as the claim's check of a lease committed
-- meanwhile needs (Work._take).
SELECT * FROM leases
WHERE org_id = %(org)s AND released_at IS NULL
  AND node_id = /*:_claimed_id*/

-- name: derive
-- The derived facts of some nodes: blocked, held, claimed, open children, archived.
SELECT /*:_derived*/, /*:_claimed*/ AS claimed
FROM nodes n JOIN projects p ON p.org_id = n.org_id AND p.id = n.project_id
WHERE n.org_id = %(org)s AND n.id = ANY (%(ids)s::uuid[])

-- name: _derived
-- derive's columns but claimed (which reads a clock).
n.id, /*:_blocked*/ AS blocked, /*:_held_one*/ AS held,
/*:_open_children*/ AS open_children, p.archived_at IS NOT NULL AS archived,
EXISTS (
    SELECT 1 FROM events e WHERE e.node_id = n.id AND e.principal_kind = 'user'
) AS human_written

-- name: _claimed_now
-- _claimed by the statement's clock (for reads sent before the transaction knows it).
EXISTS (
    SELECT 1 FROM leases l WHERE l.org_id = n.org_id AND l.node_id = n.id
      AND l.released_at IS NULL AND l.expires_at > now() + %(offset)s::interval OFFSET 0
)

-- name: derive_by_number
-- derive of a node by its project's slug and number, by the statement's clock: a
-- complete's, sent behind its lock with the transaction's first read (expect_complete).
SELECT /*:_derived*/, /*:_claimed_now*/ AS claimed
FROM project_slugs s JOIN nodes n ON n.project_id = s.project_id
JOIN projects p ON p.org_id = n.org_id AND p.id = n.project_id
WHERE s.org_id = %(org)s AND s.slug = %(slug)s AND n.org_id = %(org)s AND n.number = %(number)s

-- name: complete_reads
-- A lone complete's first statement (expect_complete), where four went before: the project
-- by slug with the clock, restricted projects and policy digest (project_by_slug_primed's
-- columns; the project's as p_*, null when the slug names none), the request's
-- reservation (r_*), the lease, locked (l_*, null when it is not there or none was named)
-- and the node by number, locked (its columns as they are, null when there is none).
-- The request is reserved before the patch's fingerprint can be worked out (it names the
-- node): with an empty fingerprint, which set_fingerprint or save_response_fingerprint
-- fills in the same transaction (nobody sees the row before COMMIT: a concurrent request
-- with the id waits on the insert). A locked row is read as it is when locked, so one
-- snapshot for all four changes nothing of what was read; the node's derived facts go in a
-- statement of their own behind it (derive_by_number: their snapshot follows the locks).
WITH ins AS (
INSERT INTO requests (org_id, principal_id, request_id, fingerprint, created_at)
VALUES (%(org)s, %(principal)s, %(rid)s, '', now() + %(offset)s::interval)
ON CONFLICT (org_id, principal_id, request_id) DO NOTHING
RETURNING request_id
), l AS MATERIALIZED (
SELECT * FROM leases WHERE org_id = %(org)s AND id = %(lease)s::uuid FOR UPDATE
), n AS MATERIALIZED (
SELECT n.* FROM project_slugs s JOIN nodes n ON n.project_id = s.project_id
WHERE s.org_id = %(org)s AND s.slug = %(slug)s AND n.org_id = %(org)s AND n.number = %(number)s
FOR UPDATE OF n
)
SELECT n.*, p.id AS p_id, p.org_id AS p_org_id, p.slug AS p_slug, p.title AS p_title,
p.node_counter AS p_node_counter, p.priority AS p_priority, p.vcs_url AS p_vcs_url,
p.archived_at AS p_archived_at, p.held_at AS p_held_at, p.held_by AS p_held_by,
p.held_reason AS p_held_reason, p.hold_group AS p_hold_group, p.created_at AS p_created_at,
p.readers AS p_readers,
now() + %(offset)s::interval AS now, /*:_restricted*/ AS restricted,
/*:_policy_digest*/ AS policy_digest,
(SELECT request_id FROM ins) AS r_request_id, (/*:_request_applied_at*/) AS r_applied_at,
l.id AS l_id, l.org_id AS l_org_id, l.node_id AS l_node_id, l.holder AS l_holder,
l.harness AS l_harness, l.agent_ref AS l_agent_ref, l.session_ref AS l_session_ref,
l.created_at AS l_created_at, l.expires_at AS l_expires_at, l.ttl AS l_ttl,
l.on_behalf_of AS l_on_behalf_of, l.released_at AS l_released_at,
l.release_reason AS l_release_reason
FROM (SELECT) AS one
LEFT JOIN (project_slugs s JOIN projects p ON p.org_id = s.org_id AND p.id = s.project_id)
ON s.org_id = %(org)s AND s.slug = %(slug)s
LEFT JOIN l ON true
LEFT JOIN n ON true

-- name: set_fingerprint
-- The fingerprint of a request reserved by complete_reads (when the transaction
-- commits without saving a response: save_response_fingerprint sets both).
UPDATE requests SET fingerprint = %(fingerprint)s
WHERE org_id = %(org)s AND principal_id = %(principal)s AND request_id = %(rid)s

-- name: save_response_fingerprint
-- save_response of a request reserved by complete_reads, with its fingerprint: one
-- write of the row instead of two.
UPDATE requests SET fingerprint = %(fingerprint)s, response = %(response)s
WHERE org_id = %(org)s AND principal_id = %(principal)s AND request_id = %(rid)s

-- name: list_nodes
-- ListNodes: nodes matching the filter in any state, by project then number, after a
-- (project, number) key (keyset: the (org_id, project_id, number) key from there on).
WITH RECURSIVE /*:_held_tree*/
SELECT n.*
FROM nodes n JOIN projects p ON p.org_id = n.org_id AND p.id = n.project_id
WHERE /*:_filter*/
  AND (%(status)s::text IS NULL OR n.status = %(status)s::text)
  AND (%(held)s::boolean IS NULL OR /*:_held*/ = %(held)s::boolean)
  AND (%(after_project)s::uuid IS NULL
       OR (n.project_id, n.number) > (%(after_project)s::uuid, %(after_number)s::bigint))
ORDER BY n.project_id, n.number
LIMIT %(limit)s

-- name: wait_arcs_from
-- Every (waiter, waited_on) arc reachable from some nodes along the wait
-- relation: blocks edges (the target waits on the source) and containment
-- (a parent waits on each child). The engine looks for a cycle in them.
WITH RECURSIVE walk (id) AS (
    SELECT unnest(%(ids)s::uuid[])
    UNION
    SELECT x.waited
    FROM walk, LATERAL (
        SELECT e.from_id AS waited FROM edges e WHERE e.to_id = walk.id AND e.org_id = %(org)s
        UNION ALL
        SELECT c.id FROM nodes c WHERE c.parent_id = walk.id AND c.org_id = %(org)s
    ) x
)
SELECT e.to_id AS waiter, e.from_id AS waited
FROM edges e WHERE e.org_id = %(org)s AND e.to_id IN (SELECT id FROM walk)
UNION ALL
SELECT c.parent_id, c.id
FROM nodes c WHERE c.org_id = %(org)s AND c.parent_id IN (SELECT id FROM walk)

-- name: now
-- The transaction's clock: the database's, shifted only by a test's offset;
-- and the organization's restricted projects and stored policy's digest, which
-- every request's read decision needs (one round trip for all three).
SELECT now() + %(offset)s::interval AS now, /*:_restricted*/ AS restricted,
       /*:_policy_digest*/ AS policy_digest

-- name: _restricted
-- The restricted projects (the read decision's input) as one JSON array, each
-- with its readers' ids and names; an index probe (projects_restricted) when
-- there are none.
(SELECT coalesce(jsonb_agg(jsonb_build_object(
    'id', p.id, 'slug', p.slug, 'readers', p.readers,
    'names', (SELECT coalesce(jsonb_agg(x.name), '[]') FROM principals x
              WHERE x.org_id = p.org_id AND x.id = ANY (p.readers))) ORDER BY p.id), '[]')
 FROM projects p WHERE p.org_id = %(org)s AND p.readers IS NOT NULL)

-- name: seqscan_off
-- Sequential scans off until seqscan_on or the transaction's end: queued right before the
-- Bind at which one of the claim's or the complete's statements (SEEK_PLANNED) is prepared,
-- so that its plan is index lookups at any table size (PgCursor; no round trip of its own).
-- Behind a pooler that keeps prepared statements, before each run of them in a transaction
-- (any Bind there may be a server connection's first).
SELECT set_config('enable_seqscan', 'off', true)

-- name: seqscan_on
-- Sequential scans back on, queued right after that Bind (behind a pooler that keeps
-- prepared statements, before the next statement that is not one of them).
SELECT set_config('enable_seqscan', 'on', true)

-- name: graph_lock
-- Serialize writes that change the wait relation within one organization.
SELECT pg_advisory_xact_lock(%(key)s)

-- name: wake
-- Wake ClaimNext waiters of this organization: sent right after a writing transaction's
-- COMMIT, in a transaction of its own (a NOTIFY inside the writing transaction held
-- PostgreSQL's database-wide notify lock through that transaction's WAL flush, and
-- concurrent commits queued on it). It commits without waiting for its WAL flush: a
-- wake-up lost to a crash only delays a waiter until its next poll (at most a second).
SELECT pg_notify('skift_changes', %(org)s::text), set_config('synchronous_commit', 'off', true)

-- name: ensure_org
-- The organization of this name, created on first use.
WITH ins AS (
    INSERT INTO orgs (id, name, created_at) VALUES (%(id)s, %(name)s, now())
    ON CONFLICT (name) DO NOTHING
    RETURNING *
)
SELECT * FROM ins UNION ALL SELECT * FROM orgs WHERE name = %(name)s

-- name: principals_lock
-- Serialize adding people to the organization until the transaction ends: the
-- first person is its admin, and the statement after this lock sees who came
-- first (two inserts each seeing an empty organization made two admins).
SELECT pg_advisory_xact_lock(%(key)s)

-- name: ensure_principal
-- The principal of this name in an organization, created on first use; the
-- organization's first person is created its admin. Run after principals_lock,
-- in its transaction.
WITH ins AS (
    INSERT INTO principals (id, org_id, name, kind, created_at, admin)
    SELECT %(id)s, %(org)s, %(name)s, %(kind)s, now(),
           %(kind)s = 'user' AND NOT EXISTS (
               SELECT 1 FROM principals WHERE org_id = %(org)s AND kind = 'user')
    ON CONFLICT (org_id, name) DO NOTHING
    RETURNING *
)
SELECT * FROM ins UNION ALL SELECT * FROM principals WHERE org_id = %(org)s AND name = %(name)s

-- name: principal_by_name
-- A principal by name within the organization.
SELECT * FROM principals WHERE org_id = %(org)s AND name = %(name)s

-- name: principals_by_id
-- Principals by id within the organization.
SELECT * FROM principals WHERE org_id = %(org)s AND id = ANY (%(ids)s::uuid[])

-- name: insert_principal
-- Add a principal.
INSERT INTO principals (id, org_id, name, kind, created_at, admin)
VALUES (%(id)s, %(org)s, %(name)s, %(kind)s, %(created_at)s, %(admin)s)

-- name: set_admin
-- Give or take the organization's admin role.
UPDATE principals SET admin = %(admin)s WHERE org_id = %(org)s AND id = %(id)s

-- name: admins
-- The organization's admins.
SELECT id FROM principals WHERE org_id = %(org)s AND admin ORDER BY name

-- name: admins_locked
-- The organization's admins, their rows locked until the transaction ends (the
-- last admin stays: two revocations serialize here).
SELECT id FROM principals WHERE org_id = %(org)s AND admin ORDER BY id FOR UPDATE

-- name: put_invite
-- An admin's invitation of an identity for a principal (replacing the
-- organization's earlier invitation of the same identity, and its code).
INSERT INTO identity_invites (org_id, id, principal_id, scheme, value, invited_by, created_at,
                              code_digest)
VALUES (%(org)s, %(id)s, %(principal_id)s, %(scheme)s, %(value)s, %(invited_by)s, %(created_at)s,
        %(code_digest)s)
ON CONFLICT (org_id, scheme, value) DO UPDATE
SET id = EXCLUDED.id, principal_id = EXCLUDED.principal_id,
    invited_by = EXCLUDED.invited_by, created_at = EXCLUDED.created_at,
    code_digest = EXCLUDED.code_digest

-- name: invites
-- The organization's pending invitations, oldest first.
SELECT * FROM identity_invites WHERE org_id = %(org)s ORDER BY created_at, id

-- name: take_invite
-- Use an invitation up.
DELETE FROM identity_invites WHERE org_id = %(org)s AND id = %(id)s

-- name: invites_for_identity
-- Sign-in of an identity nobody holds: its invitations in every organization.
SELECT * FROM identity_invites WHERE scheme = %(scheme)s AND value = %(value)s
ORDER BY created_at, id

-- name: project_by_id
-- One project.
SELECT * FROM projects WHERE org_id = %(org)s AND id = %(id)s

-- name: project_by_id_locked
-- One project, locked for a write to its row.
SELECT * FROM projects WHERE org_id = %(org)s AND id = %(id)s FOR UPDATE

-- name: project_by_slug
-- The project a current or retired slug names.
SELECT p.* FROM project_slugs s JOIN projects p ON p.org_id = s.org_id AND p.id = s.project_id
WHERE s.org_id = %(org)s AND s.slug = %(slug)s

-- name: project_by_slug_primed
-- project_by_slug as a transaction's first read: the clock, the restricted projects and the
-- stored policy's digest come along (`now`'s columns; the project's are null when the slug
-- names none), one round trip for both.
SELECT p.*, now() + %(offset)s::interval AS now, /*:_restricted*/ AS restricted,
       /*:_policy_digest*/ AS policy_digest
FROM (SELECT) AS one
LEFT JOIN (project_slugs s JOIN projects p ON p.org_id = s.org_id AND p.id = s.project_id)
    ON s.org_id = %(org)s AND s.slug = %(slug)s

-- name: projects_by_id
-- Several projects.
SELECT * FROM projects WHERE org_id = %(org)s AND id = ANY (%(ids)s::uuid[])

-- name: slugs_like
-- Slugs equal to a base or starting base-, current or retired, for disambiguation.
SELECT slug FROM project_slugs
WHERE org_id = %(org)s AND (slug = %(base)s OR starts_with(slug, %(base)s || '-'))

-- name: insert_project
-- Create a project and register its slug.
WITH p AS (
    INSERT INTO projects (id, org_id, slug, title, node_counter, priority, vcs_url, archived_at,
                          held_at, held_by, held_reason, hold_group, created_at, readers)
    VALUES (%(id)s, %(org)s, %(slug)s, %(title)s, %(node_counter)s, %(priority)s, %(vcs_url)s,
            %(archived_at)s, %(held_at)s, %(held_by)s, %(held_reason)s, %(hold_group)s, %(created_at)s,
            %(readers)s::uuid[])
    RETURNING id
)
INSERT INTO project_slugs (org_id, slug, project_id) SELECT %(org)s, %(slug)s, id FROM p

-- name: update_project
-- Write a project's mutable fields (the node counter moves only by allocate_numbers).
UPDATE projects SET slug = %(slug)s, title = %(title)s, priority = %(priority)s,
    vcs_url = %(vcs_url)s, archived_at = %(archived_at)s, held_at = %(held_at)s,
    held_by = %(held_by)s, held_reason = %(held_reason)s, hold_group = %(hold_group)s,
    readers = %(readers)s::uuid[]
WHERE org_id = %(org)s AND id = %(id)s

-- name: add_slug
-- Keep a project's new slug beside its old ones.
INSERT INTO project_slugs (org_id, slug, project_id) VALUES (%(org)s, %(slug)s, %(id)s)
ON CONFLICT (org_id, slug) DO NOTHING

-- name: list_projects
-- Projects in activity order (newest event first), archived ones only when asked.
SELECT p.* FROM projects p
LEFT JOIN LATERAL (
    SELECT max(e.occurred_at) AS at FROM events e WHERE e.project_id = p.id
) a ON true
WHERE p.org_id = %(org)s AND (%(archived)s OR p.archived_at IS NULL)
  AND p.id <> ALL (%(hidden)s::uuid[])
ORDER BY coalesce(a.at, p.created_at) DESC, p.id DESC
LIMIT %(limit)s OFFSET %(offset)s

-- name: project_page
-- A page of projects by activity as of a position in the change stream (the horizon,
-- see events.sql, when none is given): each project's last event of a transaction
-- below it, else its creation; most recent first, then id descending; only those
-- after the (at, id) key given. Every row carries the position ordered by (one row
-- of NULLs and the position when no project is left). The activity of each project
-- is one backward probe of events_project_time; the page's rows are the only ones
-- returned (limit + 1 asked, to know whether more follow).
WITH h AS (
    SELECT coalesce(%(asof)s::text::xid8, /*:_horizon*/) AS xmin
)
SELECT h.xmin::text AS asof, w.* FROM h LEFT JOIN LATERAL (
    SELECT p.*, coalesce(a.at, p.created_at) AS active_at
    FROM projects p
    LEFT JOIN LATERAL (
        SELECT e.occurred_at AS at FROM events e
        WHERE e.project_id = p.id AND e.org_id = %(org)s AND e.xid < h.xmin
        ORDER BY e.occurred_at DESC LIMIT 1
    ) a ON true
    WHERE p.org_id = %(org)s AND (%(archived)s OR p.archived_at IS NULL)
      AND p.id <> ALL (%(hidden)s::uuid[])
      AND (%(after_at)s::timestamptz IS NULL
           OR (coalesce(a.at, p.created_at), p.id) < (%(after_at)s::timestamptz, %(after_id)s::uuid))
    ORDER BY coalesce(a.at, p.created_at) DESC, p.id DESC
    LIMIT %(limit)s
) w ON true
ORDER BY w.active_at DESC, w.id DESC

-- name: project_activity
-- When each project last saw an event.
SELECT e.project_id, max(e.occurred_at) AS at FROM events e
WHERE e.org_id = %(org)s AND e.project_id = ANY (%(ids)s::uuid[])
GROUP BY e.project_id

-- name: allocate_numbers
-- Reserve a block of node numbers on the project row; returns the first.
UPDATE projects SET node_counter = node_counter + %(count)s
WHERE org_id = %(org)s AND id = %(id)s
RETURNING node_counter - %(count)s + 1 AS first

-- name: nodes_by_id
-- Nodes by id.
SELECT * FROM nodes WHERE org_id = %(org)s AND id = ANY (%(ids)s::uuid[])

-- name: nodes_by_id_locked
-- Nodes by id, locked for the writes of this transaction (in id order, to avoid deadlocks).
SELECT * FROM nodes WHERE org_id = %(org)s AND id = ANY (%(ids)s::uuid[]) ORDER BY id FOR UPDATE

-- name: node_by_number
-- A node by its project and number.
SELECT * FROM nodes WHERE org_id = %(org)s AND project_id = %(project)s AND number = %(number)s

-- name: node_by_number_locked
-- A node by its project and number, locked.
SELECT * FROM nodes WHERE org_id = %(org)s AND project_id = %(project)s AND number = %(number)s
FOR UPDATE

-- name: insert_node
-- Create a node.
INSERT INTO nodes (id, org_id, project_id, number, parent_id, kind, title, body, status, priority,
                   assignee_kind, assignee, labels, held_at, held_by, held_reason, hold_group,
                   result, context_id, created_by, created_at, updated_at)
VALUES (%(id)s, %(org)s, %(project_id)s, %(number)s, %(parent_id)s, %(kind)s, %(title)s, %(body)s,
        %(status)s, %(priority)s, %(assignee_kind)s, %(assignee)s, %(labels)s, %(held_at)s,
        %(held_by)s, %(held_reason)s, %(hold_group)s, %(result)s, %(context_id)s, %(created_by)s,
        %(created_at)s, %(updated_at)s)

-- name: update_node
-- Write a node's mutable fields.
UPDATE nodes SET parent_id = %(parent_id)s, kind = %(kind)s, title = %(title)s, body = %(body)s,
    status = %(status)s, priority = %(priority)s, assignee_kind = %(assignee_kind)s,
    assignee = %(assignee)s, labels = %(labels)s, held_at = %(held_at)s, held_by = %(held_by)s,
    held_reason = %(held_reason)s, hold_group = %(hold_group)s, result = %(result)s,
    updated_at = %(updated_at)s
WHERE org_id = %(org)s AND id = %(id)s

-- name: children_of
-- The children of some nodes, by number.
SELECT * FROM nodes WHERE org_id = %(org)s AND parent_id = ANY (%(ids)s::uuid[])
ORDER BY parent_id, number

-- name: ancestors
-- A node's parent chain, nearest first.
WITH RECURSIVE chain (id, parent_id, depth) AS (
    SELECT n.id, n.parent_id, 0 FROM nodes n WHERE n.org_id = %(org)s AND n.id = %(id)s
    UNION ALL
    SELECT p.id, p.parent_id, chain.depth + 1
    FROM nodes p JOIN chain ON p.id = chain.parent_id
    WHERE p.org_id = %(org)s AND chain.depth < 10000
)
SELECT n.* FROM chain JOIN nodes n ON n.org_id = %(org)s AND n.id = chain.id
WHERE chain.depth > 0 ORDER BY chain.depth

-- name: edges_into
-- Edges into some nodes.
SELECT * FROM edges WHERE org_id = %(org)s AND to_id = ANY (%(ids)s::uuid[])

-- name: edges_out_of
-- Edges out of some nodes.
SELECT * FROM edges WHERE org_id = %(org)s AND from_id = ANY (%(ids)s::uuid[])

-- name: insert_edge
-- Add an edge.
INSERT INTO edges (org_id, from_id, to_id, kind, created_at)
VALUES (%(org)s, %(from_id)s, %(to_id)s, %(kind)s, %(created_at)s)

-- name: delete_edge
-- Remove an edge; returns it if it existed.
DELETE FROM edges WHERE org_id = %(org)s AND from_id = %(from_id)s AND to_id = %(to_id)s AND kind = %(kind)s
RETURNING from_id

-- name: live_leases
-- Live leases of some nodes.
SELECT * FROM leases
WHERE org_id = %(org)s AND node_id = ANY (%(ids)s::uuid[]) AND released_at IS NULL AND expires_at > %(now)s

-- name: lease_by_id
-- One lease.
SELECT * FROM leases WHERE org_id = %(org)s AND id = %(id)s

-- name: lease_by_id_locked
-- One lease, locked: fencing checks and the write they guard happen under this lock.
SELECT * FROM leases WHERE org_id = %(org)s AND id = %(id)s FOR UPDATE

-- name: unreleased_lease
-- A node's unreleased lease, live or expired.
SELECT * FROM leases WHERE org_id = %(org)s AND node_id = %(id)s AND released_at IS NULL

-- name: insert_lease
-- Take a lease.
INSERT INTO leases (id, org_id, node_id, holder, harness, agent_ref, session_ref, created_at,
                    expires_at, ttl, on_behalf_of, released_at, release_reason)
VALUES (%(id)s, %(org)s, %(node_id)s, %(holder)s, %(harness)s, %(agent_ref)s, %(session_ref)s,
        %(created_at)s, %(expires_at)s, %(ttl)s, %(on_behalf_of)s, %(released_at)s, %(release_reason)s)

-- name: update_lease
-- Renew or release a lease.
UPDATE leases SET expires_at = %(expires_at)s, released_at = %(released_at)s,
    release_reason = %(release_reason)s
WHERE org_id = %(org)s AND id = %(id)s

-- name: lease_history
-- Every attempt on a node, oldest first.
SELECT * FROM leases WHERE org_id = %(org)s AND node_id = %(id)s ORDER BY created_at, id

-- name: lease_page
-- Every attempt on a node by (created_at, id), after a key (keyset: reads leases_page from
-- the key on, only the page's rows; every one when the limit is NULL).
SELECT * FROM leases
WHERE org_id = %(org)s AND node_id = %(id)s
  AND (%(after_at)s::timestamptz IS NULL
       OR (created_at, id) > (%(after_at)s::timestamptz, %(after_id)s::uuid))
ORDER BY created_at, id
LIMIT %(limit)s

-- name: expired_leases
-- Unreleased leases whose time ran out, for the sweeper; skips rows a claim holds.
-- Unreleased is said by release_reason, as leases_sweep's predicate (migration 0030).
SELECT * FROM leases
WHERE org_id = %(org)s AND release_reason IS NULL AND expires_at <= %(now)s
ORDER BY expires_at LIMIT %(limit)s
FOR UPDATE SKIP LOCKED

-- name: get_cursor
-- The caller's rotation cursor for one filter, the transaction's clock and the
-- restricted projects (the first statement of Ready and ClaimNext brings them
-- along: two round trips fewer), and whether any node carries a cap (ClaimNext's
-- capped_nodes is then no round trip: an index probe of budgets_caps).
SELECT (
    SELECT project_id FROM claim_cursors
    WHERE org_id = %(org)s AND principal_id = %(principal)s AND filter_hash = %(hash)s
) AS project_id, now() + %(offset)s::interval AS now, /*:_restricted*/ AS restricted,
  /*:_policy_digest*/ AS policy_digest,
  EXISTS (SELECT 1 FROM budgets WHERE org_id = %(org)s AND cap IS NOT NULL) AS has_caps

-- name: claim_writes
-- A claim's writes as one statement (TxBase's deferred writes): set_cursor, insert_lease
-- and insert_event_announced, each with its parameters prefixed (c_, l_; the event's as
-- they are).
WITH c AS (/*:set_cursor@c_*/), l AS (/*:insert_lease@l_*/), /*:_event_announced*/

-- name: complete_lease_writes
-- A lone complete's first writes as one statement (TxBase's deferred writes), sent as soon
-- as both are made, so that PostgreSQL runs them while the engine decides: update_node and
-- update_lease, their parameters prefixed (n_, l_).
WITH n AS (/*:update_node@n_*/) /*:update_lease@l_*/

-- name: complete_answer_writes
-- A lone complete's last writes as one statement: insert_event_announced and
-- save_response_fingerprint (its parameters prefixed s_; the event's as they are).
WITH s AS (/*:save_response_fingerprint@s_*/), /*:_event_announced*/

-- name: set_cursor
-- Advance the caller's rotation cursor after a claim.
INSERT INTO claim_cursors (org_id, principal_id, filter_hash, project_id, updated_at)
VALUES (%(org)s, %(principal)s, %(hash)s, %(project)s, %(now)s)
ON CONFLICT (org_id, principal_id, filter_hash)
DO UPDATE SET project_id = excluded.project_id, updated_at = excluded.updated_at

-- name: reserve_request
-- Reserve a request id; waits on a concurrent transaction holding the same id.
-- request_id is null when the id was taken. The transaction's clock comes along
-- (a patch's first use of it: one round trip fewer), and when events first carried the
-- id (request_applied_at, asked next for a new id: one round trip fewer).
WITH ins AS (
    INSERT INTO requests (org_id, principal_id, request_id, fingerprint, created_at)
    VALUES (%(org)s, %(principal)s, %(rid)s, %(fingerprint)s, now() + %(offset)s::interval)
    ON CONFLICT (org_id, principal_id, request_id) DO NOTHING
    RETURNING request_id
)
SELECT (SELECT request_id FROM ins) AS request_id, now() + %(offset)s::interval AS now,
       (/*:_request_applied_at*/) AS applied_at

-- name: get_request
-- What an earlier request with this id asked for and got.
SELECT fingerprint, response FROM requests
WHERE org_id = %(org)s AND principal_id = %(principal)s AND request_id = %(rid)s

-- name: save_response
-- Record the response a request id replays.
UPDATE requests SET response = %(response)s
WHERE org_id = %(org)s AND principal_id = %(principal)s AND request_id = %(rid)s

-- name: insert_event
-- Append an event (ClaimNext waiters are woken after the commit: `wake`).
INSERT INTO events (id, org_id, project_id, node_id, principal_id, principal_kind, on_behalf_of,
                    identity_scheme, request_id, op, reason, before, after, occurred_at)
VALUES (%(id)s, %(org)s, %(project_id)s, %(node_id)s, %(principal_id)s, %(principal_kind)s,
        %(on_behalf_of)s, %(identity_scheme)s, %(request_id)s, %(op)s, %(reason)s, %(before)s,
        %(after)s, %(occurred_at)s)

-- name: events
-- The newest events (optionally of one node, optionally older than one), oldest first.
SELECT * FROM (
    SELECT * FROM events
    WHERE org_id = %(org)s AND (%(node)s::uuid IS NULL OR node_id = %(node)s::uuid)
      AND (%(before)s::uuid IS NULL OR id < %(before)s::uuid)
      AND (project_id IS NULL OR project_id <> ALL (%(hidden)s::uuid[]))
    ORDER BY id DESC
    LIMIT %(limit)s
) newest
ORDER BY id

-- name: principal_by_identity
-- Authentication: the principal holding a live identity, in whatever organization.
SELECT p.*, i.id AS identity_id FROM identities i
JOIN principals p ON p.org_id = i.org_id AND p.id = i.principal_id
WHERE i.scheme = %(scheme)s AND i.value = %(value)s AND i.revoked_at IS NULL

-- name: org_by_id
-- One organization.
SELECT * FROM orgs WHERE id = %(id)s

-- name: list_principals
-- The organization's principals, by name.
SELECT * FROM principals WHERE org_id = %(org)s ORDER BY name

-- name: principal_page
-- The organization's principals by (name, id), after a key (keyset: reads principals_page
-- from the key on, only the page's rows; every one when the limit is NULL).
SELECT * FROM principals
WHERE org_id = %(org)s
  AND (%(after_name)s::text IS NULL
       OR (name, id) > (%(after_name)s::text, %(after_id)s::uuid))
ORDER BY name, id
LIMIT %(limit)s

-- name: insert_identity
-- Attach an identity to a principal.
INSERT INTO identities (id, org_id, principal_id, scheme, value, created_at, revoked_at)
VALUES (%(id)s, %(org)s, %(principal_id)s, %(scheme)s, %(value)s, %(created_at)s, %(revoked_at)s)

-- name: identity_by_value
-- A live identity by scheme and value, in any organization (to refuse a duplicate).
SELECT * FROM identities WHERE scheme = %(scheme)s AND value = %(value)s AND revoked_at IS NULL

-- name: identity_by_id
-- One identity of the organization.
SELECT * FROM identities WHERE org_id = %(org)s AND id = %(id)s

-- name: identities_of
-- A principal's identities, oldest first.
SELECT * FROM identities WHERE org_id = %(org)s AND principal_id = %(principal)s ORDER BY created_at, id

-- name: revoke_identity
-- Revoke an identity (the row stays).
UPDATE identities SET revoked_at = %(now)s WHERE org_id = %(org)s AND id = %(id)s AND revoked_at IS NULL

-- name: human_written
-- Which of some nodes a user principal has ever written to (derived from events).
SELECT DISTINCT e.node_id FROM events e
WHERE e.org_id = %(org)s AND e.node_id = ANY (%(ids)s::uuid[]) AND e.principal_kind = 'user'

-- name: authors
-- Who wrote some nodes' content (derived from events): the actor of each
-- node's newest create_node or body-setting update_node, and of its newest
-- complete_node. Each is a backward walk of events_node (node_id, id) that
-- stops at the first match, so a long history costs nothing; all the nodes in
-- one statement. Tenancy is checked on the node row (a node's events are its
-- organization's): an org_id test on events would invite the planner to AND
-- in the organization's whole events_org_time range for every node.
/*:_authors_columns*/
FROM unnest(%(ids)s::uuid[]) AS i (id)
/*:_authors_of*/

-- name: authors_of_claim
-- authors of the node just locked (lock_next_ready, take_next_ready) and of the sources of
-- the edges into it: what the claim asks once it has read those edges, sent with them.
/*:_authors_columns*/
FROM (SELECT /*:_claimed_id*/
      UNION SELECT e.from_id FROM edges e WHERE e.org_id = %(org)s AND e.to_id = /*:_claimed_id*/) AS i (id)
/*:_authors_of*/

-- name: _authors_columns
-- What authors returns.
SELECT n.id AS node_id,
       b.principal_id AS body_id, b.principal_kind AS body_kind, bp.name AS body_name,
       r.principal_id AS result_id, r.principal_kind AS result_kind, rp.name AS result_name

-- name: _authors_of
-- The walks of authors for the nodes i (id).
JOIN nodes n ON n.id = i.id AND n.org_id = %(org)s
LEFT JOIN LATERAL (
    SELECT e.principal_id, e.principal_kind FROM events e
    WHERE e.node_id = n.id
      AND (e.op = 'create_node' OR (e.op = 'update_node' AND e.after ? 'body'))
    ORDER BY e.id DESC LIMIT 1
) b ON true
LEFT JOIN principals bp ON bp.org_id = n.org_id AND bp.id = b.principal_id
LEFT JOIN LATERAL (
    SELECT e.principal_id, e.principal_kind FROM events e
    WHERE e.node_id = n.id AND e.op = 'complete_node'
    ORDER BY e.id DESC LIMIT 1
) r ON true
LEFT JOIN principals rp ON rp.org_id = n.org_id AND rp.id = r.principal_id

-- name: upstream_cone
-- Explain's cone in one statement: the root, then the sources of edges into a node and
-- its children, walking on only from the root and open nodes outside the hidden projects
-- (walk; UNION: each node once, so a cycle or a diamond ends); at most bound nodes, each
-- walked one with its edges' sources (sources NULL: a parent above the cone), the root
-- with whether it holds a live lease (so an unleased root costs no read of its own). Then the
-- parents above them: up from each walked node through the nodes not walked from, every
-- one not in the cone (a chain of parents that leaves the cone is read here, not in a
-- statement of its own). Each node's row is one primary-key probe (OFFSET 0 keeps the
-- planner from hashing the organization's nodes when it misjudges the cone's size), and
-- its columns are a node's (not the search vector).
WITH RECURSIVE cone (id, walk, parent_id) AS (
    SELECT n.id, true, n.parent_id FROM nodes n WHERE n.id = %(id)s AND n.org_id = %(org)s
    UNION
    SELECT x.id, x.open, x.parent_id FROM cone c
    CROSS JOIN LATERAL (
        SELECT e.from_id AS id, s.parent_id,
               s.status = 'open' AND NOT (s.project_id = ANY (%(hidden)s::uuid[])) AS open
        FROM edges e JOIN nodes s ON s.org_id = e.org_id AND s.id = e.from_id
        WHERE e.org_id = %(org)s AND e.to_id = c.id
        UNION ALL
        SELECT k.id, k.parent_id,
               k.status = 'open' AND NOT (k.project_id = ANY (%(hidden)s::uuid[]))
        FROM nodes k WHERE k.parent_id = c.id
    ) x
    WHERE c.walk AND x.id <> %(id)s
), picked AS MATERIALIZED (
    SELECT id, walk, parent_id FROM cone LIMIT %(bound)s
), up (id) AS (
    SELECT c.parent_id FROM picked c
    WHERE c.walk AND c.parent_id IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM picked w WHERE w.id = c.parent_id AND w.walk)
    UNION
    SELECT a.parent_id FROM up
    CROSS JOIN LATERAL (
        SELECT n.parent_id FROM nodes n WHERE n.org_id = %(org)s AND n.id = up.id OFFSET 0
    ) a
    WHERE a.parent_id IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM picked w WHERE w.id = a.parent_id AND w.walk)
)
SELECT n.*, CASE WHEN c.walk
    THEN ARRAY(SELECT e.from_id FROM edges e WHERE e.org_id = %(org)s AND e.to_id = c.id)
    ELSE '{}' END AS sources,
    CASE WHEN c.id = %(id)s THEN /*:_claimed*/ END AS leased
FROM picked c CROSS JOIN LATERAL (
    SELECT /*:_node_columns*/ FROM nodes n WHERE n.id = c.id AND n.org_id = %(org)s OFFSET 0
) n
UNION ALL
SELECT n.*, NULL, NULL FROM up CROSS JOIN LATERAL (
    SELECT /*:_node_columns*/ FROM nodes n WHERE n.id = up.id AND n.org_id = %(org)s OFFSET 0
) n
WHERE NOT EXISTS (SELECT 1 FROM picked w WHERE w.id = up.id)

-- name: _node_columns
-- A node's columns as node_from_row reads them (n.* carries the search vector too).
n.id, n.org_id, n.project_id, n.number, n.parent_id, n.kind, n.title, n.body, n.status,
n.priority, n.assignee_kind, n.assignee, n.labels, n.held_at, n.held_by, n.held_reason,
n.hold_group, n.result, n.context_id, n.created_by, n.created_at, n.updated_at
