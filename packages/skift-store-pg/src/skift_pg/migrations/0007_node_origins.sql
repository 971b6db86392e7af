-- 0007: where an imported node came from (docs/migrating-from-beads.md).
--
-- One row per node an import wrote: the source (``beads``), the id the node
-- had there (``bd-a1b2``: a reference to the node inside its project, found
-- by `skift show` and `skift search`), and what the source said last
-- (``extra``: the issue object as read, which an import of a newer export
-- compares against and an export writes back where the node still agrees).
-- A table of its own rather than columns on nodes: most nodes have no
-- origin, and the object can be large.
CREATE TABLE node_origins (
    node_id      uuid NOT NULL REFERENCES nodes (id),
    org_id       uuid NOT NULL REFERENCES orgs (id),
    project_id   uuid NOT NULL REFERENCES projects (id),
    source       text NOT NULL,
    external_id  text NOT NULL,
    extra        jsonb NOT NULL DEFAULT '{}'::jsonb,
    PRIMARY KEY (node_id, source),
    -- an id names one node of a project
    UNIQUE (project_id, source, external_id)
);
-- A reference by external id with no project given (`skift show bd-a1b2`).
CREATE INDEX node_origins_external ON node_origins (org_id, external_id);
