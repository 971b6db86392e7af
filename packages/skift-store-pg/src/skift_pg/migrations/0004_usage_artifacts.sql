-- 0004: usage and cost, budgets and caps, artifacts and blob metadata.
--
-- Usage is counted in tokens and never in currency: a rate table applied at
-- query time turns counts into money, so a changed price re-prices history
-- instead of leaving records that disagree with each other. Artifacts hold
-- parts as JSON (inline text under a size limit, blob digests, references);
-- blob bytes never enter the database: they live in a blob directory by
-- digest, and this database records which organization holds which digest.

-- Append-only usage records. One row per report: an actual under the lease
-- of the attempt it measures (lease_id, so a retry's spend stays apart from
-- the original's), or an estimate with the basis it rests on. A node's
-- current estimate is its newest estimate row, derived by the rollup query.
CREATE TABLE usage_records (
    id                  uuid PRIMARY KEY,
    org_id              uuid NOT NULL REFERENCES orgs (id),
    project_id          uuid NOT NULL REFERENCES projects (id),
    node_id             uuid NOT NULL REFERENCES nodes (id),
    lease_id            uuid REFERENCES leases (id),
    principal_id        uuid NOT NULL REFERENCES principals (id),
    model               text NOT NULL CHECK (length(model) BETWEEN 1 AND 200),
    input_tokens        bigint NOT NULL DEFAULT 0 CHECK (input_tokens >= 0),
    output_tokens       bigint NOT NULL DEFAULT 0 CHECK (output_tokens >= 0),
    cache_read_tokens   bigint NOT NULL DEFAULT 0 CHECK (cache_read_tokens >= 0),
    cache_write_tokens  bigint NOT NULL DEFAULT 0 CHECK (cache_write_tokens >= 0),
    kind                text NOT NULL CHECK (kind IN ('actual', 'estimate')),
    -- what an estimate was reasoned from; an actual is measured and has none
    basis               text CHECK (kind = 'estimate' OR basis IS NULL),
    created_at          timestamptz NOT NULL
);
-- A node's records, newest first (the node report, and the newest estimate
-- per node that the subtree rollup picks with DISTINCT ON).
CREATE INDEX usage_records_node ON usage_records (node_id, created_at DESC, id DESC);
-- The project rollup scans a project's records.
CREATE INDEX usage_records_project ON usage_records (project_id, created_at DESC);

-- The rate table: per organization and model, a price per million tokens of
-- each class. numeric, never float: money is exact. Every rate of an
-- organization is in one currency (the engine keeps it so), so a report sums
-- models without converting.
CREATE TABLE rates (
    org_id       uuid NOT NULL REFERENCES orgs (id),
    model        text NOT NULL,
    input        numeric NOT NULL CHECK (input >= 0),
    output       numeric NOT NULL CHECK (output >= 0),
    cache_read   numeric NOT NULL CHECK (cache_read >= 0),
    cache_write  numeric NOT NULL CHECK (cache_write >= 0),
    currency     text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    updated_by   uuid NOT NULL REFERENCES principals (id),
    updated_at   timestamptz NOT NULL,
    PRIMARY KEY (org_id, model)
);

-- Budgets and caps live beside what they are on (a node or a project) rather
-- than as columns of those tables: they are read only by usage reports and
-- by Claim, and keeping them apart leaves the hot node row and the readiness
-- queries untouched. A budget is reported; a cap (nodes only) is enforced at
-- Claim. scope_id is the node's or the project's id (ULIDs never collide).
CREATE TABLE budgets (
    scope_id    uuid PRIMARY KEY,
    org_id      uuid NOT NULL REFERENCES orgs (id),
    scope       text NOT NULL CHECK (scope IN ('node', 'project')),
    budget      numeric CHECK (budget >= 0),
    cap         numeric CHECK (cap >= 0),
    updated_at  timestamptz NOT NULL,
    -- a hard cap is a node's: a project's budget is reported, never enforced
    CHECK (scope = 'node' OR cap IS NULL)
);
-- ClaimNext looks up every cap of an organization on each call: few rows.
CREATE INDEX budgets_caps ON budgets (org_id) WHERE cap IS NOT NULL;

-- Artifacts: A2A-shaped (name, description, parts, metadata), attached to a
-- node by a patch (attach_artifact, or complete_node with artifacts). parts
-- is a JSON array of {type: text|blob|reference, ...}; the engine bounds
-- inline text, part counts and metadata size before a row is written.
CREATE TABLE artifacts (
    id           uuid PRIMARY KEY,
    org_id       uuid NOT NULL REFERENCES orgs (id),
    node_id      uuid NOT NULL REFERENCES nodes (id),
    name         text NOT NULL,
    description  text NOT NULL DEFAULT '',
    parts        jsonb NOT NULL CHECK (jsonb_typeof(parts) = 'array'),
    metadata     jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(metadata) = 'object'),
    author_id    uuid NOT NULL REFERENCES principals (id),
    created_at   timestamptz NOT NULL
);
-- A node's artifacts in attach order (claim inputs, listing, the per-node count).
CREATE INDEX artifacts_node ON artifacts (node_id, created_at, id);

-- Which organization holds which blob. Bytes are deduplicated by digest in
-- the blob directory across organizations; this row is what lets an
-- organization read a digest (tenancy) and what a blob part is checked
-- against (it exists, and its size agrees).
CREATE TABLE blobs (
    org_id      uuid NOT NULL REFERENCES orgs (id),
    digest      text NOT NULL CHECK (digest ~ '^sha256:[0-9a-f]{64}$'),
    size        bigint NOT NULL CHECK (size >= 0),
    media_type  text NOT NULL,
    created_by  uuid NOT NULL REFERENCES principals (id),
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (org_id, digest)
);
