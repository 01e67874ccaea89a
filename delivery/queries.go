package delivery

// The SQL of the delivery worker.
const (
	// loadDeliveries reads what attempts need, for many deliveries at once
	// (workers share the round trip; see internal/batcher). With each comes
	// the set of its endpoint's secrets active at $2, as their ids, and
	// when the first of them expires: the worker reuses secrets it read
	// while these are unchanged. The revision of its credentials
	// (endpoint_credentials, 0 for none) does the same for its transport
	// and token (see endpointClients). Then come what the in-flight caps
	// learn (see inflight): the tenant's own cap and the endpoint's
	// unanswered streak. Last come the endpoint's own headers, timeout and
	// retry policy (see endpointOptions). Last, for a delivery to an
	// ordered endpoint, what the gate needs (see gateOf): whether it is its
	// line's head, whether it waits in the line, and whether a lower
	// version of its object is not fanned out yet
	// (messages_undispatched_object); each a subquery with a LIMIT, which
	// Postgres runs as one index lookup per delivery, behind a CASE that
	// skips it for endpoints without ordering. (In a lateral join whose
	// condition was the ordering, the lookups ran for every delivery:
	// sql-publish's p50 went from 0.2 s to 3 s. As an EXISTS, the look into
	// ordered_waiting was planned, while the table was small, as a hash of
	// all of it, and the statement, prepared, kept that plan as the table
	// grew to the backlog.) The batch's span of ids prunes the partitions
	// of deliveries it cannot be in (see herald.least_id).
	loadDeliveries = `SELECT d.id, d.status, d.attempt_count, d.attempts_before_requeue, d.first_attempt_at, d.generation, d.next_attempt_at,
    d.message_id, m.body, m.traceparent, m.tenant_id, m.object_id, m.object_version,
    d.endpoint_id, e.url, e.enabled, coalesce(e.rate_limit, 0), e.ordering = 'object',
    coalesce(s.ids, ''), s.first_expiry, coalesce(c.revision, 0),
    coalesce(t.max_inflight, 0), e.unreachable_streak,
    e.headers, e.timeout_ms, e.retry_window_ms, e.retry_base_ms, e.retry_cap_ms,
    CASE WHEN e.ordering = 'object' THEN coalesce((SELECT l.head_delivery_id = d.id FROM herald.ordered_lines l
        WHERE l.endpoint_id = d.endpoint_id AND l.object_id = m.object_id), false) ELSE false END,
    CASE WHEN e.ordering = 'object' THEN (SELECT true FROM herald.ordered_waiting w
        WHERE w.delivery_id = d.id LIMIT 1) IS NOT NULL ELSE false END,
    CASE WHEN e.ordering = 'object' THEN (SELECT true FROM herald.messages lower
        WHERE lower.tenant_id = m.tenant_id AND lower.object_id = m.object_id
          AND lower.object_version < m.object_version AND lower.dispatched_at IS NULL LIMIT 1) IS NOT NULL ELSE false END
FROM herald.deliveries d
JOIN herald.messages m ON m.id = d.message_id
JOIN herald.endpoints e ON e.id = d.endpoint_id
JOIN herald.tenants t ON t.id = e.tenant_id
LEFT JOIN herald.endpoint_credentials c ON c.endpoint_id = e.id
LEFT JOIN LATERAL (
    SELECT string_agg(id::text, ',' ORDER BY id) AS ids, min(expires_at) AS first_expiry
    FROM herald.endpoint_secrets
    WHERE endpoint_id = e.id AND (expires_at IS NULL OR expires_at > $2)
) s ON true
WHERE d.id = ANY($1) AND d.id BETWEEN herald.least_id($1) AND herald.greatest_id($1)`

	// selectEndpointOptions reads an endpoint's custom headers, timeout and
	// retry policy, for a probe (loadDeliveries reads them with deliveries).
	selectEndpointOptions = `SELECT headers, timeout_ms, retry_window_ms, retry_base_ms, retry_cap_ms
FROM herald.endpoints WHERE id = $1`

	// earlierAttemptRunning tells whether a job other than $2 that may
	// have an attempt of one of the deliveries $1 (as text) in flight is
	// running: a delivery job of one of them (found through
	// river_job_live_delivery) or, when $3 (one of them may belong to a
	// batch job: see ownedByBatch), a batch job holding one (among the
	// running jobs, as many as there are workers, through River's fetching
	// index).
	earlierAttemptRunning = `SELECT EXISTS (
    SELECT FROM herald.river_job j
    WHERE j.args->>'delivery_id' = ANY($1::text[]) AND j.kind = '` + Kind + `' AND j.finalized_at IS NULL
      AND j.state = 'running' AND j.id <> $2
) OR ($3 AND EXISTS (
    SELECT FROM herald.river_job j
    WHERE j.state = 'running' AND j.kind = '` + BatchKind + `' AND j.id <> $2 AND j.args->'delivery_ids' ?| $1::text[]
))`

	// wakeHeldJobs makes up to $2 delivery jobs of the endpoint in $1 (a
	// JSON object {"endpoint_id": ...}, found through River's index on
	// args) available now at the default priority: those held back by the
	// in-flight caps (snoozed with herald_busy set; a job snoozed until a
	// retry has it cleared) and those waiting at a lower priority. River's
	// scheduler does the same when a snooze ends.
	wakeHeldJobs = `UPDATE herald.river_job SET state = 'available', scheduled_at = least(scheduled_at, now()), priority = 1
WHERE id IN (
    SELECT id FROM herald.river_job
    WHERE args @> $1::jsonb AND queue = '` + Queue + `'
      AND (state = 'scheduled' AND coalesce((metadata->>'` + busyMetadataKey + `')::int, 0) > 0
           OR state = 'available' AND priority > 1)
    ORDER BY scheduled_at, id
    LIMIT $2
    FOR UPDATE SKIP LOCKED)`

	// cancelDelivery stops a pending delivery of generation $3 whose
	// endpoint is disabled. A delivery requeued since its job loaded it (the
	// endpoint was enabled again meanwhile) is the requeue's job's.
	cancelDelivery = `UPDATE herald.deliveries
SET status = 'cancelled', next_attempt_at = NULL, completed_at = $2, updated_at = now()
WHERE id = $1 AND status = 'pending' AND generation = $3`

	// cancelDeliveries stops the pending deliveries $1 of a disabled
	// endpoint that still belong to their batch job of generation $3.
	//
	// It and handOff test the status with IS NOT DISTINCT FROM, which
	// for a status (never null) means =, but which the planner cannot
	// match with the predicate of the partial index of pending deliveries
	// (deliveries_pending). With status = 'pending' it read a partition's
	// partial index whole, its stats taken while few were pending, rather
	// than look the batch up by primary key; during a replay of 100,000
	// on the aged bench that index held thousands (selectStillQueued).
	cancelDeliveries = `UPDATE herald.deliveries
SET status = 'cancelled', next_attempt_at = NULL, completed_at = $2, updated_at = now()
WHERE id = ANY($1) AND id BETWEEN herald.least_id($1) AND herald.greatest_id($1)
  AND status IS NOT DISTINCT FROM 'pending' AND generation = $3`

	// handOff marks the deliveries $1 that still belong to their batch job
	// of generation $3 (not requeued since, not attempted since, no next
	// attempt set) as due at $2, which makes them the business of the jobs
	// inserted with them, and returns them.
	handOff = `UPDATE herald.deliveries
SET next_attempt_at = $2, updated_at = now()
WHERE id = ANY($1) AND id BETWEEN herald.least_id($1) AND herald.greatest_id($1)
  AND status IS NOT DISTINCT FROM 'pending' AND generation = $3 AND attempt_count = attempts_before_requeue
  AND next_attempt_at IS NULL
RETURNING id`

	// selectStillQueued returns each of the deliveries $1 and whether it is
	// still pending at generation $2. The test is in the select list, not
	// the WHERE clause: there, status = 'pending' let the planner read a
	// partition's partial index of pending deliveries whole (its stats
	// taken while few were pending) rather than look the batch up by
	// primary key; during a replay of 100,000 on the aged bench that
	// index held thousands, read for every batch job of 100, 0.1 to 0.4 s
	// each.
	selectStillQueued = `SELECT id, status = 'pending' AND generation = $2 FROM herald.deliveries
WHERE id = ANY($1) AND id BETWEEN herald.least_id($1) AND herald.greatest_id($1)`

	// reloadProgress reads what deciding an attempt's outcome depends on.
	reloadProgress = `SELECT status, attempt_count, attempts_before_requeue, first_attempt_at, generation
FROM herald.deliveries WHERE id = $1`

	// lookUpByIndex makes the statements after it in a transaction find
	// rows through indexes. A batch names up to maxRoundTrip deliveries by
	// id, but while the deliveries table is small (a new installation, or
	// the start of a burst) the planner prefers hashing the batch and
	// scanning the whole table, once per batch: sampling a burst showed the
	// recording statement as Postgres's busiest. An index lookup per
	// delivery is right at every size. Only statements that look rows up
	// may follow it: a scan no index serves is costed at 10^10, which also
	// has Postgres JIT-compile it (see insertAttempts).
	//
	// It and planOnce and inOneProcess are set_config(…, true), which is
	// SET LOCAL without its warning: loading sends them outside a
	// transaction block, in the implicit transaction of one round trip,
	// where SET LOCAL applies but has Postgres log a WARNING each time.
	lookUpByIndex = `SELECT set_config('enable_seqscan', 'off', true)`

	// lookUpAsUsual ends lookUpByIndex.
	lookUpAsUsual = `RESET enable_seqscan`

	// planOnce has loadDeliveries and recordAttempts run with the plan
	// Postgres made the first time on the connection. As prepared
	// statements they were planned afresh on every run: plans for the ids
	// given prune partitions when they are made, so the planner judged
	// them cheaper than the generic plan, and planning for every partition
	// of deliveries and messages cost more than running it (4.3 s of
	// planning against 4.0 s of execution over 30,000 deliveries in
	// `steady`; 3 to 5 ms against 1.2 ms a plan for 512 recordings on 35
	// partitions). A generic plan prunes the same partitions when it
	// starts (internal/historyplan checks both kinds of plan, with batches
	// of maxRoundTrip).
	planOnce = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true)`

	// planAsUsual ends planOnce.
	planAsUsual = `RESET plan_cache_mode`

	// inOneProcess keeps the statements after it in a transaction from
	// running in parallel workers. The generic plan of loadDeliveries,
	// which does not know how many ids it gets, was a parallel plan on a
	// database with 5,000,000 deliveries of history: each load started two
	// workers to look up a few dozen rows by primary key, 1.5 ms of work
	// behind 12 to 130 ms of starting them on a busy machine, and
	// steady-aged fell behind its 1,000 events/s (docs/benchmarks.md,
	// "The aged scenario").
	inOneProcess = `SELECT set_config('max_parallel_workers_per_gather', '0', true)`

	// recordAttempts records attempts and their outcomes in one
	// statement: for each row of its input (recordColumns, as arrays) the
	// delivery's new state and the attempt row. A delivery is updated only
	// if its status, attempt count and generation are still those its
	// outcome was decided on; otherwise nothing is written for it and no
	// attempt row is inserted, and the caller decides again (or, the
	// generation having moved on, gives up: see Args.Generation). It
	// returns the deliveries it recorded. What an outcome means for the
	// endpoint (a 410 disables it) is applied by the worker's Health in the
	// same transaction.
	//
	// The status a delivery must still have comes as a column of the input
	// ('pending' on every row of a batch), not as a constant: with a
	// constant the planner may read the partial index of all pending
	// deliveries, the whole backlog, for every batch.
	recordAttempts = `WITH input AS (
    SELECT * FROM unnest($1::uuid[], $2::text[], $3::integer[], $4::text[], $5::timestamptz[], $6::timestamptz[],
        $7::uuid[], $8::uuid[], $9::uuid[], $10::text[], $11::timestamptz[], $12::integer[], $13::text[],
        $14::integer[], $15::text[], $16::text[], $17::text[], $18::integer[])
        AS i(delivery_id, seen_status, seen_attempt_count, status, next_attempt_at, completed_at,
            attempt_id, message_id, endpoint_id, trigger, started_at, duration_ms, request_headers,
            status_code, problem, response_excerpt, outcome, seen_generation)
)` + recordUpdate + `
        AND d.id BETWEEN $19 AND $20` + recordRest

	// recordAttempt is recordAttempts for one attempt, its input one
	// parameter per column. Postgres plans a statement over unnest anew on
	// every call, since its row count depends on the arrays, and recording
	// one attempt that way took twice as long; this one is planned once.
	recordAttempt = `WITH input AS (
    SELECT $1::uuid AS delivery_id, $2::text AS seen_status, $3::integer AS seen_attempt_count,
        $4::text AS status, $5::timestamptz AS next_attempt_at, $6::timestamptz AS completed_at,
        $7::uuid AS attempt_id, $8::uuid AS message_id, $9::uuid AS endpoint_id, $10::text AS trigger,
        $11::timestamptz AS started_at, $12::integer AS duration_ms, $13::text AS request_headers,
        $14::integer AS status_code, $15::text AS problem, $16::text AS response_excerpt, $17::text AS outcome,
        $18::integer AS seen_generation
)` + recordUpdate + recordRest

	// recordUpdate and recordRest are what recordAttempts and
	// recordAttempt do with their input, with room between them for more
	// conditions on the deliveries updated. recordAttempts bounds them to
	// the span of its batch's ids ($19 and $20, the least and the
	// greatest), which prunes the partitions outside it when the statement
	// is planned for its arguments: without it, for a batch of a few
	// hundred the planner chose to merge the batch with every partition's
	// primary key read whole, a cost that grows with the history (80 ms
	// for 512 deliveries on 200,000 of history, 1 to 3 s on 5,000,000,
	// where `steady-aged` fell behind its 1,000 events/s). The bounds are
	// parameters rather than herald.least_id($1) and greatest_id($1): in
	// the generic plan (planOnce) the lookup of each delivery evaluated
	// those again, unnesting and sorting the whole batch each time, and the
	// statement ran 5 times slower. The attempts are counted per endpoint
	// and hour in endpoint_outcome_deltas in the same statement (migration
	// 0051).
	recordUpdate = `, delivery AS (
    UPDATE herald.deliveries d
    SET status = i.status, attempt_count = d.attempt_count + 1,
        first_attempt_at = coalesce(d.first_attempt_at, i.started_at),
        last_attempt_at = i.started_at, next_attempt_at = i.next_attempt_at,
        completed_at = CASE WHEN i.status = 'pending' THEN NULL ELSE coalesce(i.completed_at, d.completed_at) END,
        last_status_code = i.status_code, last_error = i.problem, updated_at = now()
    FROM input i
    WHERE d.id = i.delivery_id AND d.status = i.seen_status AND d.attempt_count = i.seen_attempt_count
        AND d.generation = i.seen_generation`
	recordRest = `
    RETURNING d.id, d.attempt_count
), attempted AS (
    INSERT INTO herald.attempts (id, delivery_id, message_id, endpoint_id, attempt_number, trigger, started_at,
        duration_ms, request_headers, status_code, error, response_excerpt, outcome)
    SELECT i.attempt_id, d.id, i.message_id, i.endpoint_id, d.attempt_count, i.trigger, i.started_at,
        i.duration_ms, i.request_headers::jsonb, i.status_code, i.problem, i.response_excerpt, i.outcome
    FROM delivery d JOIN input i ON i.delivery_id = d.id
    RETURNING delivery_id, endpoint_id, started_at, outcome
), counted AS (
    INSERT INTO herald.endpoint_outcome_deltas (endpoint_id, hour, succeeded, failed)
    SELECT a.endpoint_id, date_trunc('hour', a.started_at, 'UTC'),
        count(*) FILTER (WHERE a.outcome = 'succeeded'), count(*) FILTER (WHERE a.outcome <> 'succeeded')
    FROM attempted a
    GROUP BY 1, 2
)
SELECT delivery_id FROM attempted`

	// lockSettlingLines locks the lines (endpoint $2, object $3) whose
	// heads are the deliveries $1, in the order every writer of lines locks
	// them, before the transaction that settles those heads locks the
	// deliveries. Lines are found by primary key (migration 0048).
	lockSettlingLines = `SELECT FROM unnest($1::uuid[], $2::uuid[], $3::text[]) AS u(id, endpoint_id, object_id)
JOIN herald.ordered_lines l ON l.endpoint_id = u.endpoint_id AND l.object_id = u.object_id AND l.head_delivery_id = u.id
ORDER BY l.endpoint_id, l.object_id FOR UPDATE OF l`

	// settleLines takes the settled deliveries $1 (to endpoints $2, of
	// objects $3) out of their lines and returns the lines' next heads.
	settleLines = `SELECT * FROM herald.ordered_settle($1, $2, $3)`

	// joinLines puts the pending deliveries $1 in their lines (trigger $2,
	// preempting with $3) and returns the new heads.
	joinLines = `SELECT * FROM herald.ordered_join($1, $2, $3)`

	// lockLines locks the lines of the messages $2 to endpoint $1.
	lockLines = `SELECT herald.ordered_lock($1, $2)`

	// resumeLines gives the parked lines of endpoint $1 (only that of
	// object $2 unless it is NULL) their next heads and returns them.
	resumeLines = `SELECT * FROM herald.ordered_resume($1, $2)`

	// parkLine puts the head $4 (object $2, version $3) of endpoint $1 back
	// to waiting and leaves its line without a head.
	parkLine = `SELECT herald.ordered_park($1, $2, $3, $4)`

	endpointEnabled = `SELECT enabled FROM herald.endpoints WHERE id = $1`
)
