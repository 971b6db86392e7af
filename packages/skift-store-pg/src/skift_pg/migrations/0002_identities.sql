-- 0002: identities — how a transport names who is calling.
--
-- A principal (0001) is the stable actor every event and lease refers to.
-- Identity is kept apart from it, keyed by scheme and value, so one person
-- reaching skift over a unix socket and over a token is one principal, and a
-- new transport is a new row rather than a migration.

CREATE TABLE identities (
    id            uuid PRIMARY KEY,
    org_id        uuid NOT NULL REFERENCES orgs (id),
    principal_id  uuid NOT NULL REFERENCES principals (id),
    scheme        text NOT NULL CHECK (scheme IN ('unix', 'token', 'oidc', 'tailscale', 'local')),
    -- unix: the uid as text; token: 'sha256:' and the hex digest of the secret
    -- (the secret itself is shown once at creation and never stored)
    value         text NOT NULL,
    created_at    timestamptz NOT NULL,
    -- revoking keeps the row: events name the identity scheme they came through
    revoked_at    timestamptz
);
-- Authentication looks an identity up across every organization (the caller's
-- organization is what it resolves to), so a live identity names one principal.
CREATE UNIQUE INDEX identities_live ON identities (scheme, value) WHERE revoked_at IS NULL;
CREATE INDEX identities_principal ON identities (principal_id);

-- Delegation is not in v1, but leases carry the field from now on so their
-- shape does not change when it arrives (events have had it since 0001).
ALTER TABLE leases ADD COLUMN on_behalf_of uuid REFERENCES principals (id);
