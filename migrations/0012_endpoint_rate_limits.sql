-- Rate limits: one row per rate-limited endpoint holds its limiter's state,
-- which every dispatcher reads and changes with one UPDATE per delivery
-- (internal/ratelimit). A changed limit, a restarted or added dispatcher
-- and an uneven spread of jobs between dispatchers therefore all see the
-- same state; nothing is reserved ahead of time.
--
-- slot is the theoretical time of the latest delivery let through (GCRA's
-- theoretical arrival time less one interval); wake_at is the latest
-- wake-up handed to a delivery turned away, at most a few seconds ahead, so
-- that a backlog comes back one delivery per slot instead of all at once;
-- last_wait is what the latest ask was told: NULL when it was let through,
-- else how long to sleep. RETURNING sees only the new row, so the answer is
-- kept in it for the one statement that decides to return it; it also
-- shows at a glance which endpoints have deliveries waiting.
--
-- A row is kept narrow and apart from herald.endpoints, whose rows health
-- updates, and is updated in place on every ask: no indexed column changes,
-- so with room on the page (fillfactor) the update is heap-only.
CREATE TABLE herald.endpoint_rate_limits (
    endpoint_id uuid PRIMARY KEY REFERENCES herald.endpoints (id) ON DELETE CASCADE,
    slot        timestamptz NOT NULL,
    wake_at     timestamptz NOT NULL,
    last_wait   interval
) WITH (fillfactor = 50);

-- The dispatchers' heartbeat existed only to divide each limit between
-- replicas (limit ÷ live dispatchers); the shared row replaces it. A
-- dispatcher of an older version still running during a rolling upgrade
-- logs that its heartbeat failed and keeps its last count until replaced.
DROP TABLE herald.dispatchers;
