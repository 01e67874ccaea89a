package limits

// takeQuery asks tenant $1's row for action $2 for one request at time $5
// (NULL: the database's clock), judged by the tenant's own limit for $2 in
// herald.tenants.rate_limits or else by the default $3 per second (NULL:
// no limit) in bursts of $4; see the package documentation for the maths.
// It returns no row when there is no limit (or no such tenant), else how
// long the request must wait (NULL: let through) and the limit it was
// judged by.
//
// One statement and one round trip, atomic under the row's lock, like
// internal/ratelimit's admitQuery: the first ask inserts the row and is
// let through; a later one waits for whichever transaction holds the row
// and computes the new state from what it committed (ON CONFLICT DO
// UPDATE), so asks from every replica are serialised. The emission
// interval is rounded up to the microsecond Postgres keeps, so that
// rounding never raises the limit.
const takeQuery = `
WITH ask AS (
    SELECT coalesce($5::timestamptz, now()) AS at,
        coalesce((t.rate_limits -> $2::text ->> 'per_second')::double precision, $3::double precision) AS per_second,
        coalesce((t.rate_limits -> $2::text ->> 'burst')::integer, $4::integer) AS burst
    FROM herald.tenants t WHERE t.id = $1
), lim AS (
    SELECT at, per_second, burst, ceil(1e6 / per_second) * interval '1 microsecond' AS emission
    FROM ask WHERE per_second > 0
)
INSERT INTO herald.tenant_rate_limits AS b (tenant_id, action, tat, per_second, burst)
SELECT $1, $2, lim.at + lim.emission, lim.per_second, lim.burst FROM lim
ON CONFLICT (tenant_id, action) DO UPDATE SET (tat, per_second, burst, last_wait) = (
    SELECT
        CASE WHEN through THEN start + lim.emission ELSE b.tat END,
        lim.per_second,
        lim.burst,
        CASE WHEN NOT through THEN start - lim.emission * (lim.burst - 1) - lim.at END
    FROM lim,
        LATERAL (SELECT greatest(b.tat, lim.at) AS start) AS s,
        LATERAL (SELECT s.start - lim.at <= lim.emission * (lim.burst - 1) AS through) AS answer
)
RETURNING last_wait, per_second, burst`
