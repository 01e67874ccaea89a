package database

import (
	"context"
	"fmt"
	"log/slog"

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
	// Migrate creates the database when it is missing and applies the
	// migrations. Defaults to false: the schema is only checked, and a
	// database that lacks migrations is an error saying how to apply them.
	Migrate bool
	// Logger receives one line once migrations are applied. Defaults to
	// slog.Default().
	Logger *slog.Logger
}

// OpenMigrated opens a pool whose schema is the one this build expects, as
// Herald's programs need on start: it connects like Open and then, with
// Config.Migrate, applies the migrations, or otherwise checks that they have
// been applied.
func OpenMigrated(ctx context.Context, cfg Config) (*pgxpool.Pool, error) {
	pool, err := Open(ctx, cfg.URL, Options{MaxConns: cfg.MaxConns, CreateDatabase: cfg.Migrate})
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
	if err := migrations.Apply(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	logger.Info("database ready", "migrations", "applied")
	return pool, nil
}
