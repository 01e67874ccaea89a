package metrics

const (
	// outboxBacklog counts the undispatched messages through their partial
	// index, messages_undispatched: the backlog, however long the history.
	outboxBacklog = `
SELECT count(*), coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8
FROM herald.messages WHERE dispatched_at IS NULL`

	// queueDepth counts River's live jobs through its index on (state,
	// queue, ...); ended jobs are not read.
	queueDepth = `
SELECT queue, state::text, count(*) FROM herald.river_job
WHERE state IN ('available', 'scheduled', 'retryable', 'running')
GROUP BY queue, state ORDER BY queue, state`
)
