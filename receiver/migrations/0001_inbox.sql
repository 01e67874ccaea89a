-- The receiver's tables live in the consumer's database, in a schema of their
-- own so they never mix with the consumer's tables or with Herald's.

-- events is the inbox: one row per (source, webhook-id), stored by the
-- Handler before it answers 200 and processed later by a Worker. The
-- columns type, object_id and object_version repeat what the payload says,
-- so operators can query the inbox without parsing JSON.
CREATE TABLE webhook_inbox.events (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source          text NOT NULL,
    webhook_id      text NOT NULL,
    type            text NOT NULL,
    object_id       text,
    object_version  bigint,
    payload         bytea NOT NULL,
    received_at     timestamptz NOT NULL DEFAULT now(),
    attempts        integer NOT NULL DEFAULT 0,
    last_error      text,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    processed_at    timestamptz,
    dead_at         timestamptz,
    CONSTRAINT events_source_webhook_id_key UNIQUE (source, webhook_id)
);

-- What workers claim: neither processed nor dead, due now.
CREATE INDEX events_pending_idx ON webhook_inbox.events (next_attempt_at, id)
    WHERE processed_at IS NULL AND dead_at IS NULL;
CREATE INDEX events_dead_idx ON webhook_inbox.events (dead_at, id)
    WHERE dead_at IS NOT NULL;
CREATE INDEX events_processed_idx ON webhook_inbox.events (received_at)
    WHERE processed_at IS NOT NULL;

-- claims holds the dedupe keys taken by Claim, for consumers that apply a
-- webhook's effect inside the request instead of through the inbox.
CREATE TABLE webhook_inbox.claims (
    source     text NOT NULL,
    webhook_id text NOT NULL,
    claimed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (source, webhook_id)
);
CREATE INDEX claims_claimed_at_idx ON webhook_inbox.claims (claimed_at);

-- object_versions is the version guard: the highest version applied per
-- object. It is never pruned: forgetting a version would let an older update
-- that arrives later overwrite a newer one.
CREATE TABLE webhook_inbox.object_versions (
    source     text NOT NULL,
    object_id  text NOT NULL,
    version    bigint NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (source, object_id)
);
