package database_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/database"
	"github.com/heraldhq/herald/internal/historyplan"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/migrations"
)

// The first statement a session runs on a table partitioned by time loads
// the catalog entries of every partition (the aged benchmark's API message
// list took 167 ms at p99 of 40 requests, the first of them on a new
// connection, against 75 ms on a fresh database): WarmHistory loads them
// as the connection is made.
func TestWarmHistoryLoadsThePartitionsCatalogAsTheConnectionIsMade(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := pgtest.NewDatabase(t, historyplan.Filled)
	reads := func(opts database.Options) int64 {
		pool, err := database.Open(ctx, url, opts)
		require.NoError(t, err)
		defer pool.Close()
		conn, err := pool.Acquire(ctx)
		require.NoError(t, err)
		defer conn.Release()
		// The counts a session has not reported yet, its own included.
		count := func() (n int64) {
			require.NoError(t, conn.QueryRow(ctx, `SELECT coalesce(sum(idx_scan), 0) FROM pg_stat_xact_sys_tables`).Scan(&n))
			return n
		}
		before := count()
		_, err = conn.Exec(ctx, `EXPLAIN SELECT id FROM herald.deliveries WHERE endpoint_id = '00000000-0000-0000-0000-000000000000' ORDER BY created_at DESC, id DESC LIMIT 50`)
		require.NoError(t, err)
		return count() - before
	}
	cold := reads(database.Options{})
	warm := reads(database.Options{AfterConnect: database.WarmHistory})
	t.Logf("catalog index scans to plan a page of deliveries: %d on a new connection, %d on a warmed one", cold, warm)
	require.Less(t, warm*5, cold, "a warmed connection plans from its caches")
}

// A database without Herald's schema has nothing to warm, and opens: the
// schema check (migrations.Check) says what it lacks.
func TestWarmHistoryLeavesADatabaseWithoutTheSchemaAlone(t *testing.T) {
	t.Parallel()
	unmigrated := pgtest.NewPoolFrom(t, pgtest.Empty)
	pool, err := database.Open(t.Context(), unmigrated.Config().ConnString(), database.Options{AfterConnect: database.WarmHistory})
	require.NoError(t, err)
	defer pool.Close()
	require.ErrorIs(t, migrations.Check(t.Context(), pool), migrations.ErrPending)
}
