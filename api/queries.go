package api

const (
	tenantExists = `SELECT EXISTS (SELECT 1 FROM herald.tenants WHERE id = $1)`

	listEventTypes = `
SELECT name, description, created_at, updated_at FROM herald.event_types
WHERE $1::timestamptz IS NULL OR (created_at, name) < ($1, $2::text)
ORDER BY created_at DESC, name DESC
LIMIT $3`

	insertEventType = `
INSERT INTO herald.event_types (name, description) VALUES ($1, $2)
RETURNING name, description, created_at, updated_at`

	selectEventType = `
SELECT name, description, created_at, updated_at FROM herald.event_types WHERE name = $1`

	updateEventType = `
UPDATE herald.event_types SET description = $2, updated_at = now() WHERE name = $1
RETURNING name, description, created_at, updated_at`

	deleteEventType = `
DELETE FROM herald.event_types WHERE name = $1
RETURNING name, description, created_at, updated_at`
)

const (
	endpointOfTenant = `SELECT EXISTS (SELECT 1 FROM herald.endpoints WHERE id = $1 AND tenant_id = $2)`

	messageColumns = `m.id, m.tenant_id, m.event_type, m.object_id, m.object_version, m.body,
  m.idempotency_key, m.created_at, m.dispatched_at,
  (SELECT coalesce(jsonb_object_agg(status, n), '{}') FROM (
     SELECT d.status, count(*) AS n FROM herald.deliveries d WHERE d.message_id = m.id GROUP BY d.status) AS counts)`

	// listMessages filters by tenant, then optionally by event type, by a
	// delivery's status and/or endpoint, and by creation time, newest first.
	listMessages = `
SELECT ` + messageColumns + `
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

	selectMessage = `
SELECT ` + messageColumns + `
FROM herald.messages m
WHERE m.tenant_id = $1 AND m.id = $2`

	deliveryColumns = `id, message_id, endpoint_id, status, attempt_count, first_attempt_at,
  last_attempt_at, next_attempt_at, completed_at, last_status_code, last_error, created_at`

	listMessageDeliveries = `
SELECT ` + deliveryColumns + ` FROM herald.deliveries
WHERE message_id = $1
ORDER BY created_at, id`

	attemptColumns = `id, delivery_id, message_id, endpoint_id, attempt_number, trigger, started_at,
  duration_ms, request_headers, status_code, error, response_excerpt, outcome`

	listMessageAttempts = `
SELECT ` + attemptColumns + ` FROM herald.attempts
WHERE message_id = $1
  AND ($2::timestamptz IS NULL OR started_at >= $2)
  AND ($3::timestamptz IS NULL OR started_at < $3)
  AND ($4::timestamptz IS NULL OR (started_at, id) < ($4, $5::uuid))
ORDER BY started_at DESC, id DESC
LIMIT $6`

	listEndpointAttempts = `
SELECT ` + attemptColumns + ` FROM herald.attempts
WHERE endpoint_id = $1
  AND ($2::timestamptz IS NULL OR started_at >= $2)
  AND ($3::timestamptz IS NULL OR started_at < $3)
  AND ($4::timestamptz IS NULL OR (started_at, id) < ($4, $5::uuid))
ORDER BY started_at DESC, id DESC
LIMIT $6`

	// endpointAttemptSeries buckets attempts from $2 on, every $4 seconds.
	endpointAttemptSeries = `
SELECT date_bin(make_interval(secs => $4), started_at, $2) AS bucket, outcome, count(*)
FROM herald.attempts
WHERE endpoint_id = $1 AND started_at >= $2 AND started_at < $3
GROUP BY bucket, outcome
ORDER BY bucket, outcome`

	endpointDeliveryCounts = `
SELECT coalesce(jsonb_object_agg(status, n), '{}') FROM (
  SELECT status, count(*) AS n FROM herald.deliveries
  WHERE endpoint_id = $1 AND created_at >= $2 AND created_at < $3
  GROUP BY status) AS counts`
)

const (
	// claimIdempotencyKey inserts a placeholder that the publish fills in
	// before committing; status_code 0 is never seen by a repeat, which
	// waits for the commit.
	claimIdempotencyKey = `
INSERT INTO herald.idempotency_records (tenant_id, key, request_hash, status_code, response_body)
VALUES ($1, $2, $3, 0, '')
ON CONFLICT (tenant_id, key) DO NOTHING`

	storeIdempotentResponse = `
UPDATE herald.idempotency_records SET status_code = $3, response_body = $4
WHERE tenant_id = $1 AND key = $2`

	pruneIdempotencyRecords = `
DELETE FROM herald.idempotency_records WHERE created_at < now() - make_interval(secs => $1)`

	selectIdempotencyRecord = `
SELECT request_hash, status_code, response_body FROM herald.idempotency_records
WHERE tenant_id = $1 AND key = $2`
)
