package erasure

// The SQL of erasures. Each batch deletes at most $2 rows that an index
// finds ($1 the endpoint or tenant); the ids go through ARRAY(…) so that
// the delete itself finds them through each partition's primary key
// rather than joining the whole table. docs/history-queries.md lists them.
const (
	erasureColumns = `id, tenant_id, endpoint_id, status, rows_deleted, started_at, updated_at, completed_at`

	selectErasure = `SELECT ` + erasureColumns + ` FROM herald.erasures WHERE id = $1`

	selectEndpointErasure = `SELECT ` + erasureColumns + ` FROM herald.erasures WHERE endpoint_id = $1 AND tenant_id = $2`

	// selectTenantErasure is the tenant's latest erasure: a tenant id may
	// be reused once its erasure completed.
	selectTenantErasure = `SELECT ` + erasureColumns + ` FROM herald.erasures
WHERE tenant_id = $1 AND endpoint_id IS NULL
ORDER BY started_at DESC LIMIT 1`

	insertErasure = `INSERT INTO herald.erasures (id, tenant_id, endpoint_id, started_at, updated_at)
VALUES ($1, $2, $3, $4, $4)
RETURNING ` + erasureColumns

	// lockEndpoint waits for the endpoint's other writers of its row
	// (health, a concurrent delete) and reads whether it is deleted.
	lockEndpoint = `SELECT deleted_at IS NOT NULL FROM herald.endpoints
WHERE id = $1 AND tenant_id = $2
FOR NO KEY UPDATE`

	// markEndpoints marks the endpoint $1, or every endpoint of the tenant
	// $2 when $1 is NULL, deleted and disabled: their queued jobs find them
	// disabled and send nothing.
	markEndpoints = `UPDATE herald.endpoints SET
    deleted_at = $3,
    disabled_reason = CASE WHEN enabled THEN 'deleted' ELSE disabled_reason END,
    disabled_at = CASE WHEN enabled THEN $3 ELSE disabled_at END,
    enabled = false,
    updated_at = now()
WHERE tenant_id = $2 AND ($1::uuid IS NULL OR id = $1) AND deleted_at IS NULL`

	// completeReplays stops the running replays of the endpoint $1, or of
	// every endpoint of the tenant $2 when $1 is NULL: a replay's job
	// stops at a replay that is not running.
	completeReplays = `UPDATE herald.replays SET status = 'completed', completed_at = now(), updated_at = now()
WHERE endpoint_id IN (SELECT e.id FROM herald.endpoints e WHERE e.tenant_id = $2 AND ($1::uuid IS NULL OR e.id = $1))
  AND status = 'running'`

	// lockTenant takes the row lock every publish's FOR KEY SHARE waits
	// for (herald.try_publish_many), so no publish that missed the mark is
	// still running once it is set.
	lockTenant = `SELECT deleted_at IS NOT NULL FROM herald.tenants WHERE id = $1 FOR UPDATE`

	markTenant = `UPDATE herald.tenants SET deleted_at = $2, updated_at = now() WHERE id = $1`

	// deleteTenantCredentials deletes the tenant's keys, portal links and
	// sessions at once (the keys made by its keys go with them): nobody
	// acts for a tenant being erased. The key caches hear of it through
	// herald_api_keys.
	deleteTenantCredentials = `WITH keys AS (
    DELETE FROM herald.api_keys WHERE tenant_id = $1
), links AS (
    DELETE FROM herald.portal_links WHERE tenant_id = $1
)
DELETE FROM herald.portal_sessions WHERE tenant_id = $1`
)

// The steps of the job.
const (
	selectJobErasure = `SELECT tenant_id, endpoint_id, status FROM herald.erasures WHERE id = $1`

	addProgress = `UPDATE herald.erasures SET rows_deleted = rows_deleted + $2, updated_at = now() WHERE id = $1`

	completeErasure = `UPDATE herald.erasures SET status = 'completed', completed_at = now(), updated_at = now()
WHERE id = $1 AND status = 'running'`

	// nextEndpoint is the next endpoint a tenant's erasure erases.
	nextEndpoint = `SELECT id FROM herald.endpoints WHERE tenant_id = $1 ORDER BY created_at, id LIMIT 1`

	// inBatch and inSpanOfBatch follow a column of the history's
	// partition key: its value is one of the ids of the statement's batch
	// (a CTE with one row, ids), and it lies within their span
	// (herald.least_id, greatest_id of the array, evaluated once).
	// Postgres prunes no partition by an array, and each batch of
	// DefaultBatchSize ids was looked up in every partition, 35 at the
	// default retention; the span prunes the others as the statement runs.
	inBatch       = ` = ANY ((SELECT ids FROM batch)::uuid[])`
	inSpanOfBatch = ` BETWEEN herald.least_id((SELECT ids FROM batch)) AND herald.greatest_id((SELECT ids FROM batch))`

	// deleteAttempts: attempts_endpoint_started, then attempts_pkey.
	deleteAttempts = `WITH batch AS (SELECT ARRAY(
    SELECT a.id FROM herald.attempts a WHERE a.endpoint_id = $1 LIMIT $2) AS ids)
DELETE FROM herald.attempts WHERE id` + inBatch + `
  AND id` + inSpanOfBatch

	// deleteReplayDeliveries: the endpoint's replays (replays_endpoint_created),
	// then replay_deliveries_pkey, within the span of the batch's delivery
	// ids (the table is partitioned by them). A replay records its
	// endpoint's deliveries only.
	deleteReplayDeliveries = `WITH replays AS (SELECT ARRAY(SELECT r.id FROM herald.replays r WHERE r.endpoint_id = $1) AS ids),
batch AS (SELECT ARRAY(
    SELECT x.delivery_id FROM herald.replay_deliveries x
    WHERE x.replay_id = ANY ((SELECT ids FROM replays)::uuid[])
    LIMIT $2) AS ids)
DELETE FROM herald.replay_deliveries rd
WHERE rd.replay_id = ANY ((SELECT ids FROM replays)::uuid[])
  AND rd.delivery_id` + inBatch + `
  AND rd.delivery_id` + inSpanOfBatch

	// deleteDeliveries: deliveries_endpoint_created, then deliveries_pkey.
	deleteDeliveries = `WITH batch AS (SELECT ARRAY(
    SELECT d.id FROM herald.deliveries d WHERE d.endpoint_id = $1 LIMIT $2) AS ids)
DELETE FROM herald.deliveries WHERE id` + inBatch + `
  AND id` + inSpanOfBatch

	// deleteEndpoint deletes the endpoint once its history is gone; its
	// secrets, rate limit, replays, receiver checks and ordered lines go
	// with it. While a row of history still refers to it, the foreign key
	// refuses (23503).
	deleteEndpoint = `DELETE FROM herald.endpoints WHERE id = $1`

	// deleteMessages: messages_tenant_created, then messages_pkey.
	deleteMessages = `WITH batch AS (SELECT ARRAY(
    SELECT m.id FROM herald.messages m WHERE m.tenant_id = $1 LIMIT $2) AS ids)
DELETE FROM herald.messages WHERE id` + inBatch + `
  AND id` + inSpanOfBatch

	// deleteObjectVersions, deletePublishKeys, deleteIdempotencyRecords:
	// their primary keys, which start with the tenant.
	deleteObjectVersions = `DELETE FROM herald.object_versions WHERE tenant_id = $1 AND object_id = ANY (ARRAY(
    SELECT o.object_id FROM herald.object_versions o WHERE o.tenant_id = $1 LIMIT $2))`

	deletePublishKeys = `DELETE FROM herald.publish_idempotency_keys WHERE tenant_id = $1 AND idempotency_key = ANY (ARRAY(
    SELECT k.idempotency_key FROM herald.publish_idempotency_keys k WHERE k.tenant_id = $1 LIMIT $2))`

	deleteIdempotencyRecords = `DELETE FROM herald.idempotency_records WHERE tenant_id = $1 AND key = ANY (ARRAY(
    SELECT r.key FROM herald.idempotency_records r WHERE r.tenant_id = $1 LIMIT $2))`

	// deleteTenant deletes the tenant once its endpoints and history are
	// gone; its replays, rate limits and receiver checks go with it.
	deleteTenant = `DELETE FROM herald.tenants WHERE id = $1`
)
