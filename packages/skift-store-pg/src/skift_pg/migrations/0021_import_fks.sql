-- Foreign keys that only repeated another key of the same row (issue 22: a
-- 100,000-issue import spent most of PostgreSQL's time checking them, one
-- index probe per key per row).
ALTER TABLE node_origins DROP CONSTRAINT node_origins_org_id_fkey;
ALTER TABLE node_origins DROP CONSTRAINT node_origins_project_id_fkey;
ALTER TABLE nodes DROP CONSTRAINT nodes_org_id_fkey;
ALTER TABLE edges DROP CONSTRAINT edges_org_id_fkey;
ALTER TABLE comments DROP CONSTRAINT comments_org_id_fkey;
ALTER TABLE comments DROP CONSTRAINT comments_project_id_fkey;
ALTER TABLE comment_revisions DROP CONSTRAINT comment_revisions_org_id_fkey;
