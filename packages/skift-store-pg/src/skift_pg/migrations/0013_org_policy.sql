-- An organization's own Rego modules (skift._org_policy, docs/identity.md):
-- layered on the server's base policy, set and reset by the organization's
-- admin. One row per organization that ever set one; a reset keeps the row
-- with no modules, so who reset it and when stay shown.
--
-- Every transaction that asks the policy reads `digest` by the primary key
-- (one index lookup); the modules are read only by a process that has not
-- compiled that digest yet. So every server over the database applies a
-- change from its next transaction.
CREATE TABLE org_policies (
    org_id      uuid PRIMARY KEY REFERENCES orgs (id),
    modules     jsonb NOT NULL,            -- [[name, source], ...] in order
    digest      text NOT NULL,             -- '' when there are no modules
    updated_at  timestamptz NOT NULL,
    updated_by  uuid NOT NULL REFERENCES principals (id)
);
