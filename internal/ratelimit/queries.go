package ratelimit

// admitQuery asks endpoint $1's limit, of emission interval $2, for one
// delivery at time $4 (NULL: the database's clock), handing out wake-ups at
// most $3 ahead; see the package documentation for the maths. It returns
// NULL when the delivery is let through, else how long it should sleep.
//
// One statement and one round trip, atomic under the row's lock: the first
// ask of an endpoint inserts its row and is let through; every later ask
// computes the new state from the locked row's latest version (ON CONFLICT
// DO UPDATE waits for a transaction that holds the row and then reads what
// it committed), so concurrent asks from any number of dispatchers are
// serialised on the row and none reads a stale state. RETURNING sees only
// the new row, so the answer is stored in it (last_wait). The first ask's
// row starts with wake_at a quarter interval back, so the first wake-up it
// hands out is slot + 3T/4 like every other. A wake-up beyond $3 is not
// handed out: wake_at stays on the grid of slots, and the delivery is told
// to sleep exactly $3.
const admitQuery = `
WITH ask AS (
    SELECT coalesce($4::timestamptz, now()) AS at, $2::interval AS emission, $3::interval AS max_wait
)
INSERT INTO herald.endpoint_rate_limits AS l (endpoint_id, slot, wake_at)
SELECT $1, ask.at, ask.at - ask.emission / 4 FROM ask
ON CONFLICT (endpoint_id) DO UPDATE SET (slot, wake_at, last_wait) = (
    SELECT
        CASE WHEN through THEN greatest(l.slot + ask.emission, ask.at) ELSE l.slot END,
        CASE WHEN through OR next_wake > ask.at + ask.max_wait THEN l.wake_at ELSE next_wake END,
        CASE WHEN NOT through THEN least(next_wake, ask.at + ask.max_wait) - ask.at END
    FROM ask, LATERAL (
        SELECT ask.at >= l.slot + ask.emission / 2 AS through,
            greatest(l.wake_at + ask.emission, l.slot + ask.emission * 3 / 4) AS next_wake
    ) AS answer
)
RETURNING last_wait`
