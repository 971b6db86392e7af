-- Board sign-in codes and sessions (skift._signin): no organization scopes
-- them, since redeeming a code is how a browser learns whose it is. Same
-- format as graph.sql: `-- name: NAME`, a one-line comment, the SQL.

-- name: signin_insert
-- Keep a new code or session (forgetting those that expired a day ago), with whose it is.
WITH forget AS (
    DELETE FROM signins WHERE expires_at < now() + %(offset)s::interval - interval '1 day'
), ins AS (
    INSERT INTO signins (digest, kind, org_id, principal_id, created_at, expires_at, id,
                         identity_id)
    VALUES (%(digest)s, %(kind)s, %(org)s, %(principal)s,
            now() + %(offset)s::interval, now() + %(offset)s::interval + %(ttl)s::interval,
            %(id)s, %(identity)s)
    RETURNING *
)
SELECT ins.digest, ins.kind, ins.created_at, ins.expires_at, ins.id AS signin_id,
       ins.identity_id, o.name AS org_name,
       p.id, p.org_id, p.name, p.kind AS principal_kind, p.created_at AS principal_created_at
FROM ins JOIN principals p ON p.org_id = ins.org_id AND p.id = ins.principal_id
JOIN orgs o ON o.id = ins.org_id

-- name: signin_spend
-- Spend a live (unspent, unexpired, its identity not revoked) code or session; of two
-- concurrent spends one finds it.
WITH spent AS (
    UPDATE signins SET spent_at = now() + %(offset)s::interval
    WHERE digest = %(digest)s AND kind = %(kind)s AND spent_at IS NULL
      AND expires_at > now() + %(offset)s::interval
      AND (identity_id IS NULL OR EXISTS (
          SELECT 1 FROM identities i WHERE i.org_id = signins.org_id AND i.id = signins.identity_id
          AND i.revoked_at IS NULL))
    RETURNING *
)
SELECT s.digest, s.kind, s.created_at, s.expires_at, s.id AS signin_id, s.identity_id,
       o.name AS org_name,
       p.id, p.org_id, p.name, p.kind AS principal_kind, p.created_at AS principal_created_at
FROM spent s JOIN principals p ON p.org_id = s.org_id AND p.id = s.principal_id
JOIN orgs o ON o.id = s.org_id

-- name: signin_live
-- The live (unspent, unexpired, its identity not revoked) code or session with this digest,
-- with whose it is.
SELECT s.digest, s.kind, s.created_at, s.expires_at, s.id AS signin_id, s.identity_id,
       o.name AS org_name,
       p.id, p.org_id, p.name, p.kind AS principal_kind, p.created_at AS principal_created_at
FROM signins s JOIN principals p ON p.org_id = s.org_id AND p.id = s.principal_id
JOIN orgs o ON o.id = s.org_id
WHERE s.digest = %(digest)s AND s.kind = %(kind)s AND s.spent_at IS NULL
  AND s.expires_at > now() + %(offset)s::interval
  AND (s.identity_id IS NULL OR EXISTS (
      SELECT 1 FROM identities i WHERE i.org_id = s.org_id AND i.id = s.identity_id
        AND i.revoked_at IS NULL))

-- name: signin_sessions
-- A principal's live sessions (unspent, unexpired, their identity not revoked), oldest first.
SELECT s.digest, s.kind, s.created_at, s.expires_at, s.id AS signin_id, s.identity_id,
       o.name AS org_name,
       p.id, p.org_id, p.name, p.kind AS principal_kind, p.created_at AS principal_created_at
FROM signins s JOIN principals p ON p.org_id = s.org_id AND p.id = s.principal_id
JOIN orgs o ON o.id = s.org_id
WHERE s.principal_id = %(principal)s AND s.kind = 'session' AND s.spent_at IS NULL
  AND s.expires_at > now() + %(offset)s::interval
  AND (s.identity_id IS NULL OR EXISTS (
      SELECT 1 FROM identities i WHERE i.org_id = s.org_id AND i.id = s.identity_id
        AND i.revoked_at IS NULL))
ORDER BY s.created_at, s.digest

-- name: signin_end_all
-- Spend every unspent, unexpired code and session of a principal; how many sessions ended.
WITH spent AS (
    UPDATE signins SET spent_at = now() + %(offset)s::interval
    WHERE principal_id = %(principal)s AND spent_at IS NULL
      AND expires_at > now() + %(offset)s::interval
    RETURNING kind
)
SELECT count(*) FILTER (WHERE kind = 'session') AS n FROM spent
