package flagenv

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
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
	// MinConns and AfterConnect are database.Options.MinConns and
	// database.Options.AfterConnect, set by the program, not by flags.
	MinConns     int
	AfterConnect func(context.Context, *pgx.Conn) error
	// Timeouts are the --db-*-timeout and --db-keepalive flags, each
	// defaulting to its database.Default… constant.
	Timeouts database.Timeouts
	// MigrationTimeout is --migrate-timeout (HERALD_MIGRATE_TIMEOUT).
	// Defaults to database.DefaultMigrationTimeout.
	MigrationTimeout time.Duration
	// ApplicationName is the connections' application_name: "herald-"
	// and the program's name, set by DatabaseVar; an application_name in
	// the URL wins.
	ApplicationName string
}

// DatabaseVar defines --database-url, --migrate, --max-conns, the
// connections' timeouts and --migrate-timeout, with defaultMaxConns as the
// default of --max-conns (the dispatcher needs more connections than the
// api). The connections' application_name is "herald-" and the
// FlagSet's name.
func (f *FlagSet) DatabaseVar(d *Database, defaultMaxConns int) {
	d.ApplicationName = "herald-" + f.Name()
	f.StringVar(&d.URL, "database-url", database.DefaultURL, "Postgres URL; a connect_timeout, statement_timeout or idle_in_transaction_session_timeout in it wins over the --db-* flag")
	f.Env("database-url", database.EnvURL)
	f.BoolVar(&d.Migrate, "migrate", DefaultMigrate, "create the database if missing and apply migrations on start")
	f.Env("migrate", "HERALD_MIGRATE")
	f.IntVar(&d.MaxConns, "max-conns", defaultMaxConns, "maximum pooled database connections; the program opens one more for its LISTEN, a dispatcher leading the fan-out one more for its lock (README: Replicas and database connections); 0 means max(4, CPUs)")
	f.Env("max-conns", "HERALD_MAX_CONNS")

	timeouts := []struct {
		value     *time.Duration
		flag, env string
		def       time.Duration
		usage     string
	}{
		{&d.Timeouts.Connect, "db-connect-timeout", "HERALD_DB_CONNECT_TIMEOUT", database.DefaultConnectTimeout,
			"time limit of opening one database connection"},
		{&d.Timeouts.Statement, "db-statement-timeout", "HERALD_DB_STATEMENT_TIMEOUT", database.DefaultStatementTimeout,
			"Postgres's statement_timeout for Herald's sessions; negative leaves the server's"},
		{&d.Timeouts.IdleInTransaction, "db-idle-in-transaction-timeout", "HERALD_DB_IDLE_IN_TRANSACTION_TIMEOUT", database.DefaultIdleInTransactionTimeout,
			"Postgres ends a session whose transaction waits this long for its next statement, releasing its locks; negative leaves the server's"},
		{&d.Timeouts.Ping, "db-ping-timeout", "HERALD_DB_PING_TIMEOUT", database.DefaultPingTimeout,
			"a pooled connection that does not answer a ping this fast is dropped as dead and another taken"},
		{&d.Timeouts.KeepAlive, "db-keepalive", "HERALD_DB_KEEPALIVE", database.DefaultKeepAlive,
			"idle time before a TCP keepalive probe, and between probes; negative turns them off"},
		{&d.Timeouts.TCPUser, "db-tcp-user-timeout", "HERALD_DB_TCP_USER_TIMEOUT", database.DefaultTCPUserTimeout,
			"Linux drops a connection whose peer leaves data or keepalives unacknowledged this long; negative turns it off"},
		{&d.MigrationTimeout, "migrate-timeout", "HERALD_MIGRATE_TIMEOUT", database.DefaultMigrationTimeout,
			"statement timeout while migrating, waiting for another process's migration included; negative means none"},
	}
	for _, t := range timeouts {
		f.DurationVar(t.value, t.flag, t.def, t.usage)
		f.Env(t.flag, t.env)
	}
}

// Open opens the program's pool with database.OpenMigrated.
func (d Database) Open(ctx context.Context, logger *slog.Logger) (*pgxpool.Pool, error) {
	return database.OpenMigrated(ctx, database.Config{
		URL:              d.URL,
		MaxConns:         int32(d.MaxConns),
		MinConns:         int32(d.MinConns),
		AfterConnect:     d.AfterConnect,
		Migrate:          d.Migrate,
		Logger:           logger,
		Timeouts:         d.Timeouts,
		MigrationTimeout: d.MigrationTimeout,
		ApplicationName:  d.ApplicationName,
	})
}
