-- 0022: organization admins and identity invitations (issue 28).
--
-- A principal has a role in its organization: admin or not (people only). An
-- admin mints and revokes tokens for others, adds principals, invites external
-- identities, sets the stored policy and restricts projects; the server's
-- administrators are the admins of its first organization (skift._orgs).
ALTER TABLE principals ADD COLUMN admin boolean NOT NULL DEFAULT false;
ALTER TABLE principals ADD CONSTRAINT principals_admin_person CHECK (NOT admin OR kind = 'user');

-- Until now every person administered their organization. An existing
-- organization keeps one admin: its oldest person (in the first organization
-- that is the server's owner, who joined at first start); they grant the role
-- to whoever else should have it ('skift principal grant-admin').
UPDATE principals p SET admin = true
WHERE p.id = (SELECT o.id FROM principals o
              WHERE o.org_id = p.org_id AND o.kind = 'user'
              ORDER BY o.created_at, o.id LIMIT 1);

CREATE INDEX principals_admins ON principals (org_id) WHERE admin;

-- An admin's invitation of an external identity (an OIDC issuer|subject) for a
-- principal of its organization: the identity is bound to that principal when
-- its holder signs in with it (skift._orgs.bind_invited). Used invitations are
-- deleted; the bind is an event. One pending invitation per identity in an
-- organization; several organizations may invite the same identity (none of
-- them learns of the others), and a sign-in binds only when exactly one did.
CREATE TABLE identity_invites (
    org_id        uuid NOT NULL REFERENCES orgs (id),
    id            uuid NOT NULL,
    principal_id  uuid NOT NULL REFERENCES principals (id),
    scheme        text NOT NULL CHECK (scheme IN ('oidc')),
    value         text NOT NULL,
    invited_by    uuid NOT NULL REFERENCES principals (id),
    created_at    timestamptz NOT NULL,
    PRIMARY KEY (org_id, id)
);
CREATE UNIQUE INDEX identity_invites_one ON identity_invites (org_id, scheme, value);
-- a sign-in looks its identity's invitations up before any organization is known
CREATE INDEX identity_invites_identity ON identity_invites (scheme, value);
