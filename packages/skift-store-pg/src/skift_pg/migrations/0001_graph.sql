-- 0001: the graph core — organizations, principals, projects, nodes, edges,
-- leases, idempotency records, rotation cursors and the event log.
--
-- Conventions for every table here:
--   * ids are ULIDs stored as uuid (time-ordered, so a btree on id is an
--     insertion-ordered index and uuid comparison is ULID order);
--   * org_id is on every table and in every predicate: it is the tenancy
--     scope, and a later Citus deployment distributes every table by it;
--   * nothing derived is stored. Readiness (blocked, held, claimed, ready) is
--     computed by the queries in queries/graph.sql at read time.

CREATE TABLE orgs (
    id          uuid PRIMARY KEY,
    name        text NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL
);

-- Who acts. Identities (unix uid, token digest, ...) arrive with the identity
-- work; a principal is referred to by id from every event and lease.
CREATE TABLE principals (
    id          uuid PRIMARY KEY,
    org_id      uuid NOT NULL REFERENCES orgs (id),
    name        text NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('user', 'agent', 'service')),
    created_at  timestamptz NOT NULL,
    UNIQUE (org_id, name)
);

-- A project is an authorization scope, a namespace for node numbers, a cost
-- rollup unit and a lifecycle unit. node_counter is a column, not a sequence:
-- creating a project must cost no DDL. A patch allocates its numbers as one
-- block with a single UPDATE ... RETURNING on this row.
CREATE TABLE projects (
    id            uuid PRIMARY KEY,
    org_id        uuid NOT NULL REFERENCES orgs (id),
    slug          text NOT NULL CHECK (length(slug) BETWEEN 1 AND 100 AND slug = lower(slug)),
    title         text NOT NULL,
    node_counter  bigint NOT NULL DEFAULT 0 CHECK (node_counter >= 0),
    priority      smallint NOT NULL DEFAULT 2 CHECK (priority BETWEEN 0 AND 4),
    vcs_url       text NOT NULL DEFAULT '',
    archived_at   timestamptz,
    held_at       timestamptz,
    held_by       uuid,
    held_reason   text,
    hold_group    uuid,
    created_at    timestamptz NOT NULL,
    -- a hold is all-or-nothing: when, who and why travel together
    CHECK ((held_at IS NULL) = (held_by IS NULL) AND (held_at IS NULL) = (held_reason IS NULL))
);
CREATE INDEX projects_org ON projects (org_id, id);

-- Every slug a project has ever had. Renaming adds a row and keeps the old
-- one, so a retired slug keeps resolving forever; the primary key makes a
-- slug name at most one project within an organization.
CREATE TABLE project_slugs (
    org_id      uuid NOT NULL REFERENCES orgs (id),
    slug        text NOT NULL,
    project_id  uuid NOT NULL REFERENCES projects (id),
    PRIMARY KEY (org_id, slug)
);

CREATE TABLE nodes (
    id             uuid PRIMARY KEY,
    org_id         uuid NOT NULL REFERENCES orgs (id),
    project_id     uuid NOT NULL REFERENCES projects (id),
    number         bigint NOT NULL CHECK (number >= 1),
    parent_id      uuid REFERENCES nodes (id),
    kind           text NOT NULL DEFAULT 'task',
    title          text NOT NULL,
    body           text NOT NULL DEFAULT '',
    -- only these three are stored; everything else about a node's state is derived
    status         text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'done', 'dropped')),
    -- p0..p4 as 0..4 so the ready index sorts by it directly
    priority       smallint NOT NULL DEFAULT 2 CHECK (priority BETWEEN 0 AND 4),
    assignee_kind  text CHECK (assignee_kind IN ('agent', 'user')),
    assignee       text,
    labels         text[] NOT NULL DEFAULT '{}',
    held_at        timestamptz,
    held_by        uuid,
    held_reason    text,
    hold_group     uuid,
    result         text,
    context_id     uuid NOT NULL,
    created_by     uuid NOT NULL,
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL,
    -- numbers are sequential within a project and never reused
    UNIQUE (project_id, number),
    CHECK ((held_at IS NULL) = (held_by IS NULL) AND (held_at IS NULL) = (held_reason IS NULL))
);
-- The ready query's order within a project (priority, then age, then number),
-- restricted to open nodes: closed nodes never appear in Ready or ClaimNext.
CREATE INDEX nodes_open_order ON nodes (org_id, project_id, priority, created_at, number)
    WHERE status = 'open';
-- The containment walk (children of a node, the held subtree).
CREATE INDEX nodes_parent ON nodes (parent_id) WHERE parent_id IS NOT NULL;
-- The open-children anti-join of readiness: its predicate exactly, so the
-- planner takes it even before a fresh table has statistics.
CREATE INDEX nodes_open_children ON nodes (parent_id) WHERE status = 'open' AND parent_id IS NOT NULL;
-- Held nodes are few; the held-subtree walk starts from this index.
CREATE INDEX nodes_held ON nodes (org_id) WHERE held_at IS NOT NULL;
-- ListNodes orders by project and number.
CREATE INDEX nodes_org_project_number ON nodes (org_id, project_id, number);

-- from blocks to. 'blocks' is the only kind that affects readiness; the kind
-- column stays so annotations (alignment) can be added without conflating a
-- contribution with a dependency.
CREATE TABLE edges (
    org_id      uuid NOT NULL REFERENCES orgs (id),
    from_id     uuid NOT NULL REFERENCES nodes (id),
    to_id       uuid NOT NULL REFERENCES nodes (id),
    kind        text NOT NULL DEFAULT 'blocks' CHECK (kind IN ('blocks')),
    created_at  timestamptz NOT NULL,
    -- the blocked-by anti-join probes by target first
    PRIMARY KEY (to_id, from_id, kind),
    CHECK (from_id <> to_id)
);
-- cascade expansion and "what does this block" walk by source
CREATE INDEX edges_from ON edges (from_id);

-- One row per attempt. The id is the fencing token: every write under a
-- lease names it, and the store checks it is the node's current, unexpired
-- lease while holding the lease row's lock.
CREATE TABLE leases (
    id              uuid PRIMARY KEY,
    org_id          uuid NOT NULL REFERENCES orgs (id),
    node_id         uuid NOT NULL REFERENCES nodes (id),
    holder          uuid NOT NULL REFERENCES principals (id),
    harness         text NOT NULL DEFAULT '',
    agent_ref       text NOT NULL DEFAULT '',
    session_ref     text NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL,
    expires_at      timestamptz NOT NULL CHECK (expires_at > created_at),
    -- the TTL the holder asked for (after clamping): every renewal extends by it
    ttl             interval NOT NULL CHECK (ttl > interval '0'),
    released_at     timestamptz,
    release_reason  text CHECK (release_reason IN ('complete', 'gate', 'crash', 'budget', 'expired', 'preempted')),
    CHECK ((released_at IS NULL) = (release_reason IS NULL))
);
-- One live lease per node: at most one unreleased lease per node. A claim
-- releases an expired-but-unreleased lease (reason expired) before taking a
-- new one, so this never waits for the sweeper.
CREATE UNIQUE INDEX leases_one_unreleased ON leases (node_id) WHERE released_at IS NULL;
-- the sweeper's scan for leases whose time ran out
CREATE INDEX leases_expiry ON leases (org_id, expires_at) WHERE released_at IS NULL;
-- lease history per node
CREATE INDEX leases_node ON leases (node_id, created_at);

-- Idempotency: a patch's request id and a digest of its content. Ids are
-- scoped to the principal that sent them (as an API key scopes Stripe's), so
-- one principal never replays another's response. The primary key is what
-- makes twenty concurrent requests with one id apply once: the second INSERT
-- waits on the first transaction and then sees its row.
CREATE TABLE requests (
    org_id       uuid NOT NULL REFERENCES orgs (id),
    principal_id uuid NOT NULL REFERENCES principals (id),
    request_id   text NOT NULL,
    fingerprint  text NOT NULL,
    response     jsonb,
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (org_id, principal_id, request_id)
);
-- for a retention sweep of old request ids
CREATE INDEX requests_created ON requests (created_at);

-- The round-robin rotation across projects, per principal and per filter
-- (the hash of the scope-defining filter fields). ClaimNext advances it on a
-- successful claim; Ready reads it and never writes it.
CREATE TABLE claim_cursors (
    org_id        uuid NOT NULL REFERENCES orgs (id),
    principal_id  uuid NOT NULL REFERENCES principals (id),
    filter_hash   text NOT NULL,
    project_id    uuid NOT NULL REFERENCES projects (id),
    updated_at    timestamptz NOT NULL,
    PRIMARY KEY (org_id, principal_id, filter_hash)
);

-- Immutable, append-only. xid is the writing transaction's id, recorded from
-- the first migration so the change stream can read by a commit-ordered
-- cursor (xid, id) below pg_snapshot_xmin(pg_current_snapshot()): a ULID is
-- allocated before commit, so the id alone would let a consumer skip an event
-- whose transaction committed late.
CREATE TABLE events (
    id               uuid PRIMARY KEY,
    org_id           uuid NOT NULL REFERENCES orgs (id),
    project_id       uuid,
    node_id          uuid,
    principal_id     uuid NOT NULL,
    principal_kind   text NOT NULL CHECK (principal_kind IN ('user', 'agent', 'service')),
    on_behalf_of     uuid,
    identity_scheme  text NOT NULL,
    request_id       text,
    op               text NOT NULL,
    reason           text,
    before           jsonb,
    after            jsonb,
    occurred_at      timestamptz NOT NULL,
    xid              xid8 NOT NULL DEFAULT pg_current_xact_id()
);
-- the change-stream cursor
CREATE INDEX events_cursor ON events (org_id, xid, id);
-- a node's history (inputs' authors, audit of one node)
CREATE INDEX events_node ON events (node_id, id) WHERE node_id IS NOT NULL;
-- project activity order: the newest event per project
CREATE INDEX events_project_time ON events (project_id, occurred_at) WHERE project_id IS NOT NULL;
