package pgtest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/pgtest"
)

// Two parallel tests write the same primary key; each sees only its own row.
func TestDatabasesAreIsolated(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"first", "second"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool := pgtest.NewPool(t)
			_, err := pool.Exec(ctx, "INSERT INTO herald.tenants (id, name) VALUES ('acme', $1)", name)
			require.NoError(t, err)
			var count int
			require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM herald.tenants").Scan(&count))
			require.Equal(t, 1, count)
		})
	}
}
