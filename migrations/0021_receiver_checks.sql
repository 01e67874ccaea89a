-- The receiver check (package receivercheck): the pre-launch checks sent to
-- one endpoint as signed test events, and how the endpoint answered each.
CREATE TABLE herald.receiver_checks (
    id           uuid PRIMARY KEY,
    tenant_id    text NOT NULL REFERENCES herald.tenants (id) ON DELETE CASCADE,
    endpoint_id  uuid NOT NULL REFERENCES herald.endpoints (id) ON DELETE CASCADE,
    status       text NOT NULL DEFAULT 'running'
                 CONSTRAINT receiver_checks_status CHECK (status IN ('running', 'completed')),
    -- The event the check sends twice; a check a day or more later replays
    -- it as an old event.
    first_message_id uuid NOT NULL,
    -- The steps, their events and the answers (receivercheck.Step).
    steps        jsonb NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    completed_at timestamptz
);
-- An endpoint's checks by time: its latest (the rate limit, the portal's
-- page) and the newest a day old (the old event to replay).
CREATE INDEX receiver_checks_endpoint_created ON herald.receiver_checks (endpoint_id, created_at);
