package receiver

// Every SQL statement of the package. Tables live in the schema named by
// Schema; see migrations/ for their definitions.
const (
	// Migrate.
	takeMigrationLock  = `SELECT pg_advisory_xact_lock($1)`
	createSchema       = `CREATE SCHEMA IF NOT EXISTS webhook_inbox`
	createVersionTable = `CREATE TABLE IF NOT EXISTS webhook_inbox.schema_migrations (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)`
	selectMigrationVersions = `SELECT version FROM webhook_inbox.schema_migrations`
	insertMigrationVersion  = `INSERT INTO webhook_inbox.schema_migrations (version, name) VALUES ($1, $2)`

	// Handler: store a verified event; a second copy of it changes nothing.
	insertEvent = `INSERT INTO webhook_inbox.events (source, webhook_id, type, object_id, object_version, payload)
VALUES ($1, $2, $3, NULLIF($4::text, ''), NULLIF($5::bigint, 0), $6)
ON CONFLICT (source, webhook_id) DO NOTHING`

	// Worker: find due events; rows another worker holds are skipped. A due
	// event with a lease_expires_at is one whose lease lapsed.
	selectDueEvents = `SELECT id, source, webhook_id, attempts, lease_expires_at IS NOT NULL, leased_alone
FROM webhook_inbox.events
WHERE processed_at IS NULL AND dead_at IS NULL AND next_attempt_at <= now()
ORDER BY next_attempt_at, id
LIMIT $1
FOR UPDATE SKIP LOCKED`
	// leaseEvents leases $1 for $2 seconds, alone when $3, and counts the
	// attempt. The attempt charged for a lapsed lease held with other
	// events is taken back ($4 is the last_error of a lapsed lease held alone).
	leaseEvents = `UPDATE webhook_inbox.events
SET leases = leases + 1,
    attempts = CASE WHEN lease_expires_at IS NOT NULL AND NOT leased_alone THEN attempts ELSE attempts + 1 END,
    last_error = CASE WHEN lease_expires_at IS NOT NULL AND leased_alone THEN $4 ELSE last_error END,
    lease_expires_at = now() + make_interval(secs => $2),
    next_attempt_at = now() + make_interval(secs => $2),
    leased_alone = $3
WHERE id = ANY($1)
RETURNING id, source, webhook_id, coalesce(object_id, ''), coalesce(object_version, 0), payload, received_at, attempts, leases`
	// deadLetterLapsed ends the events $1, whose lease lapsed on their last
	// attempt, with the error $2.
	deadLetterLapsed = `UPDATE webhook_inbox.events
SET dead_at = clock_timestamp(), last_error = $2, lease_expires_at = NULL, leased_alone = false
WHERE id = ANY($1)`
	// markProcessed is the first statement of an event's transaction: it
	// takes the row lock, so no other worker claims the event while it is
	// applied, and affects no row when lease $2 is no longer the event's.
	// The attempt the lease counted succeeded: it is taken back.
	markProcessed = `UPDATE webhook_inbox.events
SET processed_at = clock_timestamp(), attempts = attempts - 1, lease_expires_at = NULL, leased_alone = false
WHERE id = $1 AND leases = $2 AND processed_at IS NULL AND dead_at IS NULL`
	// recordFailure ends lease $2 with a failed attempt, which the lease
	// already counted; $5 makes the row a dead letter.
	recordFailure = `UPDATE webhook_inbox.events
SET last_error = $3,
    next_attempt_at = clock_timestamp() + make_interval(secs => $4),
    dead_at = CASE WHEN $5 THEN clock_timestamp() END,
    lease_expires_at = NULL,
    leased_alone = false
WHERE id = $1 AND leases = $2 AND processed_at IS NULL AND dead_at IS NULL`
	// releaseLeases ends the leases ($1 events, $2 their lease numbers) of
	// events a stopping worker did not apply: due now, the attempt taken back.
	releaseLeases = `UPDATE webhook_inbox.events AS e
SET attempts = e.attempts - 1, lease_expires_at = NULL, leased_alone = false, next_attempt_at = now()
FROM unnest($1::bigint[], $2::integer[]) AS l(id, lease)
WHERE e.id = l.id AND e.leases = l.lease AND e.processed_at IS NULL AND e.dead_at IS NULL`

	// Dead letters.
	selectDeadLetters = `SELECT id, source, webhook_id, payload, received_at, attempts, coalesce(last_error, ''), dead_at
FROM webhook_inbox.events
WHERE dead_at IS NOT NULL
ORDER BY dead_at DESC, id DESC
LIMIT $1`
	redriveDeadLetter = `UPDATE webhook_inbox.events
SET attempts = 0, dead_at = NULL, next_attempt_at = now()
WHERE source = $1 AND webhook_id = $2 AND dead_at IS NOT NULL`
	redriveAllDeadLetters = `UPDATE webhook_inbox.events
SET attempts = 0, dead_at = NULL, next_attempt_at = now()
WHERE dead_at IS NOT NULL`

	// Claim.
	insertClaim = `INSERT INTO webhook_inbox.claims (source, webhook_id) VALUES ($1, $2)
ON CONFLICT (source, webhook_id) DO NOTHING`

	// ApplyIfNewer: the row lock of ON CONFLICT DO UPDATE orders concurrent
	// callers; a row comes back only when this version was stored.
	upsertObjectVersion = `INSERT INTO webhook_inbox.object_versions AS v (source, object_id, version)
VALUES ($1, $2, $3)
ON CONFLICT (source, object_id) DO UPDATE
SET version = excluded.version, updated_at = now()
WHERE v.version < excluded.version
RETURNING true`

	// Prune: delete in bounded batches so no statement holds locks for long.
	pruneEvents = `DELETE FROM webhook_inbox.events
WHERE id IN (
    SELECT id FROM webhook_inbox.events
    WHERE processed_at IS NOT NULL AND received_at < now() - make_interval(secs => $1)
    LIMIT $2
)`
	pruneClaims = `DELETE FROM webhook_inbox.claims
WHERE (source, webhook_id) IN (
    SELECT source, webhook_id FROM webhook_inbox.claims
    WHERE claimed_at < now() - make_interval(secs => $1)
    LIMIT $2
)`
)
