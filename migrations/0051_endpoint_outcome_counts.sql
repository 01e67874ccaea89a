-- Attempts counted per endpoint and hour as they are recorded, so that the
-- portal's outcome charts and its endpoint list's last 24 hours cost the
-- same however busy an endpoint has been.
--
-- Both counted the endpoint's attempts one by one through
-- attempts_endpoint_started: a read of every attempt of the week (charts)
-- or the day (list). On the aged bench scenario (docs/benchmarks.md, "The
-- aged scenario") the endpoint page took 159 to 169 ms on a fresh database
-- after a replay of 100,000 deliveries, most of it the week's count.
--
-- * endpoint_outcome_deltas: what each recording transaction adds, one row
--   per endpoint and hour of the attempts it records, inserted by the
--   statement that inserts the attempts (delivery.recordAttempts), so the
--   counts commit with the attempts and no row is contended: recorders of
--   one endpoint never update a shared row.
-- * endpoint_outcomes: the deltas summed per endpoint and hour. The
--   retention pass (retention.Maintainer) moves the deltas into it in one
--   statement per batch, deleting what it adds, and deletes the hours
--   older than retention.KeptOutcomes.
-- * endpoint_outcomes_since: the first hour whose attempts were all
--   counted. A database made before this migration holds attempts that no
--   delta counts; readers count those hours from the attempts themselves
--   until the charts' week has passed since. Attempts recorded by a
--   dispatcher of an earlier version during a rolling upgrade are not
--   counted.
--
-- A reader sums endpoint_outcomes and endpoint_outcome_deltas in one
-- statement: a pass moving deltas commits both changes at once, so a
-- reader sees each attempt in exactly one of the two.
CREATE TABLE herald.endpoint_outcome_deltas (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    endpoint_id uuid NOT NULL REFERENCES herald.endpoints (id) ON DELETE CASCADE,
    hour        timestamptz NOT NULL,
    succeeded   bigint NOT NULL,
    failed      bigint NOT NULL
);
CREATE INDEX endpoint_outcome_deltas_endpoint ON herald.endpoint_outcome_deltas (endpoint_id, hour);

CREATE TABLE herald.endpoint_outcomes (
    endpoint_id uuid NOT NULL REFERENCES herald.endpoints (id) ON DELETE CASCADE,
    hour        timestamptz NOT NULL,
    succeeded   bigint NOT NULL,
    failed      bigint NOT NULL,
    PRIMARY KEY (endpoint_id, hour)
);
CREATE INDEX endpoint_outcomes_hour ON herald.endpoint_outcomes (hour);

CREATE TABLE herald.endpoint_outcomes_since (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    at  timestamptz NOT NULL
);
-- The hour under way is only partly counted: counting is whole from the
-- next one. A new database has no attempts before it.
INSERT INTO herald.endpoint_outcomes_since (at)
SELECT CASE WHEN EXISTS (SELECT FROM herald.attempts) THEN date_trunc('hour', now(), 'UTC') + interval '1 hour'
            ELSE '-infinity'::timestamptz END;
