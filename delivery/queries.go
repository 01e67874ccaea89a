package delivery

// The SQL of the delivery worker.
const (
	// loadDeliveries reads what attempts need, for many deliveries at once
	// (workers share the round trip; see internal/batcher). With each comes
	// the set of its endpoint's secrets active at $2, as their ids, and
	// when the first of them expires: the worker reuses secrets it read
	// while these are unchanged.
	loadDeliveries = `SELECT d.id, d.status, d.attempt_count, d.first_attempt_at, d.next_attempt_at,
    d.message_id, m.body, d.endpoint_id, e.url, e.enabled, coalesce(e.rate_limit, 0),
    coalesce(s.ids, ''), s.first_expiry
FROM herald.deliveries d
JOIN herald.messages m ON m.id = d.message_id
JOIN herald.endpoints e ON e.id = d.endpoint_id
LEFT JOIN LATERAL (
    SELECT string_agg(id::text, ',' ORDER BY id) AS ids, min(expires_at) AS first_expiry
    FROM herald.endpoint_secrets
    WHERE endpoint_id = e.id AND (expires_at IS NULL OR expires_at > $2)
) s ON true
WHERE d.id = ANY($1)`

	// cancelDelivery stops a pending delivery whose endpoint is disabled.
	cancelDelivery = `UPDATE herald.deliveries
SET status = 'cancelled', next_attempt_at = NULL, completed_at = $2, updated_at = now()
WHERE id = $1 AND status = 'pending'`

	// cancelDeliveries stops the pending deliveries $1 of a disabled
	// endpoint.
	cancelDeliveries = `UPDATE herald.deliveries
SET status = 'cancelled', next_attempt_at = NULL, completed_at = $2, updated_at = now()
WHERE id = ANY($1) AND status = 'pending'`

	// handOff marks the deliveries $1 that still belong to their batch job
	// (never attempted, no next attempt set) as due at $2, which makes them
	// the business of the jobs inserted with them, and returns them.
	handOff = `UPDATE herald.deliveries
SET next_attempt_at = $2, updated_at = now()
WHERE id = ANY($1) AND status = 'pending' AND attempt_count = 0 AND next_attempt_at IS NULL
RETURNING id`

	// reloadProgress reads what deciding an attempt's outcome depends on.
	reloadProgress = `SELECT status, attempt_count, first_attempt_at FROM herald.deliveries WHERE id = $1`

	// recordAttempt records one attempt and its outcome in one statement:
	// the delivery's new state and the attempt row. The delivery is updated
	// only if its status and attempt count are still those the outcome was
	// decided on; otherwise nothing is written and no row is inserted, and
	// the caller decides again. What the outcome means for the endpoint (a
	// 410 disables it) is applied by the worker's Health in the same
	// transaction.
	recordAttempt = `WITH delivery AS (
    UPDATE herald.deliveries
    SET status = @status, attempt_count = attempt_count + 1,
        first_attempt_at = coalesce(first_attempt_at, @started_at),
        last_attempt_at = @started_at, next_attempt_at = @next_attempt_at,
        completed_at = CASE WHEN @status = 'pending' THEN NULL ELSE coalesce(@completed_at, completed_at) END,
        last_status_code = @status_code, last_error = @problem, updated_at = now()
    WHERE id = @delivery_id AND status = @seen_status AND attempt_count = @seen_attempt_count
    RETURNING id, attempt_count
)
INSERT INTO herald.attempts (id, delivery_id, message_id, endpoint_id, attempt_number, trigger, started_at,
    duration_ms, request_headers, status_code, error, response_excerpt, outcome)
SELECT @attempt_id::uuid, d.id, @message_id::uuid, @endpoint_id::uuid, d.attempt_count, @trigger::text,
    @started_at::timestamptz, @duration_ms::integer, @request_headers::jsonb, @status_code::integer,
    @problem::text, @response_excerpt::text, @outcome::text
FROM delivery d`

	// lookUpByIndex makes the rest of the transaction find rows through
	// indexes. A batch of successes names up to maxRoundTrip deliveries by
	// id, but while the deliveries table is small (a new installation, or
	// the start of a burst) the planner prefers hashing the batch and
	// scanning the whole table, once per batch: sampling a burst showed the
	// recording statement as Postgres's busiest. An index lookup per
	// delivery is right at every size.
	lookUpByIndex = `SET LOCAL enable_seqscan = off`

	// recordSuccesses records many successful attempts in one statement:
	// like recordAttempt for the Succeeded outcome, for each delivery still
	// pending at the attempt count its attempt was decided on. It returns
	// the deliveries it recorded; the others changed meanwhile and are
	// recorded one by one.
	//
	// The status a delivery must still have comes as a column of the input
	// ('pending' on every row), not as a constant: with a constant the
	// planner may read the partial index of all pending deliveries, the
	// whole backlog, for every batch.
	recordSuccesses = `WITH input AS (
    SELECT * FROM unnest($1::uuid[], $2::text[], $3::integer[], $4::timestamptz[], $5::timestamptz[],
        $6::integer[], $7::integer[], $8::uuid[], $9::uuid[], $10::uuid[], $11::text[], $12::text[], $13::text[])
        AS i(delivery_id, seen_status, seen_attempt_count, started_at, ended_at, duration_ms,
            status_code, attempt_id, message_id, endpoint_id, trigger, request_headers, response_excerpt)
), delivery AS (
    UPDATE herald.deliveries d
    SET status = 'succeeded', attempt_count = d.attempt_count + 1,
        first_attempt_at = coalesce(d.first_attempt_at, i.started_at),
        last_attempt_at = i.started_at, next_attempt_at = NULL, completed_at = i.ended_at,
        last_status_code = i.status_code, last_error = NULL, updated_at = now()
    FROM input i
    WHERE d.id = i.delivery_id AND d.status = i.seen_status AND d.attempt_count = i.seen_attempt_count
    RETURNING d.id, d.attempt_count
)
INSERT INTO herald.attempts (id, delivery_id, message_id, endpoint_id, attempt_number, trigger, started_at,
    duration_ms, request_headers, status_code, error, response_excerpt, outcome)
SELECT i.attempt_id, d.id, i.message_id, i.endpoint_id, d.attempt_count, i.trigger, i.started_at,
    i.duration_ms, i.request_headers::jsonb, i.status_code, NULL, i.response_excerpt, $14
FROM delivery d JOIN input i ON i.delivery_id = d.id
RETURNING delivery_id`
)
