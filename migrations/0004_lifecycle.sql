-- Endpoint lifecycle: the dispatcher replicas that are alive right now.
--
-- Each dispatcher process refreshes its row every few seconds and deletes it
-- when it stops; a row whose heartbeat is older than the expiry belongs to a
-- process that died. The number of live rows divides each endpoint's rate
-- limit between replicas, so that together they stay within it.
CREATE TABLE herald.dispatchers (
    id           uuid PRIMARY KEY,
    hostname     text NOT NULL DEFAULT '',
    started_at   timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX dispatchers_heartbeat_at ON herald.dispatchers (heartbeat_at);
