-- name: _policy_digest
-- The digest of the organization's stored policy modules ('' when none): one
-- primary-key probe, brought along with the transaction's clock (`now`,
-- `get_cursor`), so the policy in force costs no round trip of its own.
(SELECT coalesce((SELECT digest FROM org_policies WHERE org_id = %(org)s), ''))

-- name: org_policy
-- The organization's stored policy record.
SELECT modules, digest, updated_at, updated_by FROM org_policies WHERE org_id = %(org)s

-- name: set_org_policy
-- Replace the organization's stored policy record.
INSERT INTO org_policies (org_id, modules, digest, updated_at, updated_by)
VALUES (%(org)s, %(modules)s, %(digest)s, %(updated_at)s, %(updated_by)s)
ON CONFLICT (org_id) DO UPDATE
SET modules = EXCLUDED.modules, digest = EXCLUDED.digest,
    updated_at = EXCLUDED.updated_at, updated_by = EXCLUDED.updated_by
