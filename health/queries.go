package health

// The SQL of endpoint health.
const (
	// claimExpiringCertificates marks at most $3 client certificates that
	// lapse before $2 and were not warned of as warned at $1, and returns
	// them with their endpoints, through the partial index of the ones
	// not warned of (migration 0040). SKIP LOCKED: two dispatchers checking
	// at once warn of each certificate once.
	claimExpiringCertificates = `WITH due AS (
    SELECT c.endpoint_id FROM herald.endpoint_credentials c
    WHERE c.tls_not_after IS NOT NULL AND c.tls_expiry_warned_at IS NULL AND c.tls_not_after < $2
    ORDER BY c.tls_not_after LIMIT $3
    FOR UPDATE SKIP LOCKED
)
UPDATE herald.endpoint_credentials c SET tls_expiry_warned_at = $1
FROM due, herald.endpoints e
WHERE c.endpoint_id = due.endpoint_id AND e.id = c.endpoint_id
RETURNING e.id, e.tenant_id, e.url, e.description, coalesce(c.tls_subject, ''), c.tls_not_after, e.deleted_at IS NOT NULL`

	selectState = `SELECT tenant_id, url, description, enabled, failing_since, failing_notified_at, last_success_at,
    unreachable_streak
FROM herald.endpoints WHERE id = $1`

	selectStateForUpdate = selectState + ` FOR NO KEY UPDATE`

	recordSuccess = `UPDATE herald.endpoints
SET failing_since = NULL, failing_notified_at = NULL, unreachable_streak = 0, breaker_opened_at = NULL,
    last_success_at = greatest(last_success_at, $2), updated_at = now()
WHERE id = $1`

	// recordFailure starts the endpoint's failing spell at $2 unless one
	// runs, and moves its breaker: an attempt that got no answer ($3) adds
	// one to unreachable_streak and opens the breaker at $4 in a row; an
	// answer, even an error, ends the streak and closes the breaker.
	recordFailure = `UPDATE herald.endpoints
SET failing_since = coalesce(failing_since, $2),
    unreachable_streak = CASE WHEN $3 THEN unreachable_streak + 1 ELSE 0 END,
    breaker_opened_at = CASE WHEN NOT $3 THEN NULL
                             WHEN unreachable_streak + 1 >= $4 THEN coalesce(breaker_opened_at, $2)
                             ELSE breaker_opened_at END,
    updated_at = now()
WHERE id = $1`

	markWarned = `UPDATE herald.endpoints
SET failing_notified_at = $2, updated_at = now()
WHERE id = $1`

	disableEndpoint = `UPDATE herald.endpoints
SET enabled = false, disabled_reason = $2, disabled_at = $3, updated_at = now()
WHERE id = $1 AND enabled
RETURNING tenant_id, url, description, failing_since, last_success_at`

	// cancelPendingDeliveries runs after disableEndpoint: the queued jobs of
	// the cancelled deliveries find them not pending and send nothing. A
	// delivery whose attempt is being recorded right now is locked by that
	// transaction, which waits for this one's endpoint lock; it is skipped
	// rather than waited for (that would deadlock), and its job cancels it
	// when it next wakes and finds the endpoint disabled. An endpoint with
	// ordering "object" keeps its pending deliveries: disabling holds its
	// lines, and enabling resumes them (see delivery.ResumeLines).
	cancelPendingDeliveries = `UPDATE herald.deliveries
SET status = 'cancelled', next_attempt_at = NULL, completed_at = $2, updated_at = now()
WHERE id IN (
    SELECT d.id FROM herald.deliveries d
    WHERE d.endpoint_id = $1 AND d.status = 'pending'
      AND NOT EXISTS (SELECT FROM herald.endpoints e WHERE e.id = $1 AND e.ordering = 'object')
    FOR UPDATE OF d SKIP LOCKED
)`

	selectExhausted = `SELECT d.message_id, m.event_type, d.attempt_count, d.first_attempt_at, d.last_attempt_at,
    d.last_status_code, d.last_error, e.id, e.tenant_id, e.url, e.description
FROM herald.deliveries d
JOIN herald.messages m ON m.id = d.message_id
JOIN herald.endpoints e ON e.id = d.endpoint_id
WHERE d.id = $1`

	ensureOpsTenant = `INSERT INTO herald.tenants (id, name) VALUES ($1, 'Herald operational events')
ON CONFLICT (id) DO NOTHING`
)
