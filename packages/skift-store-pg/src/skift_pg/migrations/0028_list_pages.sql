-- 0028: keyset pages of the lists the API used to read whole (issue 30; docs/grpc.md,
-- "Pages").
--
-- ListLeases, ListLiveLeases, ListPrincipals, ListOrgs and ListWebhooks page after the sort
-- key of the last item sent; each index carries that key whole, so a page reads from the
-- key on and only its own rows (limit + 1). Comments and artifacts have theirs already
-- (comments_node, artifacts_node), rates their primary key (org_id, model).
DROP INDEX leases_node;
CREATE INDEX leases_page ON leases (node_id, created_at, id);
CREATE INDEX leases_live_page ON leases (org_id, created_at, id) WHERE released_at IS NULL;
CREATE INDEX principals_page ON principals (org_id, name, id);
CREATE INDEX orgs_page ON orgs (created_at, name);
CREATE INDEX webhook_endpoints_page ON webhook_endpoints (org_id, project_id, id);
DROP INDEX webhook_endpoints_project;  -- (org_id, project_id): the prefix of the above
