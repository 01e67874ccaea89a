package migrations_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/migrations"
)

func TestApplyFromEmptyIsCompleteAndIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPoolFrom(t, pgtest.Empty)

	require.ErrorIs(t, migrations.Check(ctx, pool), migrations.ErrPending)
	require.NoError(t, migrations.Apply(ctx, pool))
	require.NoError(t, migrations.Check(ctx, pool))
	require.NoError(t, migrations.Apply(ctx, pool), "a second Apply must be a no-op")

	for _, table := range []string{"tenants", "endpoints", "endpoint_secrets", "messages", "object_versions", "deliveries", "attempts", "river_job"} {
		var exists bool
		require.NoError(t, pool.QueryRow(ctx, "SELECT to_regclass('herald.' || $1) IS NOT NULL", table).Scan(&exists))
		require.True(t, exists, "table herald.%s should exist", table)
	}
}

func TestApplyConcurrentProcessesDoNotRace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPoolFrom(t, pgtest.Empty)

	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { errs[i] = migrations.Apply(ctx, pool) })
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	require.NoError(t, migrations.Check(ctx, pool))

	all, err := migrations.All()
	require.NoError(t, err)
	var applied int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM herald.schema_migrations").Scan(&applied))
	require.Equal(t, len(all), applied, "each migration is recorded once")
}

func TestFailedMigrationLeavesDatabaseAsItWas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPoolFrom(t, pgtest.Empty)

	// A table that 0001 wants to create makes its CREATE TABLE fail midway.
	_, err := pool.Exec(ctx, "CREATE SCHEMA herald; CREATE TABLE herald.messages (x int)")
	require.NoError(t, err)

	err = migrations.Apply(ctx, pool)
	require.ErrorContains(t, err, "nothing was changed")

	var tenants bool
	require.NoError(t, pool.QueryRow(ctx, "SELECT to_regclass('herald.tenants') IS NOT NULL").Scan(&tenants))
	require.False(t, tenants, "tables created before the failing statement must be rolled back")
	var recorded bool
	require.NoError(t, pool.QueryRow(ctx, "SELECT to_regclass('herald.schema_migrations') IS NOT NULL").Scan(&recorded))
	require.False(t, recorded)
}
