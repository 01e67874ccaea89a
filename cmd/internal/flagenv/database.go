package flagenv

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/database"
)

// DefaultMigrate is --migrate's default: a program creates its database
// when it is missing and applies migrations on start.
const DefaultMigrate = true

// Database is the database part of a program's settings.
type Database struct {
	// URL is --database-url (HERALD_DATABASE_URL). Defaults to
	// database.DefaultURL.
	URL string
	// Migrate is --migrate (HERALD_MIGRATE). Defaults to DefaultMigrate.
	Migrate bool
	// MaxConns is --max-conns (HERALD_MAX_CONNS); zero means pgxpool's
	// default. Its default is the program's.
	MaxConns int
}

// DatabaseVar defines --database-url, --migrate and --max-conns, with
// defaultMaxConns as the default of --max-conns (the dispatcher needs more
// connections than the api).
func (f *FlagSet) DatabaseVar(d *Database, defaultMaxConns int) {
	f.StringVar(&d.URL, "database-url", database.DefaultURL, "Postgres URL")
	f.Env("database-url", database.EnvURL)
	f.BoolVar(&d.Migrate, "migrate", DefaultMigrate, "create the database if missing and apply migrations on start")
	f.Env("migrate", "HERALD_MIGRATE")
	f.IntVar(&d.MaxConns, "max-conns", defaultMaxConns, "maximum database connections; 0 means max(4, CPUs)")
	f.Env("max-conns", "HERALD_MAX_CONNS")
}

// Open opens the program's pool with database.OpenMigrated.
func (d Database) Open(ctx context.Context, logger *slog.Logger) (*pgxpool.Pool, error) {
	return database.OpenMigrated(ctx, database.Config{URL: d.URL, MaxConns: int32(d.MaxConns), Migrate: d.Migrate, Logger: logger})
}
