package deliverylog

// The SQL of the delivery log. $1 is always the tenant whose log is read.
const (
	messageColumns = `m.id, m.tenant_id, m.event_type, m.object_id, m.object_version,
  m.idempotency_key, m.created_at, m.dispatched_at`

	// messageCounts counts m's deliveries by status, through the
	// (message_id, endpoint_id) key.
	messageCounts = `(SELECT coalesce(jsonb_object_agg(status, n), '{}') FROM (
     SELECT d.status, count(*) AS n FROM herald.deliveries d WHERE d.message_id = m.id GROUP BY d.status) AS counts)`

	// messageFilter keeps a tenant's messages, optionally of one event
	// type, with a delivery in a status and/or to an endpoint, and created
	// in [since, until), older than the cursor. It walks
	// messages_tenant_created backwards from the cursor; the delivery
	// filter looks each message's deliveries up by key.
	messageFilter = `
FROM herald.messages m
WHERE m.tenant_id = $1
  AND ($2::text IS NULL OR m.event_type = $2)
  AND (($3::text IS NULL AND $4::uuid IS NULL) OR EXISTS (
        SELECT 1 FROM herald.deliveries d
        WHERE d.message_id = m.id
          AND ($3::text IS NULL OR d.status = $3)
          AND ($4::uuid IS NULL OR d.endpoint_id = $4)))
  AND ($5::timestamptz IS NULL OR m.created_at >= $5)
  AND ($6::timestamptz IS NULL OR m.created_at < $6)
  AND ($7::timestamptz IS NULL OR (m.created_at, m.id) < ($7, $8::uuid))
ORDER BY m.created_at DESC, m.id DESC
LIMIT $9`

	listMessages = `SELECT ` + messageColumns + `, m.body, ` + messageCounts + messageFilter

	listMessageSummaries = `SELECT ` + messageColumns + messageFilter

	// selectMessage reads one message by primary key.
	selectMessage = `
SELECT ` + messageColumns + `, m.body, ` + messageCounts + `
FROM herald.messages m
WHERE m.tenant_id = $1 AND m.id = $2`

	deliveryColumns = `d.id, d.message_id, d.endpoint_id, d.status, d.attempt_count, d.first_attempt_at,
  d.last_attempt_at, d.next_attempt_at, d.completed_at, d.last_status_code, d.last_error, d.created_at`

	// listDeliveries reads a message's deliveries through the
	// (message_id, endpoint_id) key.
	listDeliveries = `
SELECT ` + deliveryColumns + ` FROM herald.deliveries d
WHERE d.tenant_id = $1 AND d.message_id = $2
ORDER BY d.created_at, d.id`

	// listedDeliveryJoins adds a delivery's endpoint and message, each by
	// primary key.
	listedDeliveryJoins = `, e.url, m.event_type, m.created_at
FROM herald.deliveries d
JOIN herald.messages m ON m.id = d.message_id
JOIN herald.endpoints e ON e.id = d.endpoint_id`

	// listDeliveriesOfMessages reads the messages' deliveries through the
	// (message_id, endpoint_id) key.
	listDeliveriesOfMessages = `
SELECT ` + deliveryColumns + listedDeliveryJoins + `
WHERE d.tenant_id = $1 AND d.message_id = ANY($2)
ORDER BY e.created_at, e.id`

	// listRecentDeliveries walks deliveries_endpoint_created backwards.
	listRecentDeliveries = `
SELECT ` + deliveryColumns + listedDeliveryJoins + `
WHERE d.tenant_id = $1 AND d.endpoint_id = $2
ORDER BY d.created_at DESC, d.id DESC
LIMIT $3`

	// selectDelivery reads one delivery by primary key.
	selectDelivery = `
SELECT ` + deliveryColumns + ` FROM herald.deliveries d
WHERE d.tenant_id = $1 AND d.id = $2`

	attemptSummaryColumns = `a.id, a.delivery_id, a.message_id, a.endpoint_id, a.attempt_number, a.trigger, a.started_at,
  a.duration_ms, a.status_code, a.error, a.outcome`

	attemptColumns = attemptSummaryColumns + `, a.request_headers, a.response_excerpt`

	// attemptPage keeps attempts that started in [$3, $4), older than the
	// cursor ($5, $6), newest first, at most $7.
	attemptPage = `
  AND ($3::timestamptz IS NULL OR a.started_at >= $3)
  AND ($4::timestamptz IS NULL OR a.started_at < $4)
  AND ($5::timestamptz IS NULL OR (a.started_at, a.id) < ($5, $6::uuid))
ORDER BY a.started_at DESC, a.id DESC
LIMIT $7`

	// attempts has no index on message_id: a message's attempts are found
	// through its deliveries (the (message_id, endpoint_id) key), then each
	// delivery's through attempts_delivery. An attempt's message is its
	// delivery's.
	messageAttempts = `
FROM herald.attempts a
JOIN herald.deliveries d ON d.id = a.delivery_id
WHERE d.tenant_id = $1 AND d.message_id = $2`

	listMessageAttempts = `
SELECT ` + attemptColumns + messageAttempts + attemptPage

	// listEndpointAttempts walks attempts_endpoint_started backwards; the
	// tenant check runs once, before it.
	listEndpointAttempts = `
SELECT ` + attemptColumns + `
FROM herald.attempts a
WHERE a.endpoint_id = $2
  AND EXISTS (SELECT 1 FROM herald.endpoints e WHERE e.id = $2 AND e.tenant_id = $1)` + attemptPage

	listAttemptsByDelivery = `
SELECT ` + attemptSummaryColumns + messageAttempts + `
ORDER BY a.delivery_id, a.attempt_number, a.started_at`

	// selectAttempt reads one attempt by primary key, with its delivery,
	// endpoint and message by theirs.
	selectAttempt = `
SELECT ` + attemptColumns + `, e.url, m.event_type
FROM herald.attempts a
JOIN herald.deliveries d ON d.id = a.delivery_id
JOIN herald.endpoints e ON e.id = a.endpoint_id
JOIN herald.messages m ON m.id = a.message_id
WHERE d.tenant_id = $1 AND a.id = $2`
)
