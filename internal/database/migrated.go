package database

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/migrations"
)

// Config is what a Herald program needs to open its database.
type Config struct {
	// URL is the Postgres URL or DSN, e.g. DefaultURL. Required: an empty
	// or malformed one is an error that says what is wrong (see ParseURL).
	URL string
	// MaxConns caps the pool. Defaults to pgxpool's default (the larger of
	// 4 and the number of CPUs). Zero means the default.
	MaxConns int32
	// MinConns and AfterConnect are Options.MinConns and
	// Options.AfterConnect of the program's pool (not of the pool that
	// migrates).
	MinConns     int32
	AfterConnect func(context.Context, *pgx.Conn) error
	// Migrate creates the database when it is missing and applies the
	// migrations. Defaults to false: the schema is only checked, and a
	// database that lacks migrations is an error saying how to apply them.
	Migrate bool
	// Logger receives one line once migrations are applied. Defaults to
	// slog.Default().
	Logger *slog.Logger
	// Timeouts bound the waits of the pool's connections. The zero value
	// is the defaults (see Timeouts).
	Timeouts Timeouts
	// MigrationTimeout is the statement timeout while migrations are
	// applied, the wait for another process's migrations included: a
	// migration may rewrite a table or build an index, which the pool's
	// Timeouts.Statement would cut. Defaults to DefaultMigrationTimeout
	// (10 min). Zero means the default; negative means none. A
	// statement_timeout in the URL wins here too.
	MigrationTimeout time.Duration
	// ApplicationName is the application_name of the connections, the
	// migrating ones included (see Options.ApplicationName). Empty leaves
	// it to the URL.
	ApplicationName string
}

// DefaultMigrationTimeout is Config.MigrationTimeout's default: a
// migration, or the wait for another process's, that takes longer fails
// start-up with Postgres's "canceling statement due to statement timeout"
// rather than hanging it.
const DefaultMigrationTimeout = 10 * time.Minute

// OpenMigrated opens a pool whose schema is the one this build expects, as
// Herald's programs need on start: it connects like Open and then, with
// Config.Migrate, applies the migrations, or otherwise checks that they have
// been applied.
func OpenMigrated(ctx context.Context, cfg Config) (*pgxpool.Pool, error) {
	if cfg.Migrate {
		if err := migrate(ctx, cfg); err != nil {
			return nil, err
		}
	}
	pool, err := Open(ctx, cfg.URL, Options{MaxConns: cfg.MaxConns, MinConns: cfg.MinConns, AfterConnect: cfg.AfterConnect,
		Timeouts: cfg.Timeouts, ApplicationName: cfg.ApplicationName})
	if err != nil {
		return nil, err
	}
	if !cfg.Migrate {
		if err := migrations.Check(ctx, pool); err != nil {
			pool.Close()
			return nil, fmt.Errorf("%w (run once with --migrate)", err)
		}
		return pool, nil
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	logger.Info("database ready", "migrations", "applied")
	return pool, nil
}

// migrate creates the database when it is missing and applies the
// migrations, through a pool of its own whose statement timeout is
// Config.MigrationTimeout.
func migrate(ctx context.Context, cfg Config) error {
	timeouts := cfg.Timeouts
	timeouts.Statement = cmp.Or(cfg.MigrationTimeout, DefaultMigrationTimeout)
	pool, err := Open(ctx, cfg.URL, Options{MaxConns: migrationConns, CreateDatabase: true, Timeouts: timeouts, ApplicationName: cfg.ApplicationName})
	if err != nil {
		return err
	}
	defer pool.Close()
	return migrations.Apply(ctx, pool)
}

// migrationConns is the size of the migrating pool: Herald's transaction
// and River's migrator (the advisory lock has a connection of its own).
const migrationConns = 2
