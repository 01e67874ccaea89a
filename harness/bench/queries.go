package bench

// The SQL the bench runs itself; everything else goes through Herald's own
// packages.
const (
	// databaseWrites reads this database's row counters, the cluster's WAL
	// position and the bytes Herald's tables (River's included) occupy.
	// pg_stat_clear_snapshot makes the counters current.
	databaseWrites = `SELECT s.tup_inserted, s.tup_updated, s.tup_deleted,
       pg_current_wal_lsn()::text,
       (SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'herald' AND c.relkind = 'r')
FROM pg_stat_database s, pg_stat_clear_snapshot()
WHERE s.datname = current_database()`

	// walBytesBetween is the WAL written between two positions.
	walBytesBetween = `SELECT pg_wal_lsn_diff($2::pg_lsn, $1::pg_lsn)::bigint`

	// otherSessions counts the other connections to this database. A
	// backend publishes its row counters when it exits, so the counters
	// are complete once this is zero.
	otherSessions = `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid()`

	// sessionPIDs lists the server processes of the other connections to
	// this database.
	sessionPIDs = `SELECT pid FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid()`

	// serverSettings describes the Postgres server for the report.
	serverSettings = `SELECT current_setting('server_version'), current_setting('synchronous_commit'),
       current_setting('fsync'), current_setting('shared_buffers'), current_setting('max_connections')`
)

// The aged database's upkeep between its runs (see settle).
const (
	// dueForAutovacuum lists Herald's tables that autovacuum would have
	// vacuumed or analysed by now, by its default thresholds: dead rows
	// past 50 + 20% of the table, rows inserted since the last vacuum past
	// 1,000 + 20%, rows changed since the last analyse past 50 + 10%.
	dueForAutovacuum = `SELECT format('%I.%I', s.schemaname, s.relname)
FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
WHERE s.schemaname = 'herald' AND c.relkind = 'r'
  AND (s.n_dead_tup > 50 + 0.2 * greatest(c.reltuples, 0)
    OR s.n_ins_since_vacuum > 1000 + 0.2 * greatest(c.reltuples, 0)
    OR s.n_mod_since_analyze > 50 + 0.1 * greatest(c.reltuples, 0))
ORDER BY 1`

	// checkpoint writes every dirty page out (superusers and
	// pg_checkpoint members only).
	checkpoint = `CHECKPOINT`
)
