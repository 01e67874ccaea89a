package receiver_test

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/receiver"
)

func TestMigrate(t *testing.T) {
	t.Parallel()

	t.Run("ConcurrentCallsAndRepeats", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.NewPoolFrom(t, pgtest.Empty)
		ctx := t.Context()

		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Go(func() { errs[i] = receiver.Migrate(ctx, pool) })
		}
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
		require.NoError(t, receiver.Migrate(ctx, pool), "a second Migrate on a current database does nothing")

		files, err := filepath.Glob("migrations/*.sql")
		require.NoError(t, err)
		var applied int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM webhook_inbox.schema_migrations`).Scan(&applied))
		require.Equal(t, len(files), applied, "every migration ran once")
	})

	t.Run("TablesLiveInTheirOwnSchema", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.NewPoolFrom(t, pgtest.Empty)
		ctx := t.Context()
		require.NoError(t, receiver.Migrate(ctx, pool))

		rows, err := pool.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1`, receiver.Schema)
		require.NoError(t, err)
		var tables []string
		for rows.Next() {
			var name string
			require.NoError(t, rows.Scan(&name))
			tables = append(tables, name)
		}
		require.NoError(t, rows.Err())
		require.Equal(t, []string{"claims", "events", "object_versions", "schema_migrations"}, tables)
	})
}
