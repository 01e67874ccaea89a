package api

const (
	tenantExists = `SELECT EXISTS (SELECT 1 FROM herald.tenants WHERE id = $1 AND deleted_at IS NULL)`

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
	endpointOfTenant = `SELECT EXISTS (SELECT 1 FROM herald.endpoints WHERE id = $1 AND tenant_id = $2 AND deleted_at IS NULL)`

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
