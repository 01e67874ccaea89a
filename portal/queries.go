package portal

// Every query that reads a tenant's objects takes the session's tenant id and
// filters on it, so a session can never read another tenant's rows: a
// foreign id simply finds nothing.
const (
	selectTenantName = `SELECT coalesce(nullif(name, ''), id) FROM herald.tenants WHERE id = $1`

	endpointColumns = `
e.id, e.url, e.description, e.event_types, e.enabled, coalesce(e.disabled_reason, ''),
e.disabled_at, e.failing_since, e.last_success_at, e.created_at`

	listEndpoints = `
SELECT ` + endpointColumns + `,
       count(a.id) FILTER (WHERE a.outcome = 'succeeded'),
       count(a.id) FILTER (WHERE a.outcome <> 'succeeded')
FROM herald.endpoints e
LEFT JOIN herald.attempts a ON a.endpoint_id = e.id AND a.started_at > now() - interval '24 hours'
WHERE e.tenant_id = $1
GROUP BY e.id
ORDER BY e.created_at, e.id`

	selectEndpoint = `
SELECT ` + endpointColumns + `, 0, 0
FROM herald.endpoints e
WHERE e.id = $1 AND e.tenant_id = $2`

	// Attempts per hour for an endpoint since $2, split by outcome; the
	// charts sum hours into days.
	selectHourlyOutcomes = `
SELECT date_trunc('hour', a.started_at) AS hour,
       count(*) FILTER (WHERE a.outcome = 'succeeded'),
       count(*) FILTER (WHERE a.outcome <> 'succeeded')
FROM herald.attempts a
JOIN herald.endpoints e ON e.id = a.endpoint_id
WHERE a.endpoint_id = $1 AND e.tenant_id = $3 AND a.started_at >= $2
GROUP BY 1`

	deliveryColumns = `
d.id, d.message_id, d.endpoint_id, e.url, m.event_type, d.status, d.attempt_count,
coalesce(d.last_status_code, 0), coalesce(d.last_error, ''), d.next_attempt_at, m.created_at`

	selectRecentDeliveries = `
SELECT ` + deliveryColumns + `
FROM herald.deliveries d
JOIN herald.messages m ON m.id = d.message_id
JOIN herald.endpoints e ON e.id = d.endpoint_id
WHERE d.endpoint_id = $1 AND d.tenant_id = $2
ORDER BY d.created_at DESC, d.id DESC
LIMIT $3`

	// The message log: newest first, keyset-paged on (created_at, id).
	// Status and endpoint filters keep a message when one of its deliveries
	// matches.
	listMessages = `
SELECT m.id, m.event_type, m.object_id, m.object_version, m.created_at, m.dispatched_at IS NOT NULL
FROM herald.messages m
WHERE m.tenant_id = $1
  AND ($2::text = '' OR m.event_type = $2)
  AND ($3::text = '' AND $4::uuid IS NULL
       OR EXISTS (SELECT 1 FROM herald.deliveries d
                  WHERE d.message_id = m.id
                    AND ($3::text = '' OR d.status = $3)
                    AND ($4::uuid IS NULL OR d.endpoint_id = $4)))
  AND ($5::timestamptz IS NULL OR m.created_at >= $5)
  AND ($6::timestamptz IS NULL OR (m.created_at, m.id) < ($6, $7::uuid))
ORDER BY m.created_at DESC, m.id DESC
LIMIT $8`

	selectDeliveriesOfMessages = `
SELECT ` + deliveryColumns + `
FROM herald.deliveries d
JOIN herald.messages m ON m.id = d.message_id
JOIN herald.endpoints e ON e.id = d.endpoint_id
WHERE d.message_id = ANY($1) AND d.tenant_id = $2
ORDER BY e.created_at, e.id`

	selectEventTypesSeen = `
SELECT name FROM (
    SELECT DISTINCT event_type AS name FROM herald.messages
    WHERE tenant_id = $1 AND created_at > now() - interval '30 days'
    UNION
    SELECT name FROM herald.event_types
) t
ORDER BY name`

	selectDeliveryTarget = `SELECT message_id, endpoint_id FROM herald.deliveries WHERE id = $1 AND tenant_id = $2`

	selectEventTypeCatalogue = `SELECT name, description FROM herald.event_types ORDER BY name`

	selectMessage = `
SELECT m.id, m.event_type, m.object_id, m.object_version, m.created_at, m.dispatched_at IS NOT NULL, m.body
FROM herald.messages m
WHERE m.id = $1 AND m.tenant_id = $2`

	selectAttemptsOfMessage = `
SELECT a.id, a.delivery_id, a.attempt_number, a.trigger, a.started_at, a.duration_ms,
       coalesce(a.status_code, 0), coalesce(a.error, '')
FROM herald.attempts a
JOIN herald.deliveries d ON d.id = a.delivery_id
WHERE a.message_id = $1 AND d.tenant_id = $2
ORDER BY a.delivery_id, a.attempt_number, a.started_at`

	selectAttempt = `
SELECT a.id, a.delivery_id, a.message_id, a.endpoint_id, e.url, m.event_type, a.attempt_number,
       a.trigger, a.started_at, a.duration_ms, coalesce(a.status_code, 0), coalesce(a.error, ''),
       a.outcome, a.request_headers, a.response_excerpt
FROM herald.attempts a
JOIN herald.deliveries d ON d.id = a.delivery_id
JOIN herald.endpoints e ON e.id = a.endpoint_id
JOIN herald.messages m ON m.id = a.message_id
WHERE a.id = $1 AND d.tenant_id = $2`
)
