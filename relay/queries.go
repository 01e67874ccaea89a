package relay

const (
	// claimOutbox takes up to $1 unrelayed messages of the source, oldest
	// id first, along outbox_unrelayed. SKIP LOCKED: another dispatcher's
	// relay takes the next batch meanwhile.
	claimOutbox = `SELECT o.id, o.tenant_id, o.event_type, o.object_id, o.object_version, o.body,
    o.idempotency_key, o.created_at, o.traceparent, o.channels
FROM herald.outbox o
WHERE o.relayed_at IS NULL AND o.refused IS NULL
ORDER BY o.id
LIMIT $1
FOR UPDATE SKIP LOCKED`

	// insertRelayed inserts a claimed batch into Herald's messages, keyed
	// by id: a message relayed before (a step that died after Herald's
	// commit) inserts nothing. A message's tenant is read FOR KEY SHARE,
	// as a publish here does (migrations/0036_erasure.sql), so an erasure
	// that marks the tenant waits for this step. It returns the messages
	// refused, with why: an unknown tenant, or one being erased. $1 is the
	// source's name; $11 is a JSON array holding each message's channels.
	insertRelayed = `WITH batch AS (
    SELECT b.id, b.tenant_id, b.event_type, b.object_id, b.object_version, b.body,
        b.idempotency_key, b.created_at, b.traceparent,
        ARRAY(SELECT jsonb_array_elements_text($11::jsonb -> (b.i::integer - 1))) AS channels
    FROM unnest($2::uuid[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::text[],
        $8::text[], $9::timestamptz[], $10::text[]) WITH ORDINALITY
        AS b(id, tenant_id, event_type, object_id, object_version, body, idempotency_key, created_at, traceparent, i)
), tenants AS (
    SELECT t.id, t.deleted_at FROM herald.tenants t
    WHERE t.id IN (SELECT DISTINCT b.tenant_id FROM batch b)
    ORDER BY t.id
    FOR KEY SHARE
), inserted AS (
    INSERT INTO herald.messages (id, tenant_id, event_type, object_id, object_version, body,
        idempotency_key, created_at, traceparent, channels, source)
    SELECT b.id, b.tenant_id, b.event_type, b.object_id, b.object_version, b.body,
        b.idempotency_key, b.created_at, b.traceparent, b.channels, $1
    FROM batch b JOIN tenants t ON t.id = b.tenant_id AND t.deleted_at IS NULL
    ORDER BY b.id
    ON CONFLICT DO NOTHING
)
SELECT b.id, CASE
        WHEN t.id IS NULL THEN format('tenant %s does not exist in Herald; create it and publish again (this message is never relayed)', to_json(b.tenant_id))
        ELSE format('tenant %s was deleted at %s and is being erased; it takes no new messages', to_json(b.tenant_id),
            to_char(t.deleted_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))
    END
FROM batch b LEFT JOIN tenants t ON t.id = b.tenant_id
WHERE t.id IS NULL OR t.deleted_at IS NOT NULL`

	// wakeFanOut wakes the fan-out at Herald's commit as a publish there
	// does (herald.wake_dispatcher: at most one notification per
	// outbox.NotifyWindow; the fan-out drains once more after it).
	wakeFanOut = `SELECT herald.wake_dispatcher(clock_timestamp())`

	// markRelayed marks the relayed messages ($1) and the refused ones
	// ($2, with why in $3) on the source.
	markRelayed = `WITH relayed AS (
    UPDATE herald.outbox o SET relayed_at = now()
    WHERE o.id = ANY($1::uuid[])
)
UPDATE herald.outbox o SET refused = r.problem
FROM unnest($2::uuid[], $3::text[]) AS r(id, problem)
WHERE o.id = r.id`

	// deleteRelayed deletes up to $2 messages relayed more than $1 seconds
	// ago by the source's clock, along outbox_relayed.
	deleteRelayed = `DELETE FROM herald.outbox o
WHERE o.id IN (
    SELECT r.id FROM herald.outbox r
    WHERE r.relayed_at < now() - make_interval(secs => $1)
    ORDER BY r.relayed_at
    LIMIT $2)`

	// deleteOldKeys deletes up to $2 idempotency keys claimed before $1,
	// along publish_idempotency_keys_created.
	deleteOldKeys = `DELETE FROM herald.publish_idempotency_keys k
WHERE (k.tenant_id, k.idempotency_key) IN (
    SELECT o.tenant_id, o.idempotency_key FROM herald.publish_idempotency_keys o
    WHERE o.created_at < $1
    ORDER BY o.created_at
    LIMIT $2)`

	// retentionHorizon is now less the global retention the dispatchers
	// recorded in Herald's database (migrations/0035_tenant_retention.sql):
	// Herald prunes its own idempotency keys there too.
	retentionHorizon = `SELECT now() - s.retention FROM herald.retention_settings s`
)
