// Package config holds the settings Herald's programs share, read from flags
// with environment-variable fallbacks.
package config

import (
	"flag"
	"os"
	"strconv"

	"github.com/heraldhq/herald/internal/database"
)

// Database is the database part of a program's configuration.
type Database struct {
	// URL is the Postgres DSN. Defaults to database.DefaultURL; the
	// HERALD_DATABASE_URL environment variable overrides the default and the
	// --database-url flag overrides both.
	URL string
	// Migrate applies migrations on start and creates the database when it is
	// missing. Defaults to true (HERALD_MIGRATE=false turns it off).
	Migrate bool
	// MaxConns caps the connection pool. Zero means pgxpool's default.
	MaxConns int
}

// Register adds the database flags to fs. A MaxConns already set is the
// default of --max-conns (the dispatcher needs more connections than the api).
func (d *Database) Register(fs *flag.FlagSet) {
	fs.StringVar(&d.URL, "database-url", Env(database.EnvURL, database.DefaultURL), "Postgres URL (env "+database.EnvURL+")")
	fs.BoolVar(&d.Migrate, "migrate", EnvBool("HERALD_MIGRATE", true), "create the database if missing and apply migrations on start (env HERALD_MIGRATE)")
	fs.IntVar(&d.MaxConns, "max-conns", EnvInt("HERALD_MAX_CONNS", d.MaxConns), "maximum database connections; 0 means max(4, CPUs) (env HERALD_MAX_CONNS)")
}

// Env returns the environment variable name, or def when it is unset or empty.
func Env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// EnvBool is Env for booleans; an unparsable value yields def.
func EnvBool(name string, def bool) bool {
	if b, err := strconv.ParseBool(os.Getenv(name)); err == nil {
		return b
	}
	return def
}

// EnvInt is Env for integers; an unparsable value yields def.
func EnvInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}
