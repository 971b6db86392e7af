-- Webhooks (seed 004, docs/webhooks.md): a project nominates endpoints to be
-- told when its events commit. Two tables, because the two things have
-- different lifetimes and different failure modes: an endpoint is
-- configuration a person sets and forgets, a delivery is an attempt that can
-- fail, wait and be abandoned.

CREATE TABLE webhook_endpoints (
    id           uuid PRIMARY KEY,
    org_id       uuid NOT NULL REFERENCES orgs (id),
    project_id   uuid NOT NULL REFERENCES projects (id),
    url          text NOT NULL CHECK (octet_length(url) BETWEEN 8 AND 2048),
    -- the event operations it is told about; empty: all of them
    events       text[] NOT NULL DEFAULT '{}',

    -- The shared secret a receiver checks our signature with. Stored rather than
    -- digested, because we sign with it (a digest cannot produce an HMAC). It is
    -- not a credential to skift: it authenticates us to the receiver, so its
    -- disclosure lets an attacker forge notifications at that receiver, not read
    -- anything here. Returned once at creation and at rotation, never again;
    -- never in an event or a log.
    secret       bytea NOT NULL CHECK (octet_length(secret) = 32),

    created_at   timestamptz NOT NULL,
    -- Disabled rather than deleted while deliveries point at it, so a parked
    -- delivery can still say where it was going. Events still coalesce into a
    -- disabled endpoint's open delivery, so enabling it loses nothing.
    disabled_at  timestamptz,

    -- Where the next delivery's window starts (a change-stream position): the
    -- endpoint's own creation event at first, then the end of the newest window
    -- sealed. The writer compares its events with it, so a transaction older
    -- than the endpoint that commits after it is not announced before the start.
    watermark_seq xid8 NOT NULL,
    watermark_id  uuid NOT NULL,

    -- One endpoint per URL per project: a person who registers the same address
    -- twice meant once, and two rows would deliver everything twice.
    UNIQUE (org_id, project_id, url)
);

-- append_events finds a project's endpoints at every write.
CREATE INDEX webhook_endpoints_project ON webhook_endpoints (org_id, project_id);

-- A delivery is a row before it is an attempt. Firing inside the writing
-- transaction would either roll a write back for a customer's broken receiver
-- or discard the failure; so it is written durably with the events it
-- announces and attempted afterwards, and no write waits on a receiver.
CREATE TABLE webhook_deliveries (
    id              uuid PRIMARY KEY,
    org_id          uuid NOT NULL REFERENCES orgs (id),
    project_id      uuid NOT NULL REFERENCES projects (id),
    endpoint_id     uuid NOT NULL REFERENCES webhook_endpoints (id),

    -- What the notification says, and the whole of it: a window (after,
    -- through] of the change stream and counts by operation. Never content:
    -- the receiver reads the events through the authenticated API, so the
    -- widest egress in the product carries no work.
    after_seq       xid8,
    after_id        uuid,
    through_seq     xid8 NOT NULL,
    through_id      uuid NOT NULL,
    counts          jsonb NOT NULL DEFAULT '{}'::jsonb,

    -- NULL while open: what commits coalesces into it. Set when a worker first
    -- claims it, fixing the window (after = the endpoint's watermark); from then
    -- on every attempt sends the same window under the same id.
    sealed_at       timestamptz,
    attempts        integer NOT NULL DEFAULT 0,
    -- When it may next be tried. In the past means now; a claim moves it a
    -- lease ahead (a worker that dies mid-attempt leaves it to be retried then),
    -- a failure moves it along the retry schedule.
    next_attempt_at timestamptz NOT NULL,
    delivered_at    timestamptz,
    -- Abandoned after the retry schedule, and visible: a notification nobody is
    -- coming for should be findable by asking rather than by reading a log.
    parked_at       timestamptz,
    last_status     integer,
    last_error      text CHECK (last_error IS NULL OR octet_length(last_error) <= 512),
    created_at      timestamptz NOT NULL,
    CHECK ((sealed_at IS NULL) = (after_seq IS NULL) AND (after_seq IS NULL) = (after_id IS NULL))
);

-- One open delivery per endpoint: what commits while it is pending coalesces
-- into it (append_events upserts on this index), so a burst of writes is one
-- notification and the receiver is never told the same news twice.
CREATE UNIQUE INDEX webhook_deliveries_open
    ON webhook_deliveries (endpoint_id) WHERE sealed_at IS NULL;

-- The claim query: what is owed, oldest first, ready now.
CREATE INDEX webhook_deliveries_due
    ON webhook_deliveries (next_attempt_at, id)
    WHERE delivered_at IS NULL AND parked_at IS NULL;

-- "One at a time, in order": the claim asks whether an endpoint has an older
-- sealed delivery still pending.
CREATE INDEX webhook_deliveries_endpoint_pending
    ON webhook_deliveries (endpoint_id, id)
    WHERE sealed_at IS NOT NULL AND delivered_at IS NULL AND parked_at IS NULL;

-- Listing: an organization's deliveries (of an endpoint or project), newest first.
CREATE INDEX webhook_deliveries_list ON webhook_deliveries (org_id, created_at DESC);
