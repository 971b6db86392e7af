-- 0025: every key of an organization's rows leads with org_id (issue 33; docs/operations.md,
-- "Citus: distributed by organization").
--
-- Citus distributes a table by one column and enforces a primary key, a unique index or a
-- foreign key only when it contains that column (uniqueness is checked per shard; a foreign
-- key holds between colocated shards). With org_id leading every primary key and unique
-- index of an organization-scoped table, and every foreign key between two of them being
-- (org_id, x_id) -> (org_id, id), the schema is ready for `create_distributed_table(...,
-- 'org_id')` without changing a query: every query of the store already names org_id.
-- tests/pg/test_schema_tenancy.py checks the live schema: none lack it.
--
-- Two tables stay keyed across organizations and become Citus reference tables (copied to
-- every node, small): `identities` (identities_live: a caller's uid, token digest or OIDC
-- subject is looked up before its organization is known) and `signins` (a board sign-in
-- code or session is looked up by its digest alone). Their primary keys lead with org_id
-- where another table points at them (identities), and their foreign keys into the
-- distributed tables include it; under Citus those foreign keys are dropped (a reference
-- table may not point into a distributed one) and the store's writes keep them true.
--
-- What this costs on a large database: every primary key and unique index named here is
-- rebuilt, and each foreign key is checked again (one index probe per row), under an
-- ACCESS EXCLUSIVE lock of the tables, in one transaction. Measured in docs/benchmarks.md.

-- 1. The foreign keys between organization-scoped tables go (they depend on the primary
-- keys), each remembered to come back as (org_id, its columns) -> (org_id, the keys): found
-- in the catalog rather than named, so one a later migration adds before this one is kept.
CREATE TEMPORARY TABLE skift_0025_fks ON COMMIT DROP AS
SELECT c.conrelid::regclass::text AS tbl, c.conname AS name,
       pg_get_constraintdef(c.oid) AS def
FROM pg_constraint c
WHERE c.contype = 'f' AND c.connamespace = 'public'::regnamespace AND c.conparentid = 0
  AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.conrelid
              AND a.attname = 'org_id' AND NOT a.attisdropped)
  AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.confrelid
              AND a.attname = 'org_id' AND NOT a.attisdropped)
  AND NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.conrelid
                  AND a.attname = 'org_id' AND a.attnum = ANY (c.conkey));

DO $$
DECLARE
    fk record;
BEGIN
    FOR fk IN SELECT * FROM skift_0025_fks LOOP
        IF fk.def ~ 'SET (NULL|DEFAULT)' THEN  -- would null org_id too: none does today
            RAISE EXCEPTION 'foreign key % of % sets a column: key it by hand', fk.name, fk.tbl;
        END IF;
        EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', fk.tbl, fk.name);
    END LOOP;
END
$$;

-- 2. Primary keys: (org_id, what identified the row before).
ALTER TABLE principals DROP CONSTRAINT principals_pkey,
    ADD CONSTRAINT principals_pkey PRIMARY KEY (org_id, id);
ALTER TABLE projects DROP CONSTRAINT projects_pkey,
    ADD CONSTRAINT projects_pkey PRIMARY KEY (org_id, id);
DROP INDEX projects_org;  -- (org_id, id): the primary key now
ALTER TABLE nodes DROP CONSTRAINT nodes_pkey,
    ADD CONSTRAINT nodes_pkey PRIMARY KEY (org_id, id);
ALTER TABLE edges DROP CONSTRAINT edges_pkey,
    ADD CONSTRAINT edges_pkey PRIMARY KEY (org_id, to_id, from_id, kind);
ALTER TABLE leases DROP CONSTRAINT leases_pkey,
    ADD CONSTRAINT leases_pkey PRIMARY KEY (org_id, id);
ALTER TABLE identities DROP CONSTRAINT identities_pkey,
    ADD CONSTRAINT identities_pkey PRIMARY KEY (org_id, id);
ALTER TABLE comments DROP CONSTRAINT comments_pkey,
    ADD CONSTRAINT comments_pkey PRIMARY KEY (org_id, id);
ALTER TABLE comment_revisions DROP CONSTRAINT comment_revisions_pkey,
    ADD CONSTRAINT comment_revisions_pkey PRIMARY KEY (org_id, comment_id, n);
ALTER TABLE usage_records DROP CONSTRAINT usage_records_pkey,
    ADD CONSTRAINT usage_records_pkey PRIMARY KEY (org_id, id);
ALTER TABLE budgets DROP CONSTRAINT budgets_pkey,
    ADD CONSTRAINT budgets_pkey PRIMARY KEY (org_id, scope_id);
ALTER TABLE artifacts DROP CONSTRAINT artifacts_pkey,
    ADD CONSTRAINT artifacts_pkey PRIMARY KEY (org_id, id);
ALTER TABLE node_origins DROP CONSTRAINT node_origins_pkey,
    ADD CONSTRAINT node_origins_pkey PRIMARY KEY (org_id, node_id, source);
ALTER TABLE webhook_endpoints DROP CONSTRAINT webhook_endpoints_pkey,
    ADD CONSTRAINT webhook_endpoints_pkey PRIMARY KEY (org_id, id);
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_pkey,
    ADD CONSTRAINT webhook_deliveries_pkey PRIMARY KEY (org_id, id);
-- events is partitioned by occurred_at, which every unique index must contain too
ALTER TABLE events DROP CONSTRAINT events_pkey,
    ADD CONSTRAINT events_pkey PRIMARY KEY (org_id, id, occurred_at);

-- 3. Unique within a row of another table: that row's organization leads.
ALTER TABLE nodes DROP CONSTRAINT nodes_project_id_number_key,
    ADD CONSTRAINT nodes_project_id_number_key UNIQUE (org_id, project_id, number);
DROP INDEX nodes_org_project_number;  -- (org_id, project_id, number): the key above now
ALTER TABLE node_origins DROP CONSTRAINT node_origins_project_id_source_external_id_key,
    ADD CONSTRAINT node_origins_project_id_source_external_id_key
        UNIQUE (org_id, project_id, source, external_id);
DROP INDEX leases_one_unreleased;
CREATE UNIQUE INDEX leases_one_unreleased ON leases (org_id, node_id) WHERE released_at IS NULL;
DROP INDEX webhook_deliveries_open;
CREATE UNIQUE INDEX webhook_deliveries_open ON webhook_deliveries (org_id, endpoint_id)
    WHERE sealed_at IS NULL;

-- 4. The foreign keys come back with org_id on both sides.
DO $$
DECLARE
    fk record;
BEGIN
    FOR fk IN SELECT * FROM skift_0025_fks LOOP
        EXECUTE format('ALTER TABLE %s ADD CONSTRAINT %I %s', fk.tbl, fk.name,
            regexp_replace(fk.def, '^FOREIGN KEY \(([^)]*)\) REFERENCES ([^(]+)\(([^)]*)\)',
                           'FOREIGN KEY (org_id, \1) REFERENCES \2(org_id, \3)'));
    END LOOP;
END
$$;
