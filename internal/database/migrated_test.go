package database_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/database"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/migrations"
)

// Without Migrate a program only checks the schema and says how to apply
// it; with Migrate it creates the database and applies the migrations.
func TestOpenMigratedAppliesOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, _ := missingDatabase(t, "herald_migrated")
	unmigrated := pgtest.NewPoolFrom(t, pgtest.Empty)

	_, err := database.OpenMigrated(ctx, database.Config{URL: url})
	require.ErrorContains(t, err, "does not exist", "without Migrate a missing database is not created")

	_, err = database.OpenMigrated(ctx, database.Config{URL: unmigrated.Config().ConnString()})
	require.ErrorIs(t, err, migrations.ErrPending, "without Migrate an unmigrated database is refused")
	require.ErrorContains(t, err, "--migrate", "and the error says how to migrate it")

	pool, err := database.OpenMigrated(ctx, database.Config{URL: url, Migrate: true, MaxConns: 2})
	require.NoError(t, err)
	require.EqualValues(t, 2, pool.Config().MaxConns)
	require.NoError(t, migrations.Check(ctx, pool))
	pool.Close()

	pool, err = database.OpenMigrated(ctx, database.Config{URL: url})
	require.NoError(t, err, "a migrated database opens without Migrate")
	pool.Close()
}

// migrationsLockKey is the advisory lock migrations.Apply holds while it
// works (migrations.advisoryLockKey).
const migrationsLockKey int64 = 0x686572616c64

// holdMigrationsLock takes the migrations' lock in the database at url,
// as another process migrating it would, and releases it after d.
func holdMigrationsLock(t *testing.T, url string, d time.Duration) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrationsLockKey)
	require.NoError(t, err)
	released := make(chan struct{})
	time.AfterFunc(d, func() {
		defer close(released)
		_ = conn.Close(ctx)
	})
	t.Cleanup(func() { <-released })
}

// Migrations, and the wait for another process's, run under
// MigrationTimeout rather than the pool's statement timeout.
func TestOpenMigratedMigratesUnderTheMigrationTimeout(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t, pgtest.Empty)
	holdMigrationsLock(t, url, 3*time.Second)
	_, err := database.OpenMigrated(context.Background(), database.Config{URL: url, Migrate: true, MigrationTimeout: 500 * time.Millisecond})
	require.ErrorContains(t, err, "statement timeout", "a migration that waits longer than MigrationTimeout fails")

	url = pgtest.NewDatabase(t, pgtest.Empty)
	holdMigrationsLock(t, url, 2*time.Second)
	pool, err := database.OpenMigrated(context.Background(), database.Config{URL: url, Migrate: true, Timeouts: database.Timeouts{Statement: 500 * time.Millisecond}, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err, "a migration may wait longer than the pool's statement timeout")
	defer pool.Close()
	var statementTimeout string
	require.NoError(t, pool.QueryRow(context.Background(), "SHOW statement_timeout").Scan(&statementTimeout))
	require.Equal(t, "500ms", statementTimeout, "the pool has its own statement timeout")
}
