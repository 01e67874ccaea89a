package receivercheck

// The SQL of receiver checks.
const (
	lockEndpoint = `
SELECT enabled, now() FROM herald.endpoints WHERE id = $1 AND tenant_id = $2 FOR UPDATE`

	// latestCheck and oldCheck use receiver_checks_endpoint_created.
	latestCheck = `
SELECT created_at FROM herald.receiver_checks WHERE endpoint_id = $1
ORDER BY created_at DESC LIMIT 1`

	firstCheck = `
SELECT created_at FROM herald.receiver_checks WHERE endpoint_id = $1
ORDER BY created_at LIMIT 1`

	// oldCheck is the first event of the newest check made at $2 or
	// before.
	oldCheck = `
SELECT m.id, m.object_id, m.object_version, m.created_at
FROM herald.receiver_checks c JOIN herald.messages m ON m.id = c.first_message_id
WHERE c.endpoint_id = $1 AND c.created_at <= $2
ORDER BY c.created_at DESC LIMIT 1`

	insertCheck = `
INSERT INTO herald.receiver_checks (id, tenant_id, endpoint_id, first_message_id, steps, created_at)
VALUES ($1, $2, $3, $4, $5, $6)`

	selectCheck = `
SELECT id, tenant_id, endpoint_id, status, steps, created_at, completed_at
FROM herald.receiver_checks WHERE id = $1 AND tenant_id = $2 AND endpoint_id = $3`

	// selectWork is what a job needs: the check's steps and where to send.
	selectWork = `
SELECT c.endpoint_id, c.status, c.steps, e.url, e.enabled
FROM herald.receiver_checks c JOIN herald.endpoints e ON e.id = c.endpoint_id
WHERE c.id = $1`

	selectBodies = `SELECT id, body FROM herald.messages WHERE id = ANY($1)`

	saveSteps = `UPDATE herald.receiver_checks SET steps = $2 WHERE id = $1`

	completeCheck = `
UPDATE herald.receiver_checks SET steps = $2, status = 'completed', completed_at = now() WHERE id = $1`
)
