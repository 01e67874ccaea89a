package ratelimit

const (
	// beatQuery upserts this replica, drops the expired ones and counts the
	// rest in one round trip. The count runs on the snapshot taken before
	// the upsert, so it adds this replica explicitly when it is new.
	beatQuery = `
WITH beat AS (
    INSERT INTO herald.dispatchers (id, hostname, heartbeat_at)
    VALUES ($1, $2, now())
    ON CONFLICT (id) DO UPDATE SET heartbeat_at = now()
    RETURNING id
), expired AS (
    DELETE FROM herald.dispatchers
    WHERE heartbeat_at < now() - $3::interval AND id <> $1
)
SELECT count(*) + 1
FROM herald.dispatchers
WHERE heartbeat_at >= now() - $3::interval AND id <> $1`

	leaveQuery = `DELETE FROM herald.dispatchers WHERE id = $1`
)
