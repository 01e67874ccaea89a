package retention

// The SQL of a pass; the partition work is done by the functions of
// migrations/0024_history_partitions.sql.
const (
	createPartitions = `SELECT * FROM herald.create_history_partitions($1, $2, $3::interval)`

	// selectDue lists the sets that ended at or before the horizon, oldest
	// first, through history_partitions_upper.
	selectDue = `SELECT suffix FROM herald.history_partitions WHERE upper_at <= $1 ORDER BY upper_at`

	dropPartitions = `SELECT herald.drop_history_partitions($1, $2)`

	// selectMisshapen lists the sets that begin after $1 and whose length
	// is not the interval $2: made before the interval changed.
	selectMisshapen = `SELECT suffix FROM herald.history_partitions WHERE lower_at > $1 AND upper_at - lower_at <> $2::interval ORDER BY lower_at`

	dropEmptyPartitions = `SELECT herald.drop_empty_history_partitions($1)`

	// pruneIdempotencyKeys deletes up to $2 of the oldest publish
	// idempotency keys made before $1, through
	// publish_idempotency_keys_created, by their row addresses (a join on
	// the key would hash the whole table).
	pruneIdempotencyKeys = `
DELETE FROM herald.publish_idempotency_keys
WHERE ctid = ANY (ARRAY(SELECT ctid FROM herald.publish_idempotency_keys
                        WHERE created_at < $1 ORDER BY created_at LIMIT $2))`

	// rollUpOutcomes moves up to $1 of the oldest outcome deltas into
	// endpoint_outcomes, summed per endpoint and hour, and returns how
	// many it moved. Deleting the deltas and adding their sums is one
	// statement, so a reader summing both tables (the portal's charts)
	// counts every attempt once (migration 0051). The sums of an endpoint
	// deleted meanwhile are dropped with it.
	rollUpOutcomes = `
WITH moved AS (
    DELETE FROM herald.endpoint_outcome_deltas d
    WHERE d.id IN (SELECT x.id FROM herald.endpoint_outcome_deltas x ORDER BY x.id LIMIT $1)
    RETURNING d.endpoint_id, d.hour, d.succeeded, d.failed
), summed AS (
    INSERT INTO herald.endpoint_outcomes AS o (endpoint_id, hour, succeeded, failed)
    SELECT m.endpoint_id, m.hour, sum(m.succeeded), sum(m.failed)
    FROM moved m
    WHERE EXISTS (SELECT FROM herald.endpoints e WHERE e.id = m.endpoint_id)
    GROUP BY m.endpoint_id, m.hour
    ORDER BY m.endpoint_id, m.hour
    ON CONFLICT (endpoint_id, hour) DO UPDATE
    SET succeeded = o.succeeded + excluded.succeeded, failed = o.failed + excluded.failed
)
SELECT count(*) FROM moved`

	// pruneOutcomes deletes up to $2 of the hours of endpoint_outcomes
	// before $1, through endpoint_outcomes_hour.
	pruneOutcomes = `
DELETE FROM herald.endpoint_outcomes
WHERE ctid = ANY (ARRAY(SELECT ctid FROM herald.endpoint_outcomes
                        WHERE hour < $1 ORDER BY hour LIMIT $2))`

	// recordSettings writes the pass's settings for the api (Settings).
	recordSettings = `
UPDATE herald.retention_settings
SET retention = $1, retry_window = $2, partition_interval = $3, recorded_at = now()`

	selectSettings = `SELECT retention, retry_window, partition_interval FROM herald.retention_settings`

	// selectTenantRetention is Settings.Effective of tenant $1 in SQL
	// (least ignores a NULL).
	selectTenantRetention = `
SELECT least(s.retention, (SELECT t.retention FROM herald.tenants t WHERE t.id = $1))
FROM herald.retention_settings s`

	// selectShortRetentions lists the tenants whose own retention is
	// shorter than the global $1, the ones a pass purges.
	selectShortRetentions = `SELECT id, retention FROM herald.tenants WHERE retention < $1 ORDER BY id`

	// Purging a tenant's history past its own retention, one batch of
	// messages in one transaction (see purge.go).

	// walkTenant locks the next $6 of tenant $1's dispatched messages
	// created before $4 (ids below $5, which prunes the partitions after
	// it) after the cursor ($2, $3), along messages_tenant_created: the
	// cursor is an index condition, so each batch reads its own rows. One
	// locked by a resend (or anything else) is skipped until the next pass.
	walkTenant = `
SELECT id, created_at FROM herald.messages
WHERE tenant_id = $1 AND (created_at, id) > ($2, $3) AND created_at < $4 AND id < $5
  AND dispatched_at IS NOT NULL
ORDER BY created_at, id
LIMIT $6
FOR UPDATE SKIP LOCKED`

	// The statements on a batch's deliveries and attempts take the batch's
	// message ids as $1 and find each message's rows between
	// herald.history_lower and history_upper of its id (migration 0046):
	// its millisecond, which holds its deliveries and attempts (package
	// historyid), or, for a message of the legacy partition of a database
	// upgraded with its data, that whole partition, where its rows were
	// made seconds after it. Each message's rows are found in the one
	// partition of that range, through the partition's (message_id,
	// endpoint_id) index or attempts_message, in a LATERAL subquery the
	// planner cannot turn into a join (FOR UPDATE, OFFSET 0): joined, for
	// a batch of 500 the plan made for the batch hashed every partition
	// read whole (200,000 deliveries for 500), and bounded to the batch's
	// span, still every delivery of the days a quiet tenant's batch spans.
	// The deletes then delete the rows found by primary key (= ANY, as
	// erasure does), in the partitions of the batch's span: from
	// history_lower of its least message to history_upper of its
	// greatest, which prunes the others when the statement is planned or
	// starts. The lookups by message are not bounded to the span too: a
	// generic plan would compute herald.least_id, a sort of the batch, for
	// each message (100 ms a batch of 500).
	batchMessages = `unnest($1::uuid[]) AS m(id)`
	inHistoryOfD  = `d.message_id = m.id AND d.id >= herald.history_lower(m.id) AND d.id < herald.history_upper(m.id)`
	inHistoryOfA  = `a.message_id = m.id AND a.id >= herald.history_lower(m.id) AND a.id < herald.history_upper(m.id)`
	inSpanOfD     = `d.id >= herald.history_lower(herald.least_id($1)) AND d.id < herald.history_upper(herald.greatest_id($1))`
	inSpanOfA     = `a.id >= herald.history_lower(herald.least_id($1)) AND a.id < herald.history_upper(herald.greatest_id($1))`

	// planOnce has the statements on a batch run with the plan Postgres
	// made the first time on the connection, a generic one, which prunes
	// the partitions when it runs. Planned for each batch's ids, the
	// lookups by message cost the planner a probe of each partition of
	// deliveries per message (it does not count the pruning done as they
	// run): 130,000 for 500 messages, past jit_above_cost, and Postgres
	// JIT-compiled each batch's plan (150-240 ms against 4-10 ms of work on
	// 200,000 deliveries), after 2.5-5 ms of planning.
	planOnce = `SET LOCAL plan_cache_mode = force_generic_plan`

	// lockPurgeDeliveries locks the deliveries of a batch's messages and
	// says which are pending. A lock returns the delivery as it is now, so
	// a replay that requeued one after this statement began is seen.
	lockPurgeDeliveries = `
SELECT d.message_id, d.pending
FROM ` + batchMessages + `
CROSS JOIN LATERAL (
    SELECT d.message_id, d.status = 'pending' AS pending FROM herald.deliveries d
    WHERE ` + inHistoryOfD + `
    FOR UPDATE) d`

	purgeDeliveries = `
DELETE FROM herald.deliveries d
WHERE d.id = ANY (ARRAY(
    SELECT x.id FROM ` + batchMessages + `
    CROSS JOIN LATERAL (SELECT d.id FROM herald.deliveries d WHERE ` + inHistoryOfD + ` OFFSET 0) x))
  AND ` + inSpanOfD + `
RETURNING d.id`

	purgeAttempts = `
DELETE FROM herald.attempts a
WHERE a.id = ANY (ARRAY(
    SELECT x.id FROM ` + batchMessages + `
    CROSS JOIN LATERAL (SELECT a.id FROM herald.attempts a WHERE ` + inHistoryOfA + ` OFFSET 0) x))
  AND ` + inSpanOfA

	// purgeReplayDeliveries deletes the replay records of the deliveries
	// $1, in their partitions, through replay_deliveries_delivery, and
	// purgeMessages the messages $1 through messages_pkey, each bounded
	// to the span of its batch's ids (herald.least_id): Postgres prunes no
	// partition by an array parameter, so a prepared statement's generic
	// plan read the index of all 35 partitions.
	purgeReplayDeliveries = `DELETE FROM herald.replay_deliveries
WHERE delivery_id = ANY($1) AND delivery_id BETWEEN herald.least_id($1) AND herald.greatest_id($1)`

	purgeMessages = `DELETE FROM herald.messages WHERE id = ANY($1) AND id BETWEEN herald.least_id($1) AND herald.greatest_id($1)`
)
