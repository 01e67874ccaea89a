-- Herald's core tables: who receives (tenants, endpoints, their secrets), what
-- is sent (messages, object versions) and how it went (deliveries, attempts).
-- River's own tables live in the same schema and are created by rivermigrate.

CREATE SCHEMA IF NOT EXISTS herald;

-- A tenant is one customer of the SaaS team that runs Herald. Its id is chosen
-- by the producer (usually the customer's id in the producer's own database).
CREATE TABLE herald.tenants (
    id         text PRIMARY KEY
               CONSTRAINT tenants_id_format CHECK (id ~ '^[A-Za-z0-9][A-Za-z0-9_:-]{0,127}$'),
    name       text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- An endpoint is one URL a tenant receives webhooks at. An empty event_types
-- array subscribes to every type.
CREATE TABLE herald.endpoints (
    id                    uuid PRIMARY KEY,
    tenant_id             text NOT NULL REFERENCES herald.tenants (id) ON DELETE CASCADE,
    url                   text NOT NULL,
    description           text NOT NULL DEFAULT '',
    event_types           text[] NOT NULL DEFAULT '{}',
    enabled               boolean NOT NULL DEFAULT true,
    disabled_reason       text,
    disabled_at           timestamptz,
    -- Messages per second; NULL means unlimited.
    rate_limit            double precision CONSTRAINT endpoints_rate_limit_positive CHECK (rate_limit > 0),
    -- Health: the start of the current run of failures (NULL while healthy),
    -- the last success, and when the owner was warned about this run.
    failing_since         timestamptz,
    last_success_at       timestamptz,
    failing_notified_at   timestamptz,
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX endpoints_tenant_id ON herald.endpoints (tenant_id, created_at);

-- Signing secrets. Several may be active at once while a rotation's grace
-- period runs; expires_at NULL means active until rotated. The secret itself
-- is stored encrypted (nonce || AES-256-GCM ciphertext of its whsec_/whsk_ form).
CREATE TABLE herald.endpoint_secrets (
    id          uuid PRIMARY KEY,
    endpoint_id uuid NOT NULL REFERENCES herald.endpoints (id) ON DELETE CASCADE,
    algorithm   text NOT NULL CONSTRAINT endpoint_secrets_algorithm CHECK (algorithm IN ('hmac-sha256', 'ed25519')),
    ciphertext  bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz
);
CREATE INDEX endpoint_secrets_endpoint_id ON herald.endpoint_secrets (endpoint_id, created_at);

-- One row per published event. body holds the exact JSON sent on the wire
-- ({"type","timestamp","object":{"id","version"},"data"}), fixed at publish
-- time so every attempt, resend and replay carries the same signed bytes.
CREATE TABLE herald.messages (
    id              uuid PRIMARY KEY,
    tenant_id       text NOT NULL REFERENCES herald.tenants (id) ON DELETE CASCADE,
    event_type      text NOT NULL,
    object_id       text NOT NULL,
    object_version  bigint NOT NULL,
    body            text NOT NULL,
    idempotency_key text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    dispatched_at   timestamptz,
    CONSTRAINT messages_idempotency_key UNIQUE (tenant_id, idempotency_key)
);
CREATE INDEX messages_undispatched ON herald.messages (created_at, id) WHERE dispatched_at IS NULL;
CREATE INDEX messages_tenant_created ON herald.messages (tenant_id, created_at, id);

-- The latest version of each object, bumped by every publish in the
-- publisher's transaction: the row lock orders concurrent publishers, so
-- version order is commit order.
CREATE TABLE herald.object_versions (
    tenant_id text NOT NULL REFERENCES herald.tenants (id) ON DELETE CASCADE,
    object_id text NOT NULL,
    version   bigint NOT NULL,
    PRIMARY KEY (tenant_id, object_id)
);

-- One row per (message, endpoint). status:
--   pending    queued or waiting for a retry
--   succeeded  an attempt got a 2xx
--   failed     the retry window was spent (exhausted) or the endpoint answered 410
--   cancelled  the endpoint was disabled or deleted before it was sent
--   skipped    the endpoint was disabled when the message was published; a
--              replay after re-enabling sends it
CREATE TABLE herald.deliveries (
    id               uuid PRIMARY KEY,
    message_id       uuid NOT NULL REFERENCES herald.messages (id) ON DELETE CASCADE,
    endpoint_id      uuid NOT NULL REFERENCES herald.endpoints (id) ON DELETE CASCADE,
    tenant_id        text NOT NULL,
    status           text NOT NULL DEFAULT 'pending'
                     CONSTRAINT deliveries_status CHECK (status IN ('pending', 'succeeded', 'failed', 'cancelled', 'skipped')),
    attempt_count    integer NOT NULL DEFAULT 0,
    first_attempt_at timestamptz,
    last_attempt_at  timestamptz,
    next_attempt_at  timestamptz,
    completed_at     timestamptz,
    last_status_code integer,
    last_error       text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT deliveries_message_endpoint UNIQUE (message_id, endpoint_id)
);
CREATE INDEX deliveries_endpoint_created ON herald.deliveries (endpoint_id, created_at, id);
CREATE INDEX deliveries_pending ON herald.deliveries (endpoint_id) WHERE status = 'pending';

-- One row per HTTP attempt. trigger says why it ran: 'scheduled' (first send
-- and automatic retries), 'manual' (resend) or 'replay'.
CREATE TABLE herald.attempts (
    id               uuid PRIMARY KEY,
    delivery_id      uuid NOT NULL REFERENCES herald.deliveries (id) ON DELETE CASCADE,
    message_id       uuid NOT NULL,
    endpoint_id      uuid NOT NULL,
    attempt_number   integer NOT NULL,
    trigger          text NOT NULL CONSTRAINT attempts_trigger CHECK (trigger IN ('scheduled', 'manual', 'replay')),
    started_at       timestamptz NOT NULL,
    duration_ms      integer NOT NULL,
    request_headers  jsonb NOT NULL DEFAULT '{}',
    status_code      integer,
    error            text,
    response_excerpt text NOT NULL DEFAULT '',
    outcome          text NOT NULL
);
CREATE INDEX attempts_delivery ON herald.attempts (delivery_id, attempt_number);
CREATE INDEX attempts_endpoint_started ON herald.attempts (endpoint_id, started_at);
