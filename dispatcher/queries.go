package dispatcher

// The SQL of the fan-out.
const (
	// claimMessages takes up to $1 undispatched messages that no other
	// dispatcher holds, marks them dispatched (effective when the
	// transaction commits) and returns each with every endpoint of its
	// tenant subscribed to its type, enabled or not; a message without any
	// comes back once with a NULL endpoint. Rows come message by message,
	// so the jobs, fetched in insertion order, alternate between endpoints
	// instead of queueing one endpoint's deliveries behind each other.
	claimMessages = `WITH claimed AS (
    SELECT id, tenant_id, event_type, created_at
    FROM herald.messages
    WHERE dispatched_at IS NULL
    ORDER BY created_at, id
    LIMIT $1
    FOR UPDATE SKIP LOCKED
), dispatched AS (
    UPDATE herald.messages m SET dispatched_at = now()
    FROM claimed c
    WHERE m.id = c.id
)
SELECT c.id, c.tenant_id, e.id, coalesce(e.enabled, false)
FROM claimed c
LEFT JOIN herald.endpoints e
    ON e.tenant_id = c.tenant_id
   AND (cardinality(e.event_types) = 0 OR c.event_type = ANY (e.event_types))
ORDER BY c.created_at, c.id, e.id`

	// insertDeliveries inserts one delivery per (message, endpoint) pair
	// and returns the ones it inserted: a pair that already has a delivery
	// is left alone, so a re-run never creates a second one.
	insertDeliveries = `INSERT INTO herald.deliveries (id, message_id, endpoint_id, tenant_id, status)
SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::text[])
ON CONFLICT (message_id, endpoint_id) DO NOTHING
RETURNING id, endpoint_id, status`
)
