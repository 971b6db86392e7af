-- Reads follow policy (skift._context.Context.hidden, docs/identity.md).
--
-- A project restricted with 'skift project restrict' lists its readers (principal
-- ids); NULL is unrestricted: the whole organization reads it, as before. The
-- default policy reads the list once per request (restricted_projects), so the
-- partial index keeps an organization with no restricted project at one probe.
ALTER TABLE projects ADD COLUMN readers uuid[];
CREATE INDEX projects_restricted ON projects (org_id) WHERE readers IS NOT NULL;
