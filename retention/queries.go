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
)
