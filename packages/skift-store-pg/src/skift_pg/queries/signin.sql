-- Board sign-in codes and sessions (skift._signin): no organization scopes
-- them, since redeeming a code is how a browser learns whose it is. Same
-- format as graph.sql: `-- name: NAME`, a one-line comment, the SQL.

-- name: signin_insert
-- Keep a new code or session (forgetting those that expired a day ago), with whose it is.
WITH forget AS (
    DELETE FROM signins WHERE expires_at < now() + %(offset)s::interval - interval '1 day'
), ins AS (
    INSERT INTO signins (digest, kind, org_id, principal_id, created_at, expires_at)
    VALUES (%(digest)s, %(kind)s, %(org)s, %(principal)s,
            now() + %(offset)s::interval, now() + %(offset)s::interval + %(ttl)s::interval)
    RETURNING *
)
SELECT ins.digest, ins.kind, ins.created_at, ins.expires_at, o.name AS org_name,
       p.id, p.org_id, p.name, p.kind AS principal_kind, p.created_at AS principal_created_at
FROM ins JOIN principals p ON p.id = ins.principal_id JOIN orgs o ON o.id = ins.org_id

-- name: signin_spend
-- Spend a live (unspent, unexpired) code or session; of two concurrent spends one finds it.
WITH spent AS (
    UPDATE signins SET spent_at = now() + %(offset)s::interval
    WHERE digest = %(digest)s AND kind = %(kind)s AND spent_at IS NULL
      AND expires_at > now() + %(offset)s::interval
    RETURNING *
)
SELECT s.digest, s.kind, s.created_at, s.expires_at, o.name AS org_name,
       p.id, p.org_id, p.name, p.kind AS principal_kind, p.created_at AS principal_created_at
FROM spent s JOIN principals p ON p.id = s.principal_id JOIN orgs o ON o.id = s.org_id

-- name: signin_live
-- The live (unspent, unexpired) code or session with this digest, with whose it is.
SELECT s.digest, s.kind, s.created_at, s.expires_at, o.name AS org_name,
       p.id, p.org_id, p.name, p.kind AS principal_kind, p.created_at AS principal_created_at
FROM signins s JOIN principals p ON p.id = s.principal_id JOIN orgs o ON o.id = s.org_id
WHERE s.digest = %(digest)s AND s.kind = %(kind)s AND s.spent_at IS NULL
  AND s.expires_at > now() + %(offset)s::interval
