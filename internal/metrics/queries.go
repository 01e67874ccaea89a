package metrics

const (
	countDeliveriesByStatus = `SELECT status, count(*) FROM herald.deliveries GROUP BY status`

	countAttemptsByOutcome = `SELECT outcome, count(*) FROM herald.attempts GROUP BY outcome`

	// attemptLatencyBuckets groups attempts by the index of the first
	// bound in $1 (milliseconds, each plus one) above their duration: with
	// whole-millisecond durations, index i counts attempts that took more
	// than bound i-1 and at most bound i; index len($1) the rest.
	attemptLatencyBuckets = `
SELECT width_bucket(duration_ms, $1::float8[]) AS i, count(*), coalesce(sum(duration_ms), 0)::float8
FROM herald.attempts GROUP BY i`

	outboxBacklog = `
SELECT count(*), coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8
FROM herald.messages WHERE dispatched_at IS NULL`

	queueDepth = `
SELECT queue, state::text, count(*) FROM herald.river_job
WHERE state IN ('available', 'scheduled', 'retryable', 'running')
GROUP BY queue, state ORDER BY queue, state`
)
