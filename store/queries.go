package store

// Tenants.
const (
	tenantColumns = `id, name, max_endpoints, rate_limits, retention, max_inflight, endpoint_count, created_at, updated_at`

	insertTenant = `INSERT INTO herald.tenants (id, name) VALUES ($1, $2)
ON CONFLICT (id) DO NOTHING
RETURNING ` + tenantColumns

	// tenantDeleted tells a taken id's tenant being erased (package
	// erasure) from a live one.
	tenantDeleted = `SELECT deleted_at IS NOT NULL FROM herald.tenants WHERE id = $1`

	// A tenant or endpoint being erased (deleted_at set, package erasure)
	// is not found by any query of the store.
	selectTenant = `SELECT ` + tenantColumns + ` FROM herald.tenants WHERE id = $1 AND deleted_at IS NULL`

	listTenants = `SELECT ` + tenantColumns + ` FROM herald.tenants
WHERE id > $1 AND deleted_at IS NULL ORDER BY id LIMIT $2`

	// updateTenant sets the name unless $2 is NULL; the own endpoint cap
	// to $3 unless it is NULL, or back to the default when it is negative;
	// and, of the own rate limits, removes the actions $4 and sets those of
	// the object $5; the own retention to $6 unless it is NULL, or
	// back to the global one when it is negative; and the own in-flight
	// cap to $7 unless it is NULL, or back to the default when it is
	// negative.
	updateTenant = `UPDATE herald.tenants SET
    name = coalesce($2, name),
    max_endpoints = CASE WHEN $3::integer IS NULL THEN max_endpoints WHEN $3 < 0 THEN NULL ELSE $3 END,
    rate_limits = (rate_limits - $4::text[]) || $5::jsonb,
    retention = CASE WHEN $6::interval IS NULL THEN retention WHEN $6 <= interval '0' THEN NULL ELSE $6 END,
    max_inflight = CASE WHEN $7::integer IS NULL THEN max_inflight WHEN $7 < 0 THEN NULL ELSE $7 END,
    updated_at = now()
WHERE id = $1 AND deleted_at IS NULL
RETURNING ` + tenantColumns

	tenantExists = `SELECT EXISTS (SELECT 1 FROM herald.tenants WHERE id = $1 AND deleted_at IS NULL)`
)

// Endpoint credentials (endpoint_auth.go): one row per endpoint that ever
// had any, in herald.endpoint_credentials.
const (
	// lockCredentials locks the endpoint's row (so that two changes of its
	// credentials apply one after the other) and reads its credentials.
	lockCredentials = `SELECT c.auth_sealed, c.tls_sealed, c.ca_bundle
FROM herald.endpoints e LEFT JOIN herald.endpoint_credentials c ON c.endpoint_id = e.id
WHERE e.id = $1 AND e.deleted_at IS NULL
FOR NO KEY UPDATE OF e`

	// upsertCredentials writes every column and grows the revision; a new
	// certificate ($7 differs) clears the expiry warning.
	upsertCredentials = `INSERT INTO herald.endpoint_credentials AS c
    (endpoint_id, auth_type, auth_public, auth_sealed, tls_sealed, tls_subject, tls_not_after, ca_bundle)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (endpoint_id) DO UPDATE SET
    auth_type = EXCLUDED.auth_type, auth_public = EXCLUDED.auth_public, auth_sealed = EXCLUDED.auth_sealed,
    tls_sealed = EXCLUDED.tls_sealed, tls_subject = EXCLUDED.tls_subject, tls_not_after = EXCLUDED.tls_not_after,
    ca_bundle = EXCLUDED.ca_bundle,
    tls_expiry_warned_at = CASE WHEN c.tls_not_after IS NOT DISTINCT FROM EXCLUDED.tls_not_after THEN c.tls_expiry_warned_at END,
    revision = c.revision + 1, updated_at = now()`

	// selectCredentials reads an endpoint's credentials, sealed.
	selectCredentials = `SELECT c.revision, c.auth_sealed, c.tls_sealed, c.ca_bundle
FROM herald.endpoint_credentials c JOIN herald.endpoints e ON e.id = c.endpoint_id
WHERE c.endpoint_id = $1 AND e.deleted_at IS NULL`

	// describeCredentials reads what the API shows of the credentials of
	// the endpoints $1: nothing sealed.
	describeCredentials = `SELECT endpoint_id, auth_public, tls_sealed IS NOT NULL, tls_subject, tls_not_after, ca_bundle
FROM herald.endpoint_credentials
WHERE endpoint_id = ANY($1) AND (auth_type IS NOT NULL OR tls_sealed IS NOT NULL OR ca_bundle IS NOT NULL)`
)

// Endpoints. NULLs come back as zero values where Endpoint has no pointer.
const (
	endpointColumns = `id, tenant_id, url, description, event_types, coalesce(rate_limit, 0), ordering, enabled,
coalesce(disabled_reason, ''), disabled_at, failing_since, last_success_at, unreachable_streak, breaker_opened_at,
created_at, updated_at, channels, coalesce(filter, ''), headers, timeout_ms, retry_window_ms, retry_base_ms, retry_cap_ms`

	// insertEndpoint creates the endpoint and its first secret in one
	// statement, and nothing when the tenant does not exist or has as many
	// endpoints as its own cap, or else the default $10 (NULL: no cap),
	// allows, so a caller's transaction is never aborted by either. The
	// tenant's row is locked first and its endpoint_count (kept by a
	// trigger) compared: a creation waiting for the lock sees the count
	// the one before it committed, whichever replica made it (READ
	// COMMITTED re-reads a row locked after a wait; a REPEATABLE READ
	// transaction fails with a serialization error instead).
	insertEndpoint = `WITH tenant AS (
    SELECT id FROM herald.tenants
    WHERE id = $2 AND deleted_at IS NULL AND (coalesce(max_endpoints, $10::integer) IS NULL OR endpoint_count < coalesce(max_endpoints, $10::integer))
    FOR NO KEY UPDATE
), endpoint AS (
    INSERT INTO herald.endpoints (id, tenant_id, url, description, event_types, rate_limit, ordering, channels, filter,
        headers, timeout_ms, retry_window_ms, retry_base_ms, retry_cap_ms)
    SELECT $1, tenant.id, $3, $4, $5, nullif($6::double precision, 0), $11, $12, nullif($13, ''),
        $14, $15, $16, $17, $18 FROM tenant
    RETURNING *
), secret AS (
    INSERT INTO herald.endpoint_secrets (id, endpoint_id, algorithm, ciphertext)
    SELECT $7, id, $8, $9 FROM endpoint
)
SELECT ` + endpointColumns + ` FROM endpoint`

	// selectEndpointCap explains a refused creation: the tenant's endpoint
	// count, its cap (own, or else the default $2) and whether the cap is
	// its own (-1: none, which a refusal cannot have). No row: the tenant
	// does not exist.
	selectEndpointCap = `SELECT endpoint_count, coalesce(max_endpoints, $2::integer, -1), max_endpoints IS NOT NULL
FROM herald.tenants WHERE id = $1 AND deleted_at IS NULL`

	selectEndpoint = `SELECT ` + endpointColumns + ` FROM herald.endpoints WHERE id = $1 AND deleted_at IS NULL`

	listEndpoints = `SELECT ` + endpointColumns + ` FROM herald.endpoints
WHERE tenant_id = $1 AND id > $2 AND deleted_at IS NULL ORDER BY id LIMIT $3`

	// updateEndpoint changes the fields whose parameter is not NULL; a
	// rate limit of 0 removes the limit, an empty filter the filter. The
	// timeout ($10) and the retry policy ($12 to $14, each NULL for the
	// default) are replaced when $9 and $11 say so.
	updateEndpoint = `UPDATE herald.endpoints SET
    url = coalesce($2, url),
    description = coalesce($3, description),
    event_types = coalesce($4, event_types),
    rate_limit = CASE WHEN $5::double precision IS NULL THEN rate_limit ELSE nullif($5, 0) END,
    channels = coalesce($6, channels),
    filter = CASE WHEN $7::text IS NULL THEN filter ELSE nullif($7, '') END,
    headers = coalesce($8, headers),
    timeout_ms = CASE WHEN $9 THEN $10 ELSE timeout_ms END,
    retry_window_ms = CASE WHEN $11 THEN $12 ELSE retry_window_ms END,
    retry_base_ms = CASE WHEN $11 THEN $13 ELSE retry_base_ms END,
    retry_cap_ms = CASE WHEN $11 THEN $14 ELSE retry_cap_ms END,
    updated_at = now()
WHERE id = $1 AND deleted_at IS NULL
RETURNING ` + endpointColumns

	// disableEndpoint keeps the first reason and time when the endpoint is
	// already disabled.
	disableEndpoint = `UPDATE herald.endpoints SET
    disabled_reason = CASE WHEN enabled THEN $2 ELSE disabled_reason END,
    disabled_at = CASE WHEN enabled THEN $3 ELSE disabled_at END,
    enabled = false,
    updated_at = CASE WHEN enabled THEN now() ELSE updated_at END
WHERE id = $1 AND deleted_at IS NULL
RETURNING ` + endpointColumns

	// selectEndpointHeaders reads an endpoint's headers column, for an
	// update that keeps some secret values.
	selectEndpointHeaders = `SELECT headers FROM herald.endpoints WHERE id = $1 AND deleted_at IS NULL`

	// enableEndpoint also clears the failing spell and closes the
	// breaker, so the health clock, the failing warning and the breaker's
	// count start afresh.
	enableEndpoint = `UPDATE herald.endpoints SET
    enabled = true, disabled_reason = NULL, disabled_at = NULL,
    failing_since = NULL, failing_notified_at = NULL,
    unreachable_streak = 0, breaker_opened_at = NULL, updated_at = now()
WHERE id = $1 AND deleted_at IS NULL
RETURNING ` + endpointColumns
)

// Endpoint secrets. Newest first: senders list the newest signature first.
const (
	// selectActiveSecrets also deletes the endpoint's secrets whose grace
	// period ended by the store's clock ($3), so an old secret is gone,
	// not merely unused, once its grace is over.
	selectActiveSecrets = `WITH expired AS (
    DELETE FROM herald.endpoint_secrets WHERE endpoint_id = $1 AND expires_at <= $3
)
SELECT ciphertext FROM herald.endpoint_secrets
WHERE endpoint_id = $1 AND (expires_at IS NULL OR expires_at > $2)
ORDER BY created_at DESC, id DESC`

	selectCurrentSecret = `SELECT ciphertext FROM herald.endpoint_secrets
WHERE endpoint_id = $1 AND expires_at IS NULL
ORDER BY created_at DESC, id DESC LIMIT 1`

	// lockEndpointForRotation serialises rotations of one endpoint and
	// reads the algorithm the new secret keeps.
	lockEndpointForRotation = `SELECT s.algorithm FROM herald.endpoints e
JOIN herald.endpoint_secrets s ON s.endpoint_id = e.id
WHERE e.id = $1 AND e.deleted_at IS NULL
ORDER BY s.expires_at IS NULL DESC, s.created_at DESC, s.id DESC
LIMIT 1
FOR UPDATE OF e`

	// rotateSecret drops secrets already expired at $2, makes every other
	// one expire at $3 at the latest, and adds the new one.
	rotateSecret = `WITH expired AS (
    DELETE FROM herald.endpoint_secrets WHERE endpoint_id = $1 AND expires_at <= $2
), retiring AS (
    UPDATE herald.endpoint_secrets SET expires_at = least(coalesce(expires_at, 'infinity'), $3)
    WHERE endpoint_id = $1 AND (expires_at IS NULL OR expires_at > $2)
)
INSERT INTO herald.endpoint_secrets (id, endpoint_id, algorithm, ciphertext) VALUES ($4, $1, $5, $6)`
)
