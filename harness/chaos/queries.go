package chaos

// The SQL of a run: the producer's and the consumer's own tables, and what
// the checks read from Herald's and the consumer's databases.
const (
	// The producer's table, in Herald's database: its objects and the
	// sequence number each event bumps.
	createProducerObjects = `CREATE TABLE producer_objects (
    id  text PRIMARY KEY,
    seq bigint NOT NULL DEFAULT 0
)`
	insertProducerObjects = `INSERT INTO producer_objects (id) SELECT unnest($1::text[])`
	bumpProducerObject    = `UPDATE producer_objects SET seq = seq + 1 WHERE id = $1 RETURNING seq`

	// The consumer's tables: a ledger row for every application of an
	// event, with no unique key so that a second application shows, and
	// the objects' state, updated only by newer versions.
	createConsumerTables = `CREATE TABLE IF NOT EXISTS ledger (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    webhook_id text NOT NULL,
    object_id  text NOT NULL,
    version    bigint NOT NULL,
    seq        bigint NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE TABLE IF NOT EXISTS objects (
    id      text PRIMARY KEY,
    version bigint NOT NULL,
    seq     bigint NOT NULL
)`
	insertLedger = `INSERT INTO ledger (webhook_id, object_id, version, seq) VALUES ($1, $2, $3, $4)`
	upsertObject = `INSERT INTO objects (id, version, seq) VALUES ($1, $2, $3)
ON CONFLICT (id) DO UPDATE SET version = excluded.version, seq = excluded.seq`

	// terminateBackends ends every other session on the databases $1.
	terminateBackends = `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
WHERE datname = ANY ($1) AND pid <> pg_backend_pid()`

	// Whether a run has settled.
	// sourceBacklog counts, in split mode, the producer's messages not
	// relayed yet.
	sourceBacklog = `SELECT count(*) FROM herald.outbox WHERE relayed_at IS NULL`
	// sourceTables lists the producer's database's tables, views and
	// sequences; sourceRefused counts its messages Herald refused, and
	// relayedMessages those Herald holds from it ($1, the source's name).
	sourceTables = `SELECT n.nspname || '.' || c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p', 'v', 'm', 'S') AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')
ORDER BY 1`
	sourceRefused   = `SELECT count(*) FROM herald.outbox WHERE refused IS NOT NULL`
	relayedMessages = `SELECT count(*) FROM herald.messages WHERE source = $1`
	heraldBacklog   = `SELECT
    (SELECT count(*) FROM herald.messages WHERE dispatched_at IS NULL),
    (SELECT count(*) FROM herald.deliveries WHERE status <> 'succeeded'),
    (SELECT count(*) FROM herald.replays WHERE status <> 'completed'),
    (SELECT count(*) FROM herald.deliveries)`
	// selectUnsettled describes each delivery not succeeded, with its
	// endpoint's state and every River job that names it.
	selectUnsettled = `SELECT format('delivery %s (message %s, endpoint %s enabled=%s) %s, attempts %s (%s before requeue), generation %s, next attempt %s, created %s, updated %s; jobs: %s',
    d.id, d.message_id, d.endpoint_id, e.enabled, d.status, d.attempt_count, d.attempts_before_requeue, d.generation,
    coalesce(d.next_attempt_at::text, 'none'), d.created_at, d.updated_at,
    coalesce((SELECT string_agg(format('%s %s %s attempt %s scheduled %s generation %s', j.id, j.kind, j.state, j.attempt, j.scheduled_at, coalesce(j.args->>'generation', '0')), '; ' ORDER BY j.id)
              FROM herald.river_job j
              WHERE j.args->>'delivery_id' = d.id::text OR j.args->'delivery_ids' ? d.id::text), 'none'))
FROM herald.deliveries d JOIN herald.endpoints e ON e.id = d.endpoint_id
WHERE d.status <> 'succeeded'
ORDER BY d.created_at
LIMIT 20`
	consumerBacklog = `SELECT count(*) FROM webhook_inbox.events WHERE processed_at IS NULL AND dead_at IS NULL`

	// The end state.
	selectMessages = `SELECT id, event_type, object_id, object_version, coalesce(idempotency_key, '') FROM herald.messages
WHERE tenant_id = $1`
	selectDeliveryStatuses = `SELECT status, count(*) FROM herald.deliveries GROUP BY status`
	// selectMiscountedDeliveries counts deliveries whose attempt count
	// differs from their attempt rows, or whose attempt numbers are not
	// 1, 2, … without gap or repeat.
	selectMiscountedDeliveries = `SELECT count(*) FROM herald.deliveries d
WHERE d.attempt_count <> (SELECT count(*) FROM herald.attempts a WHERE a.delivery_id = d.id)
   OR d.attempt_count <> (SELECT count(DISTINCT a.attempt_number) FROM herald.attempts a
                          WHERE a.delivery_id = d.id AND a.attempt_number BETWEEN 1 AND d.attempt_count)`
	selectAttempts = `SELECT message_id, coalesce(request_headers->>'webhook-timestamp', ''), started_at,
    outcome, coalesce(status_code, 0), coalesce(error, '')
FROM herald.attempts
ORDER BY started_at, attempt_number`
	// selectJobErrors lists the errors River recorded on delivery jobs of
	// the kinds $1, with the message of each delivery the job sends: one
	// for a delivery.Args job, several for a delivery.BatchArgs job.
	selectJobErrors = `SELECT d.message_id, (e->>'at')::timestamptz, coalesce(e->>'error', '')
FROM herald.river_job j
CROSS JOIN LATERAL (
    SELECT (j.args->>'delivery_id')::uuid AS id WHERE j.args ? 'delivery_id'
    UNION ALL
    SELECT jsonb_array_elements_text(j.args->'delivery_ids')::uuid
) sent
JOIN herald.deliveries d ON d.id = sent.id
CROSS JOIN LATERAL unnest(j.errors) AS e
WHERE j.kind = ANY($1)`
	// selectJobsOfMessages describes every delivery job of the kinds $2
	// that sends a delivery of the messages $1: one line per job, its
	// state, runs and errors, in the order the jobs were made. It names
	// every River client that ran the job, oldest first, so that a run
	// River kept no other trace of still shows.
	selectJobsOfMessages = `SELECT format('%s job %s (%s) %s, attempt %s, attempted %s, by [%s], finalized %s, errors [%s]',
    'msg_' || d.message_id, j.id, j.kind, j.state, j.attempt,
    to_char(j.attempted_at AT TIME ZONE 'UTC', 'HH24:MI:SS.MS'), array_to_string(j.attempted_by, ', '),
    coalesce(to_char(j.finalized_at AT TIME ZONE 'UTC', 'HH24:MI:SS.MS'), '-'),
    (SELECT string_agg(to_char((e->>'at')::timestamptz AT TIME ZONE 'UTC', 'HH24:MI:SS.MS') || ' ' || left(e->>'error', 80), ', ') FROM unnest(j.errors) AS e))
FROM herald.river_job j
CROSS JOIN LATERAL (
    SELECT (j.args->>'delivery_id')::uuid AS id WHERE j.args ? 'delivery_id'
    UNION ALL
    SELECT jsonb_array_elements_text(j.args->'delivery_ids')::uuid
) sent
JOIN herald.deliveries d ON d.id = sent.id
WHERE d.message_id = ANY($1) AND j.kind = ANY($2)
ORDER BY d.message_id, j.id`
	selectJobStates = `SELECT state::text, count(*) FROM herald.river_job WHERE kind = ANY($1) GROUP BY state`
	selectVersions  = `SELECT p.id, p.seq, coalesce(v.version, 0)
FROM producer_objects p
LEFT JOIN herald.object_versions v ON v.tenant_id = $1 AND v.object_id = p.id`

	selectLedger          = `SELECT webhook_id, count(*) FROM ledger GROUP BY webhook_id`
	selectConsumerObjects = `SELECT id, version, seq FROM objects`

	// lockWaitingJobs locks up to $2 delivery.Args jobs of endpoint $1
	// that wait for a retry and belong to their pending delivery's current
	// generation, skipping any River is fetching.
	lockWaitingJobs = `SELECT j.id, d.id, d.message_id, d.endpoint_id
FROM herald.river_job j
JOIN herald.deliveries d ON d.id = (j.args->>'delivery_id')::uuid
WHERE j.kind = 'herald.delivery' AND j.state IN ('scheduled', 'retryable')
  AND d.endpoint_id = $1 AND d.status = 'pending'
  AND coalesce((j.args->>'generation')::int, 0) = d.generation
ORDER BY j.id
LIMIT $2
FOR UPDATE OF j SKIP LOCKED`
	// selectResendable lists up to $2 pending deliveries of endpoint $1
	// whose current job is running (an attempt may be in flight) or waits
	// for a retry, the running ones first.
	selectResendable = `SELECT j.id, d.id, d.message_id, d.endpoint_id
FROM herald.river_job j
JOIN herald.deliveries d ON d.id = (j.args->>'delivery_id')::uuid
WHERE j.kind = 'herald.delivery' AND j.state IN ('running', 'scheduled', 'retryable')
  AND d.endpoint_id = $1 AND d.status = 'pending'
  AND coalesce((j.args->>'generation')::int, 0) = d.generation
ORDER BY j.state = 'running' DESC, j.id
LIMIT $2`
	// discardJob ends job $1 as River does after its last attempt, which
	// leaves its delivery pending.
	discardJob = `UPDATE herald.river_job SET state = 'discarded', finalized_at = now() WHERE id = $1`
	// selectJobsAfter counts the delivery jobs (kinds $3) of delivery $1
	// inserted after job $2 that completed: the reconciler's new job.
	selectJobsAfter = `SELECT count(*) FROM herald.river_job
WHERE kind = ANY($3) AND id > $2 AND state = 'completed'
  AND (args->>'delivery_id' = $1::text OR args->'delivery_ids' ? $1::text)`
	// selectDeliveryStatus is the status of message $1's delivery to endpoint
	// $2.
	selectDeliveryStatus = `SELECT status FROM herald.deliveries WHERE message_id = $1 AND endpoint_id = $2`
	// selectDeadLetterIDs lists the consumer's dead letters.
	selectDeadLetterIDs = `SELECT webhook_id, attempts FROM webhook_inbox.events WHERE dead_at IS NOT NULL ORDER BY webhook_id`
	// selectClientsAttempting lists the River clients that started a job
	// (of any kind: the reconciler's periodic job too) after $1 and
	// that is still running or has completed.
	selectClientsAttempting = `SELECT DISTINCT attempted_by[cardinality(attempted_by)] FROM herald.river_job
WHERE attempted_at > $1 AND cardinality(attempted_by) > 0
  AND (state = 'running' OR (state = 'completed' AND finalized_at > $1))`
	// selectNotSucceeded lists the messages of endpoint $1's deliveries
	// that were given up.
	selectNotSucceeded = `SELECT message_id FROM herald.deliveries WHERE endpoint_id = $1 AND status = 'failed'`
	// selectEndpointDeliveries counts endpoint $1's deliveries by status.
	selectEndpointDeliveries = `SELECT status, count(*) FROM herald.deliveries WHERE endpoint_id = $1 GROUP BY status`
	// countGoneAttempts counts the attempts to endpoint $1 that recorded
	// a 410 Gone.
	countGoneAttempts = `SELECT count(*) FROM herald.attempts a JOIN herald.deliveries d ON d.id = a.delivery_id
WHERE d.endpoint_id = $1 AND a.outcome = 'endpoint_gone'`
	// countEndedJobs counts the delivery jobs (kinds $1) River, or the
	// run, ended without completing them.
	countEndedJobs = `SELECT count(*) FROM herald.river_job WHERE kind = ANY($1) AND state IN ('discarded', 'cancelled')`
)
