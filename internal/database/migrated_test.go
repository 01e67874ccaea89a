package database_test

import (
	"context"
	"fmt"
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
	admin := pgtest.NewPoolFrom(t, pgtest.Empty)
	cfg := admin.Config().ConnConfig.Copy()
	cfg.Database = fmt.Sprintf("herald_migrated_%d", time.Now().UnixNano())
	t.Cleanup(func() {
		_, _ = admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{cfg.Database}.Sanitize()+" WITH (FORCE)")
	})
	url := fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Host, cfg.Port, cfg.Database)

	_, err := database.OpenMigrated(ctx, database.Config{URL: url})
	require.ErrorContains(t, err, "does not exist", "without Migrate a missing database is not created")

	_, err = database.OpenMigrated(ctx, database.Config{URL: admin.Config().ConnString()})
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
