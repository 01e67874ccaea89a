package portal

// Every query that reads a tenant's objects takes the session's tenant id and
// filters on it, so a session can never read another tenant's rows: a
// foreign id simply finds nothing.
const (
	selectTenantName = `SELECT coalesce(nullif(name, ''), id) FROM herald.tenants WHERE id = $1`

	endpointColumns = `
e.id, e.url, e.description, e.event_types, e.enabled, coalesce(e.disabled_reason, ''),
e.disabled_at, e.failing_since, e.last_success_at, e.created_at, e.ordering, e.breaker_opened_at`

	// listEndpointChoices is the tenant's endpoints for a filter's
	// choices: what listEndpoints shows without its counts of the last
	// 24 hours' attempts, which grow with an endpoint's traffic.
	listEndpointChoices = `
SELECT ` + endpointColumns + `, 0, 0
FROM herald.endpoints e
WHERE e.tenant_id = $1 AND e.deleted_at IS NULL
ORDER BY e.created_at, e.id`

	selectEndpoint = `
SELECT ` + endpointColumns + `, 0, 0
FROM herald.endpoints e
WHERE e.id = $1 AND e.tenant_id = $2 AND e.deleted_at IS NULL`

	// heldBack lists up to $3 heads of the ordered endpoint $1's lines
	// that have failed since they became the head (their objects' later
	// versions wait behind them), longest held first, with how many
	// versions wait (up to 1,000). The lines are the endpoint's backlog of
	// objects, found by ordered_lines_pkey; each head by deliveries_pkey.
	selectHeldBack = `
SELECT l.object_id, m.object_version, d.attempt_count - d.attempts_before_requeue, d.first_attempt_at,
       d.next_attempt_at, coalesce(d.last_error, ''), coalesce(d.last_status_code, 0),
       (SELECT count(*) FROM (SELECT FROM herald.ordered_waiting w
                              WHERE w.endpoint_id = l.endpoint_id AND w.object_id = l.object_id LIMIT 1000) n)
FROM herald.ordered_lines l
JOIN herald.endpoints e ON e.id = l.endpoint_id AND e.tenant_id = $2
JOIN herald.deliveries d ON d.id = l.head_delivery_id
JOIN herald.messages m ON m.id = d.message_id
WHERE l.endpoint_id = $1 AND d.status = 'pending' AND d.attempt_count > d.attempts_before_requeue
ORDER BY d.first_attempt_at, l.object_id
LIMIT $3`

	// selectEventTypesSeen offers the types of the tenant's latest
	// recentMessagesForTypes messages (a walk of messages_tenant_created)
	// and the catalogue's.
	selectEventTypesSeen = `
SELECT name FROM (
    SELECT DISTINCT event_type AS name FROM (
        SELECT event_type FROM herald.messages
        WHERE tenant_id = $1
        ORDER BY created_at DESC, id DESC
        LIMIT ` + recentMessagesForTypes + `) recent
    UNION
    SELECT name FROM herald.event_types
) t
ORDER BY name`

	// recentMessagesForTypes is how many of a tenant's latest messages
	// the event-type filter draws its types from, besides the catalogue.
	recentMessagesForTypes = "1000"

	selectEventTypeCatalogue = `SELECT name, description FROM herald.event_types ORDER BY name`
)

// The queries that count attempts through outcomeCounts.
var (
	// listEndpoints counts each endpoint's attempts of the current hour
	// and the 23 before it, the day chart's hours, from its counts per
	// hour (outcomeCounts).
	listEndpoints = `
SELECT ` + endpointColumns + `, c.succeeded, c.failed
FROM herald.endpoints e
CROSS JOIN LATERAL (
    SELECT coalesce(sum(c.succeeded), 0)::bigint AS succeeded, coalesce(sum(c.failed), 0)::bigint AS failed
    FROM (` + outcomeCounts("e.id", "date_trunc('hour', now(), 'UTC') - interval '23 hours'") + `) c) c
WHERE e.tenant_id = $1 AND e.deleted_at IS NULL
ORDER BY e.created_at, e.id`

	// Attempts per hour for an endpoint since $2, an hour's start, split
	// by outcome (outcomeCounts); the charts sum hours into days.
	selectHourlyOutcomes = `
SELECT c.hour, sum(c.succeeded)::bigint, sum(c.failed)::bigint
FROM (` + outcomeCounts("$1::uuid", "$2::timestamptz") + `) c
WHERE EXISTS (SELECT FROM herald.endpoints e WHERE e.id = $1 AND e.tenant_id = $3)
GROUP BY c.hour`
)

// outcomeCounts is the rows (hour, succeeded, failed) that, summed per
// hour, count the attempts to endpoint from the hour since (both SQL
// expressions) on: the hours moved into endpoint_outcomes and the deltas
// not moved yet, from the hour counting began (endpoint_outcomes_since),
// and, on a database upgraded with history, the attempts before that
// hour, counted one by one (migration 0051). Each is read through its
// index on (endpoint, hour), so the cost is a few rows per hour, not one
// per attempt.
func outcomeCounts(endpoint, since string) string {
	return `
    SELECT o.hour, o.succeeded, o.failed FROM herald.endpoint_outcomes o
    WHERE o.endpoint_id = ` + endpoint + ` AND o.hour >= ` + since + `
        AND o.hour >= (SELECT s.at FROM herald.endpoint_outcomes_since s)
    UNION ALL
    SELECT d.hour, d.succeeded, d.failed FROM herald.endpoint_outcome_deltas d
    WHERE d.endpoint_id = ` + endpoint + ` AND d.hour >= ` + since + `
        AND d.hour >= (SELECT s.at FROM herald.endpoint_outcomes_since s)
    UNION ALL
    SELECT date_trunc('hour', a.started_at, 'UTC'), count(*) FILTER (WHERE a.outcome = 'succeeded'),
        count(*) FILTER (WHERE a.outcome <> 'succeeded')
    FROM herald.attempts a
    WHERE a.endpoint_id = ` + endpoint + ` AND a.started_at >= ` + since + `
        AND a.started_at < (SELECT s.at FROM herald.endpoint_outcomes_since s)
    GROUP BY 1`
}
