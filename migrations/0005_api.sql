-- The management API's own state: who may call it (API keys, portal links and
-- sessions), the event-type catalogue, HTTP idempotency records for publish,
-- and replays with their progress.

-- An API key is a bearer token. Only its SHA-256 is stored: keys are 32
-- random bytes, so a fast hash is enough and lookups stay one index probe.
-- tenant_id NULL means an operator key that may act on every tenant.
CREATE TABLE herald.api_keys (
    id           uuid PRIMARY KEY,
    tenant_id    text REFERENCES herald.tenants (id) ON DELETE CASCADE,
    name         text NOT NULL DEFAULT '',
    -- The first characters of the key, shown in lists so a person can tell
    -- keys apart without the key itself.
    prefix       text NOT NULL,
    key_hash     bytea NOT NULL CONSTRAINT api_keys_key_hash UNIQUE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    revoked_at   timestamptz
);
CREATE INDEX api_keys_created ON herald.api_keys (created_at, id);

-- The catalogue of event types the producer publishes, with descriptions for
-- people choosing what an endpoint subscribes to. Publishing does not require
-- a type to be listed here.
CREATE TABLE herald.event_types (
    name        text PRIMARY KEY
                CONSTRAINT event_types_name_format CHECK (name ~ '^[a-z0-9][a-z0-9._-]{0,127}$'),
    description text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- A portal link opens the customer portal for one tenant. It works once and
-- expires; redeeming it creates a portal session. Both store only hashes.
CREATE TABLE herald.portal_links (
    token_hash bytea PRIMARY KEY,
    tenant_id  text NOT NULL REFERENCES herald.tenants (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    used_at    timestamptz
);

CREATE TABLE herald.portal_sessions (
    token_hash bytea PRIMARY KEY,
    tenant_id  text NOT NULL REFERENCES herald.tenants (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL
);
CREATE INDEX portal_sessions_expires ON herald.portal_sessions (expires_at);
CREATE INDEX portal_links_expires ON herald.portal_links (expires_at);

-- The first response to an HTTP publish with an Idempotency-Key, replayed
-- for repeats. request_hash tells a repeat from a different body under the
-- same key.
CREATE TABLE herald.idempotency_records (
    tenant_id     text NOT NULL REFERENCES herald.tenants (id) ON DELETE CASCADE,
    key           text NOT NULL,
    request_hash  bytea NOT NULL,
    status_code   integer NOT NULL,
    response_body bytea NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, key)
);

-- A replay re-sends an endpoint's deliveries of messages published in
-- [since_at, until_at). A River job walks them in batches; the cursor is the
-- last (message created_at, delivery id) it handled, so a restart resumes.
CREATE TABLE herald.replays (
    id                uuid PRIMARY KEY,
    tenant_id         text NOT NULL REFERENCES herald.tenants (id) ON DELETE CASCADE,
    endpoint_id       uuid NOT NULL REFERENCES herald.endpoints (id) ON DELETE CASCADE,
    since_at          timestamptz NOT NULL,
    until_at          timestamptz NOT NULL,
    only_failed       boolean NOT NULL DEFAULT false,
    status            text NOT NULL DEFAULT 'running'
                      CONSTRAINT replays_status CHECK (status IN ('running', 'completed')),
    total             integer NOT NULL,
    enqueued          integer NOT NULL DEFAULT 0,
    cursor_created_at timestamptz,
    cursor_id         uuid,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    completed_at      timestamptz,
    CONSTRAINT replays_range CHECK (since_at < until_at)
);
CREATE INDEX replays_endpoint_created ON herald.replays (endpoint_id, created_at, id);

-- The deliveries a replay handled, so its progress (done) can be counted.
CREATE TABLE herald.replay_deliveries (
    replay_id   uuid NOT NULL REFERENCES herald.replays (id) ON DELETE CASCADE,
    delivery_id uuid NOT NULL REFERENCES herald.deliveries (id) ON DELETE CASCADE,
    PRIMARY KEY (replay_id, delivery_id)
);
