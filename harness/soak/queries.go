package soak

// The SQL the run reads itself; everything else goes through Herald's own
// packages. The counts go through the partial indexes of pending
// deliveries and undispatched messages; the run keeps history small.
const (
	// sampleSizes reads one point of the size curve: the bytes of every
	// partition of the four history tables (indexes and TOAST included),
	// of River's jobs and of the whole database; the partition sets; the
	// pending deliveries and the undispatched messages.
	sampleSizes = `SELECT
  (SELECT coalesce(sum(pg_total_relation_size(t.relid)), 0)::bigint
   FROM unnest('{herald.messages,herald.deliveries,herald.attempts,herald.replay_deliveries}'::regclass[]) AS h(parent),
        pg_partition_tree(h.parent) AS t
   WHERE t.isleaf),
  pg_total_relation_size('herald.river_job'),
  pg_database_size(current_database()),
  (SELECT count(*) FROM herald.history_partitions),
  (SELECT count(*) FROM herald.deliveries WHERE status = 'pending'),
  (SELECT count(*) FROM herald.messages WHERE dispatched_at IS NULL)`

	// dropOtherIntervals drops the partition sets of another length than
	// $1 that hold no row, begun or not: on a new database, the day sets
	// the migration made (0024).
	dropOtherIntervals = `SELECT count(*) FILTER (WHERE herald.drop_empty_history_partitions(suffix))
FROM herald.history_partitions WHERE upper_at - lower_at <> $1::interval`

	// createPartitions creates the sets of length $1 from now to $2 ahead.
	createPartitions = `SELECT count(*) FROM herald.create_history_partitions(now(), now() + $2::interval, $1::interval)`

	// defaultRows counts the rows of the default partitions: rows whose
	// range had no partition, or had been dropped when they were written.
	defaultRows = `SELECT (SELECT count(*) FROM herald.messages_p_default) + (SELECT count(*) FROM herald.deliveries_p_default)
  + (SELECT count(*) FROM herald.attempts_p_default)`
)
