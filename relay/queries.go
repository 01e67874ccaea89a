package relay

const (
	// claimOutbox takes up to $1 unrelayed messages of the source, oldest
	// id first, along outbox_unrelayed (SKIP LOCKED: another dispatcher's
	// relay takes the next batch meanwhile), then up to $1 more: the
	// lower versions, still waiting, of the objects of those (the lowest
	// 10 of each), along outbox_unrelayed_object. Ids are made before a publish waits for
	// its object's row lock, so a later version may have the lower id and
	// fall into an earlier batch. Each object's versions must reach
	// Herald in order, which ordered delivery's gate relies on
	// (docs/DESIGN.md, "Ordered delivery", rule 3), so a message is held
	// back (held) while a lower version of its object waits outside the
	// batch: claimed by another relay, which marks it only after Herald's
	// commit, or past the second limit. $2 are messages this relay knows
	// Herald has, their mark still committing (the previous step's, see
	// step): they do not hold a later version back (NULL means none). The
	// lowest waiting version of an object is never held, so every claim
	// moves something unless another relay holds what it needs.
	claimOutbox = `WITH first AS (
    SELECT o.id, o.tenant_id, o.object_id, o.object_version
    FROM herald.outbox o
    WHERE o.relayed_at IS NULL AND o.refused IS NULL
    ORDER BY o.id
    LIMIT $1
    FOR UPDATE SKIP LOCKED
), lower AS (
    SELECT w.id FROM herald.outbox w
    WHERE w.id = ANY (ARRAY(
            SELECT l.id FROM first f
            CROSS JOIN LATERAL (
                SELECT l.id FROM herald.outbox l
                WHERE l.tenant_id = f.tenant_id AND l.object_id = f.object_id AND l.object_version < f.object_version
                    AND l.relayed_at IS NULL AND l.refused IS NULL
                ORDER BY l.object_version
                LIMIT 10) l))
        AND w.id <> ALL (ARRAY(SELECT f.id FROM first f))
    ORDER BY w.object_version
    LIMIT $1
    FOR UPDATE SKIP LOCKED
), batch AS (
    SELECT f.id FROM first f
    UNION ALL
    SELECT l.id FROM lower l
)
SELECT c.id, c.tenant_id, c.event_type, c.object_id, c.object_version, c.body,
    c.idempotency_key, c.created_at, c.traceparent, c.channels,
    EXISTS (
        SELECT FROM herald.outbox w
        WHERE w.tenant_id = c.tenant_id AND w.object_id = c.object_id AND w.object_version < c.object_version
            AND w.relayed_at IS NULL AND w.refused IS NULL
            AND w.id NOT IN (SELECT b.id FROM batch b)
            AND w.id <> ALL (coalesce($2::uuid[], '{}'))) AS held
FROM herald.outbox c
WHERE c.id = ANY (ARRAY(SELECT b.id FROM batch b))
ORDER BY c.id`

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
	// outbox.NotifyWindow; the fan-out drains once more after it), if
	// Herald has any of the batch's messages ($1, looked up along
	// messages_pkey): insertRelayed ran before it in the same transaction,
	// and a batch Herald refused whole wakes nothing. The lookup is bounded
	// to the span of the batch's ids (herald.least_id, migration 0046):
	// Postgres prunes no partition by an array parameter, and a prepared
	// statement's generic plan looked a batch of 500 new messages up in
	// every older partition first, 30 of 35, before it found one.
	wakeFanOut = `SELECT herald.wake_dispatcher(clock_timestamp())
WHERE EXISTS (SELECT FROM herald.messages m
              WHERE m.id = ANY ($1::uuid[]) AND m.id BETWEEN herald.least_id($1::uuid[]) AND herald.greatest_id($1::uuid[]))`

	// markWithoutFlush has the mark's commit return before its WAL
	// reaches disk (synchronous_commit off, for this transaction only).
	// A mark lost to a crash of the source's server costs a re-relay,
	// which inserts nothing twice, never a message: Herald's insert,
	// committed before the mark, is durable. The step then waits for no
	// second flush per batch.
	markWithoutFlush = `SET LOCAL synchronous_commit = off`

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
	// ago by the source's clock, found along outbox_relayed and deleted
	// along the primary key (ANY of an array: a join let the planner scan
	// the whole table).
	deleteRelayed = `DELETE FROM herald.outbox o
WHERE o.id = ANY (ARRAY(
    SELECT r.id FROM herald.outbox r
    WHERE r.relayed_at < now() - make_interval(secs => $1)
    ORDER BY r.relayed_at
    LIMIT $2))`

	// deleteOldKeys deletes up to $2 idempotency keys claimed before $1,
	// found along publish_idempotency_keys_created and deleted by their
	// tuple ids (a join on the key let the planner scan the whole table).
	// A key a publish updates meanwhile has moved and is left for the
	// next pass.
	deleteOldKeys = `DELETE FROM herald.publish_idempotency_keys k
WHERE k.ctid = ANY (ARRAY(
    SELECT o.ctid FROM herald.publish_idempotency_keys o
    WHERE o.created_at < $1
    ORDER BY o.created_at
    LIMIT $2))`

	// outboxHasStats says whether Postgres has statistics on the source
	// outbox's columns, which only an ANALYZE while it held rows leaves
	// (pg_stats shows the caller what it may read, which the relay's role
	// may).
	outboxHasStats = `SELECT EXISTS (SELECT FROM pg_stats s WHERE s.schemaname = 'herald' AND s.tablename = 'outbox')`

	// analyzeOutbox gathers the outbox's statistics.
	analyzeOutbox = `ANALYZE herald.outbox`

	// retentionHorizon is now less the global retention the dispatchers
	// recorded in Herald's database (migrations/0035_tenant_retention.sql):
	// Herald prunes its own idempotency keys there too.
	retentionHorizon = `SELECT now() - s.retention FROM herald.retention_settings s`
)
