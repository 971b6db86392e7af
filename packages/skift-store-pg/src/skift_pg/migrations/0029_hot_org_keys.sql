-- 0029: the foreign keys that made an organization's concurrent writers take turns on
-- one row (issue 31; docs/benchmarks.md, "32 claimers and the organization's row").
--
-- A foreign key's check locks the row it finds FOR KEY SHARE. Every claim and complete
-- wrote rows pointing at the organization's one row in orgs (a lease, a request, events,
-- the rotation cursor; a complete's artifacts and usage records too) and at a project's
-- row (the cursor), so each of those transactions locked them, and while another held
-- such a lock PostgreSQL made a new MultiXact of them all, rewriting the row's tuple under
-- its page's lock: at 32 claimers of one organization, 4,500 MultiXacts with 40,000
-- members in 2,000 claim + complete pairs (9 members each; 4 at 8 claimers), and 32
-- claimers made fewer pairs a second than 8. Without these keys: none.
--
-- What goes, and why nothing is lost:
-- - org_id -> orgs of leases, requests, usage_records, artifacts and webhook_deliveries:
--   each of their rows has another key that names a row of the same organization, org_id
--   included since 0025 (a lease's node, a request's principal, a usage record's and an
--   artifact's node, a delivery's endpoint), and that row's organization exists: the key
--   only repeated another (as 0021's did);
-- - org_id -> orgs of claim_cursors (its principal names the organization) and its
--   project_id -> projects: the rotation cursor is a position among project ids, compared
--   and never joined; a project is never deleted, and a cursor past a project that is not
--   there would only start the turn after it;
-- - org_id -> orgs of events: the audit record is written only by the store, in the
--   transaction of the change it records, whose rows carry the organization's keys;
--   organizations are never deleted.
-- Each DROP takes a brief ACCESS EXCLUSIVE lock on its table and on orgs; nothing is
-- scanned.
ALTER TABLE leases DROP CONSTRAINT leases_org_id_fkey;
ALTER TABLE requests DROP CONSTRAINT requests_org_id_fkey;
ALTER TABLE usage_records DROP CONSTRAINT usage_records_org_id_fkey;
ALTER TABLE artifacts DROP CONSTRAINT artifacts_org_id_fkey;
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_org_id_fkey;
ALTER TABLE claim_cursors DROP CONSTRAINT claim_cursors_org_id_fkey;
ALTER TABLE claim_cursors DROP CONSTRAINT claim_cursors_project_id_fkey;
ALTER TABLE events DROP CONSTRAINT events_org_id_fkey;
