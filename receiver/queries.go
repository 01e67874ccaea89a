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

	// Worker: claim due events; rows another worker holds are skipped.
	claimEvents = `SELECT id, source, webhook_id, coalesce(object_id, ''), coalesce(object_version, 0), payload, received_at, attempts
FROM webhook_inbox.events
WHERE processed_at IS NULL AND dead_at IS NULL AND next_attempt_at <= now()
ORDER BY next_attempt_at, id
LIMIT $1
FOR UPDATE SKIP LOCKED`
	markProcessed = `UPDATE webhook_inbox.events SET processed_at = clock_timestamp() WHERE id = $1`
	// recordFailure counts a failed attempt; $4 makes the row a dead letter.
	recordFailure = `UPDATE webhook_inbox.events
SET attempts = attempts + 1,
    last_error = $2,
    next_attempt_at = clock_timestamp() + make_interval(secs => $3),
    dead_at = CASE WHEN $4 THEN clock_timestamp() END
WHERE id = $1`

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
