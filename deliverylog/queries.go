package deliverylog

// The SQL of the delivery log. $1 is always the tenant whose log is read.
//
// A lookup of a message's deliveries or attempts by message_id also names
// the range of ids that holds them, herald.history_lower(id) to
// history_upper(id) (migration 0046): the planner then reads the one
// partition of that range, where message_id alone would probe the index of
// every partition (35 at the default retention).
const (
	messageColumns = `m.id, m.tenant_id, m.event_type, m.object_id, m.object_version,
  m.idempotency_key, m.created_at, m.dispatched_at, m.channels`

	// messageCounts counts m's deliveries by status, through the
	// (message_id, endpoint_id) key of m's partition.
	messageCounts = `(SELECT coalesce(jsonb_object_agg(status, n), '{}') FROM (
     SELECT d.status, count(*) AS n FROM herald.deliveries d
     WHERE d.message_id = m.id AND d.id >= herald.history_lower(m.id) AND d.id < herald.history_upper(m.id)
     GROUP BY d.status) AS counts)`

	// messageWalk is the walk of a message list: up to $10 (ScanBudget) of
	// the tenant's messages created in [since, until) ($5, $6; NULL leaves
	// that end open), older than the cursor ($7, $8), newest first, along
	// messages_tenant_created. The open ends and the missing cursor are
	// coalesced rather than tested for NULL, so that a generic plan too
	// has them as index conditions.
	messageWalk = `
SELECT m.* FROM herald.messages m
WHERE m.tenant_id = $1
  AND m.created_at >= coalesce($5::timestamptz, '-infinity')
  AND m.created_at < coalesce($6::timestamptz, 'infinity')
  AND (m.created_at, m.id) < (coalesce($7::timestamptz, 'infinity'), coalesce($8::uuid, 'ffffffff-ffff-ffff-ffff-ffffffffffff'))
ORDER BY m.created_at DESC, m.id DESC
LIMIT $10`

	// messageFilter keeps the walked messages of one event type ($2), with
	// a delivery in a status ($3) and/or to an endpoint ($4), at most $9
	// of them: the delivery filter is one lookup by the (message_id,
	// endpoint_id) key per walked message. It is a lateral join, not
	// EXISTS, which the planner may turn into one hashed scan of every
	// delivery of that status or endpoint.
	messageFilter = `
FROM (` + messageWalk + `) m
LEFT JOIN LATERAL (
    SELECT true AS hit FROM herald.deliveries d
    WHERE d.message_id = m.id AND d.id >= herald.history_lower(m.id) AND d.id < herald.history_upper(m.id)
      AND ($3::text IS NULL OR d.status = $3)
      AND ($4::uuid IS NULL OR d.endpoint_id = $4)
    LIMIT 1) f ON $3::text IS NOT NULL OR $4::uuid IS NOT NULL
WHERE ($2::text IS NULL OR m.event_type = $2)
  AND (($3::text IS NULL AND $4::uuid IS NULL) OR f.hit)
ORDER BY m.created_at DESC, m.id DESC
LIMIT $9`

	// walkEnd is the last message the walk of a list (messageWalk, here
	// with parameters of its own: tenant, since, until, cursor, budget)
	// reads: the ($6)th, if there are that many.
	walkEnd = `
SELECT m.created_at, m.id FROM herald.messages m
WHERE m.tenant_id = $1
  AND m.created_at >= coalesce($2::timestamptz, '-infinity')
  AND m.created_at < coalesce($3::timestamptz, 'infinity')
  AND (m.created_at, m.id) < (coalesce($4::timestamptz, 'infinity'), coalesce($5::uuid, 'ffffffff-ffff-ffff-ffff-ffffffffffff'))
ORDER BY m.created_at DESC, m.id DESC
OFFSET $6 - 1 LIMIT 1`

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
	// (message_id, endpoint_id) key of its partition.
	listDeliveries = `
SELECT ` + deliveryColumns + ` FROM herald.deliveries d
WHERE d.tenant_id = $1 AND d.message_id = $2
  AND d.id >= herald.history_lower($2) AND d.id < herald.history_upper($2)
ORDER BY d.created_at, d.id`

	// listedDeliveryJoins adds a delivery's endpoint and message, each by
	// primary key.
	listedDeliveryJoins = `, e.url, m.event_type, m.created_at
FROM herald.deliveries d
JOIN herald.messages m ON m.id = d.message_id
JOIN herald.endpoints e ON e.id = d.endpoint_id`

	// listDeliveriesOfMessages reads the messages' deliveries through the
	// (message_id, endpoint_id) key of each one's partition. The lookup is
	// a CTE of its own: joined with messages in one query, the planner may
	// look the deliveries up by the message rows instead of by x, and then
	// applies x's bounds after probing every partition.
	listDeliveriesOfMessages = `
WITH d AS MATERIALIZED (
    SELECT d.* FROM unnest($2::uuid[]) AS x(id)
    JOIN herald.deliveries d ON d.message_id = x.id AND d.id >= herald.history_lower(x.id) AND d.id < herald.history_upper(x.id)
    WHERE d.tenant_id = $1)
SELECT ` + deliveryColumns + `, e.url, m.event_type, m.created_at
FROM d
JOIN herald.messages m ON m.id = d.message_id
JOIN herald.endpoints e ON e.id = d.endpoint_id
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
	// cursor ($5, $6), newest first, at most $7; coalesced as in
	// messageWalk.
	attemptPage = `
  AND a.started_at >= coalesce($3::timestamptz, '-infinity')
  AND a.started_at < coalesce($4::timestamptz, 'infinity')
  AND (a.started_at, a.id) < (coalesce($5::timestamptz, 'infinity'), coalesce($6::uuid, 'ffffffff-ffff-ffff-ffff-ffffffffffff'))
ORDER BY a.started_at DESC, a.id DESC
LIMIT $7`

	// messageAttempts finds a message's attempts through attempts_message
	// of its partition; the tenant check is the message's, by primary key.
	messageAttempts = `
FROM herald.attempts a
WHERE a.message_id = $2 AND a.id >= herald.history_lower($2) AND a.id < herald.history_upper($2)
  AND EXISTS (SELECT 1 FROM herald.messages m WHERE m.id = $2 AND m.tenant_id = $1)`

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
