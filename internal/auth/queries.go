package auth

const (
	insertAPIKey = `
INSERT INTO herald.api_keys (id, tenant_id, name, prefix, key_hash, created_by)
VALUES ($1, $2, $3, $4, $5, $6)
RETURNING id, tenant_id, name, prefix, created_at, revoked_at`

	selectKeyExists = `SELECT EXISTS (SELECT 1 FROM herald.api_keys WHERE key_hash = $1)`

	listAPIKeys = `
SELECT id, tenant_id, name, prefix, created_at, revoked_at
FROM herald.api_keys
WHERE coalesce(tenant_id, '') = $1
  AND ($2::timestamptz IS NULL OR (created_at, id) < ($2, $3::uuid))
ORDER BY created_at DESC, id DESC
LIMIT $4`

	revokeAPIKey = `
UPDATE herald.api_keys SET revoked_at = coalesce(revoked_at, now())
WHERE coalesce(tenant_id, '') = $1 AND id = $2
RETURNING id, tenant_id, name, prefix, created_at, revoked_at`

	// Everything key $1 made, directly or through the keys it made: those
	// keys are revoked, their portal links and sessions deleted, and the
	// operator sessions signed in with any of them. The walk
	// goes through keys revoked earlier too, so nothing below them is
	// missed. created_by always names an older key, so it ends.
	revokeCreatedBy = `
WITH RECURSIVE makers AS (
    SELECT $1::uuid AS id
    UNION
    SELECT k.id FROM herald.api_keys k JOIN makers m ON k.created_by = m.id
), keys AS (
    UPDATE herald.api_keys SET revoked_at = now()
    WHERE id IN (SELECT id FROM makers) AND id <> $1 AND revoked_at IS NULL
), links AS (
    DELETE FROM herald.portal_links WHERE created_by IN (SELECT id FROM makers)
), operator_sessions AS (
    DELETE FROM herald.operator_sessions WHERE api_key_id IN (SELECT id FROM makers)
)
DELETE FROM herald.portal_sessions WHERE created_by IN (SELECT id FROM makers)`

	selectActiveKey = `
SELECT id, tenant_id FROM herald.api_keys
WHERE key_hash = $1 AND revoked_at IS NULL`

	insertPortalLink = `
INSERT INTO herald.portal_links (token_hash, tenant_id, expires_at, created_by)
VALUES ($1, $2, now() + make_interval(secs => $3), $4)
RETURNING expires_at`

	spendPortalLink = `
UPDATE herald.portal_links SET used_at = now()
WHERE token_hash = $1 AND used_at IS NULL AND expires_at > now()
RETURNING tenant_id, created_by`

	selectPortalLink = `
SELECT tenant_id, expires_at, used_at IS NOT NULL, expires_at <= now()
FROM herald.portal_links WHERE token_hash = $1`

	insertPortalSession = `
INSERT INTO herald.portal_sessions (token_hash, tenant_id, expires_at, created_by)
VALUES ($1, $2, now() + make_interval(secs => $3), $4)
RETURNING expires_at`

	selectPortalSession = `
SELECT tenant_id FROM herald.portal_sessions WHERE token_hash = $1 AND expires_at > now()`

	pruneExpiredPortal = `
WITH links AS (DELETE FROM herald.portal_links WHERE expires_at < now() - interval '1 day')
DELETE FROM herald.portal_sessions WHERE expires_at < now() - interval '1 day'`

	deletePortalSession = `DELETE FROM herald.portal_sessions WHERE token_hash = $1`

	insertOperatorSession = `
INSERT INTO herald.operator_sessions (token_hash, api_key_id, expires_at)
VALUES ($1, $2, now() + make_interval(secs => $3))
RETURNING expires_at`

	// A session counts while its key is an active operator key, whatever
	// the revocation's path (RevokeAPIKey deletes the sessions too).
	selectOperatorSession = `
SELECT 1 FROM herald.operator_sessions s JOIN herald.api_keys k ON k.id = s.api_key_id
WHERE s.token_hash = $1 AND s.expires_at > now() AND k.revoked_at IS NULL AND k.tenant_id IS NULL`

	pruneExpiredOperatorSessions = `DELETE FROM herald.operator_sessions WHERE expires_at < now()`

	deleteOperatorSession = `DELETE FROM herald.operator_sessions WHERE token_hash = $1`
)
