-- name: org_live_leases
-- The organization's live leases, of some projects when given, oldest first (unreleased
-- said by release_reason, as leases_live_list's predicate: migration 0030).
SELECT l.* FROM leases l
JOIN nodes n ON n.org_id = l.org_id AND n.id = l.node_id
WHERE l.org_id = %(org)s AND l.release_reason IS NULL AND l.expires_at > %(now)s
  AND (%(projects)s::uuid[] IS NULL OR n.project_id = ANY (%(projects)s::uuid[]))
ORDER BY l.created_at, l.id
LIMIT %(limit)s

-- name: live_lease_page
-- The organization's live leases by (created_at, id): of some projects when given, held by
-- one principal when given, none of the hidden projects, after a key (keyset: reads
-- leases_live_list from the key on; every one when the limit is NULL). Unreleased is said
-- by release_reason, as that index's predicate (migration 0030: a probe by node says
-- released_at IS NULL, which only leases_one_unreleased answers).
SELECT l.* FROM leases l
JOIN nodes n ON n.org_id = l.org_id AND n.id = l.node_id
WHERE l.org_id = %(org)s AND l.release_reason IS NULL AND l.expires_at > %(now)s
  AND (%(projects)s::uuid[] IS NULL OR n.project_id = ANY (%(projects)s::uuid[]))
  AND (%(holder)s::uuid IS NULL OR l.holder = %(holder)s::uuid)
  AND n.project_id <> ALL (%(hidden)s::uuid[])
  AND (%(after_at)s::timestamptz IS NULL
       OR (l.created_at, l.id) > (%(after_at)s::timestamptz, %(after_id)s::uuid))
ORDER BY l.created_at, l.id
LIMIT %(limit)s

-- name: list_orgs
-- Every organization, oldest first: the first is the server's own.
SELECT * FROM orgs ORDER BY created_at, id

-- name: org_page
-- The organizations by (created_at, name), after a key (keyset: reads orgs_page from the
-- key on, only the page's rows; every one when the limit is NULL).
SELECT * FROM orgs
WHERE (%(after_at)s::timestamptz IS NULL
       OR (created_at, name) > (%(after_at)s::timestamptz, %(after_name)s::text))
ORDER BY created_at, name
LIMIT %(limit)s

-- name: ensure_secret
-- A server secret, made on first use (the first writer wins) and the same ever after.
WITH ins AS (
    INSERT INTO server_secrets (name, value, created_at) VALUES (%(name)s, %(value)s, now())
    ON CONFLICT (name) DO NOTHING
    RETURNING value
)
SELECT value FROM ins UNION ALL SELECT value FROM server_secrets WHERE name = %(name)s
LIMIT 1
