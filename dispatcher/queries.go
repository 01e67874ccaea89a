package dispatcher

import "github.com/heraldhq/herald/delivery"

// The SQL of the fan-out and the clock check.
const (
	// notifyJobsInserted wakes every dispatcher's River producer for the
	// delivery queue when the fan-out's transaction commits, on the channel
	// and with the payload River's own insert notifications use ($1,
	// riverInsertChannel; $2, riverInsertPayload). River sends its own at
	// most once per FetchCooldown per client, decided at insert, not at
	// commit: the jobs of a fan-out that committed just after the fetch its
	// notification caused would otherwise wait for the next poll
	// (JobPollInterval). The payload is River's to the byte, so that when
	// River did notify in the same transaction Postgres delivers the two as
	// one and producers fetch once.
	notifyJobsInserted = `SELECT pg_notify($1, $2)`

	// claimMessages takes up to $1 undispatched messages that no other
	// dispatcher holds, the tenants with a backlog in turn, marks them
	// dispatched (effective when the transaction commits) and returns each
	// with every endpoint of its tenant that subscribes to its type and its
	// channels (an endpoint without channels takes every message; one with
	// channels those that carry one of them), enabled or not (but not one
	// being erased: package erasure); a message without any comes back once
	// with a NULL endpoint, and whether the endpoint is ordered (ordering
	// "object"). Each row carries its message's traceparent, for the
	// fan-out's span in the producer's trace, the endpoint's filter (NULL
	// for none), which the fan-out evaluates on the body, and whether more
	// messages wait (more). The body comes once per message, on its first
	// row, and only when one of its endpoints has a filter: a fan-out
	// without filters reads no bodies.
	//
	// In turn: the tenants with undispatched messages are found by a skip
	// scan of messages_undispatched_tenant (one index probe per tenant, at
	// most $1 tenants, in id order), and each gives at most its share of
	// the claim, its oldest first: $1 divided among them, and no more
	// messages than make its share of $2 deliveries at one delivery per
	// endpoint of the tenant (tenants.endpoint_count: an upper bound, as
	// types, channels and filters only take endpoints away), at least one.
	// A tenant that published a flood therefore takes its share of each
	// claim, not the whole claim, and the others' messages are fanned out
	// beside its backlog instead of after it; a tenant with many endpoints
	// takes its share in deliveries, not in messages, so that its wide
	// fan-out does not make the transaction that carries the others'
	// messages long. Within a tenant messages keep their order. A claim
	// may take less than $1 while a tenant has more than its share (others
	// had less); more then says to claim again.
	//
	// Rows come turn by turn, message by message, so the jobs, fetched in
	// insertion order, alternate between tenants and endpoints instead of
	// queueing one endpoint's deliveries behind each other.
	claimMessages = `WITH RECURSIVE backlog (tenant_id, n) AS (
    (SELECT tenant_id, 1 FROM herald.messages
     WHERE dispatched_at IS NULL ORDER BY tenant_id LIMIT 1)
    UNION ALL
    SELECT (SELECT m.tenant_id FROM herald.messages m
            WHERE m.dispatched_at IS NULL AND m.tenant_id > b.tenant_id
            ORDER BY m.tenant_id LIMIT 1), b.n + 1
    FROM backlog b
    WHERE b.tenant_id IS NOT NULL AND b.n < $1
), share AS (
    SELECT greatest(1, ceil($1::numeric / nullif(count(*), 0)))::integer AS n, count(*) AS tenants, count(*) = $1 AS more_tenants
    FROM backlog WHERE tenant_id IS NOT NULL
), shares AS (
    SELECT b.tenant_id,
        greatest(1, least(s.n, floor($2::numeric / (s.tenants * greatest(t.endpoint_count, 1)))))::integer AS n
    FROM backlog b
    CROSS JOIN share s
    JOIN herald.tenants t ON t.id = b.tenant_id
), candidates AS (
    SELECT c.*, row_number() OVER (PARTITION BY c.tenant_id ORDER BY c.created_at, c.id) AS turn, sh.n AS share
    FROM shares sh
    CROSS JOIN LATERAL (
        SELECT m.id, m.tenant_id, m.event_type, m.created_at, m.traceparent, m.channels, m.body
        FROM herald.messages m
        WHERE m.dispatched_at IS NULL AND m.tenant_id = sh.tenant_id
        ORDER BY m.created_at, m.id
        LIMIT sh.n + 1
        FOR UPDATE SKIP LOCKED
    ) c
), claimed AS (
    SELECT c.id, c.tenant_id, c.event_type, c.created_at, c.traceparent, c.channels, c.body, c.turn
    FROM candidates c
    WHERE c.turn <= c.share
    ORDER BY c.turn, c.created_at, c.id
    LIMIT $1
), dispatched AS (
    UPDATE herald.messages m SET dispatched_at = now()
    FROM claimed c
    WHERE m.id = c.id
)
SELECT c.id, c.tenant_id, c.traceparent, e.id, coalesce(e.enabled, false), coalesce(e.ordering = 'object', false), e.filter,
    CASE WHEN bool_or(e.filter IS NOT NULL) OVER message AND row_number() OVER (message ORDER BY e.id) = 1 THEN c.body END,
    (SELECT s.more_tenants FROM share s) OR (SELECT count(*) FROM candidates) > (SELECT count(*) FROM claimed)
FROM claimed c
LEFT JOIN herald.endpoints e
    ON e.tenant_id = c.tenant_id
   AND e.deleted_at IS NULL
   AND (cardinality(e.event_types) = 0 OR c.event_type = ANY (e.event_types))
   AND (cardinality(e.channels) = 0 OR e.channels && c.channels)
WINDOW message AS (PARTITION BY c.id)
ORDER BY c.turn, c.created_at, c.id, e.id`

	// insertDeliveries inserts one delivery per (message, endpoint) pair
	// and returns the ones it inserted: a pair that already has a delivery
	// is left alone, so a re-run never creates a second one. The pair is
	// unique in each partition of deliveries, where all of a message's
	// deliveries are (migrations/0024_history_partitions.sql); ON CONFLICT
	// without a target arbitrates on the partition's unique indexes.
	insertDeliveries = `INSERT INTO herald.deliveries (id, message_id, endpoint_id, tenant_id, status)
SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::text[])
ON CONFLICT DO NOTHING
RETURNING id, endpoint_id, status`

	// selectClock reads Postgres's clock as it runs the statement (now()
	// would be its transaction's start).
	selectClock = `SELECT clock_timestamp()`
)

// The SQL of the reconciler (see reconcile.go). The job kinds are spliced in
// as literals, not passed as parameters: Postgres uses the partial index
// river_job_live_delivery (migrations/0013_reconciler.sql) only for a query
// whose WHERE names its kind, and a generic plan knows no parameter's value.
const (
	// readCursor returns where the last pass got to and the database's
	// time, which this pass reaches at most.
	readCursor = `SELECT examined_until, now() FROM herald.reconciler`

	// advanceCursor records that every delivery job that ended before $1
	// has been examined; it never moves back, so a slower pass running
	// alongside does not undo a faster one.
	advanceCursor = `UPDATE herald.reconciler SET examined_until = greatest(examined_until, $1)`

	// endedDeliveryJobs returns up to $3 delivery jobs that ended without
	// completing (cancelled or discarded) after ($1, $2) in (finalized_at,
	// id) order, with their args. One ordered scan of River's index on
	// (state, finalized_at) per state, merged: a scan of both states at
	// once would read and sort every match to return the first $3.
	endedDeliveryJobs = `SELECT id, finalized_at, kind, args FROM (
    (SELECT j.id, j.finalized_at, j.kind, j.args FROM herald.river_job j
     WHERE j.state = 'cancelled' AND j.finalized_at >= $1 AND (j.finalized_at, j.id) > ($1, $2)` + deliveryKinds + `
     ORDER BY j.finalized_at, j.id LIMIT $3)
    UNION ALL
    (SELECT j.id, j.finalized_at, j.kind, j.args FROM herald.river_job j
     WHERE j.state = 'discarded' AND j.finalized_at >= $1 AND (j.finalized_at, j.id) > ($1, $2)` + deliveryKinds + `
     ORDER BY j.finalized_at, j.id LIMIT $3)
) ended
ORDER BY finalized_at, id
LIMIT $3`

	deliveryKinds = `
       AND j.kind IN ('` + delivery.Kind + `', '` + delivery.BatchKind + `')`

	// strandedDeliveries returns those of the deliveries $1 that are
	// pending with no live delivery job of their generation (see
	// river_job_live_delivery), in id order, with their endpoints and
	// generations. A delivery waiting in its ordered line behind the head
	// has no job by rule (see delivery.JoinLines): it is not stranded, and
	// gets its job when it becomes the head. Most of a step's deliveries
	// are settled (their jobs ended); it and lockPending look them up by
	// primary key and test the status with IS NOT DISTINCT FROM (=, for a
	// status that is never null), which the planner cannot match with the
	// predicate of deliveries_pending: with = it read the partial index of
	// each partition of the step's span whole, the whole backlog of a
	// replay or of a dead endpoint, for every step (see
	// delivery.cancelDeliveries).
	strandedDeliveries = `SELECT d.id, d.endpoint_id, d.generation
FROM herald.deliveries d
WHERE d.id = ANY($1) AND d.id BETWEEN herald.least_id($1) AND herald.greatest_id($1)
  AND d.status IS NOT DISTINCT FROM 'pending'
  AND NOT EXISTS (SELECT FROM herald.ordered_waiting w WHERE w.delivery_id = d.id)
  AND NOT EXISTS (
      SELECT FROM herald.river_job j
      WHERE j.args->>'delivery_id' = d.id::text
        AND j.kind = '` + delivery.Kind + `' AND j.finalized_at IS NULL
        AND coalesce((j.args->>'generation')::int, 0) = d.generation)
ORDER BY d.id`

	// lockPending locks those of the deliveries $1 that are pending, in id
	// order as every writer of deliveries does.
	lockPending = `SELECT id FROM herald.deliveries
WHERE id = ANY($1) AND id BETWEEN herald.least_id($1) AND herald.greatest_id($1)
  AND status IS NOT DISTINCT FROM 'pending'
ORDER BY id FOR UPDATE`

	// takeOver makes the deliveries $1 the business of the jobs inserted
	// with them, as a batch job's hand-off does: a delivery still waiting
	// for its first attempt in a batch job (no next_attempt_at) is due now,
	// so that no batch job sends it too.
	takeOver = `UPDATE herald.deliveries
SET next_attempt_at = coalesce(next_attempt_at, now()), updated_at = now()
WHERE id = ANY($1) AND id BETWEEN herald.least_id($1) AND herald.greatest_id($1)`
)
