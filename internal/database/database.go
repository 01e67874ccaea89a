// Package database opens Herald's connection pool: it reads the DSN, creates
// the database when it does not exist yet, bounds every wait of the pool's
// connections ([Timeouts]), so that a dead server or network path becomes
// an error rather than a hang, and turns the ways Postgres can be
// unreachable into one-line errors that say what to do. [OpenMigrated] is
// the programs' start-up step: a pool whose schema is current.
package database

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultURL is the DSN used when neither --database-url nor
// HERALD_DATABASE_URL is set: local Postgres as user postgres.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/herald?sslmode=disable"

// EnvURL is the environment variable that overrides DefaultURL.
const EnvURL = "HERALD_DATABASE_URL"

// StartHint tells a person how to start the local Postgres this project
// expects. It ends every "unreachable" error.
const StartHint = "start Postgres (for example: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start) or point --database-url / " + EnvURL + " at a running server"

// Options tune Open. The zero value is ready to use.
type Options struct {
	// MaxConns caps the pool. Defaults to pgxpool's default (the larger of 4
	// and the number of CPUs). Zero means the default.
	MaxConns int32
	// MinConns is how many connections the pool makes in the background
	// as it opens and keeps open when idle. Defaults to 0: connections are
	// made as they are needed.
	MinConns int32
	// AfterConnect, when set, runs on every new connection before the pool
	// hands it out, as WarmHistory does; an error discards the connection.
	AfterConnect func(context.Context, *pgx.Conn) error
	// CreateDatabase creates the database named in the DSN when it does not
	// exist. Herald's programs set it; tests create their own databases.
	CreateDatabase bool
	// Timeouts bound the waits of the pool's connections. The zero value
	// is the defaults (see Timeouts).
	Timeouts Timeouts
	// QueryExecMode is how the pool's connections run statements. Zero
	// leaves it to the URL's default_query_exec_mode, else pgx's default,
	// pgx.QueryExecModeCacheStatement: each statement is prepared once per
	// connection, and after five runs Postgres may keep one generic plan
	// for it. The relay's sources need pgx.QueryExecModeCacheDescribe
	// (relay.SourceQueryExecMode).
	QueryExecMode pgx.QueryExecMode
	// ApplicationName is the application_name of the pool's connections,
	// which pg_stat_activity shows: Herald's programs give their own
	// ("herald-api", "herald-dispatcher"), so that an operator can count
	// each program's connections. An application_name in the URL wins.
	// Empty leaves it to the URL or libpq's PGAPPNAME.
	ApplicationName string
}

// ParseURL checks a DSN and returns pgxpool's configuration for it, with an
// error that names the problem when the DSN is malformed.
func ParseURL(dsn string) (*pgxpool.Config, error) {
	if strings.TrimSpace(dsn) == "" {
		return nil, fmt.Errorf("database URL is empty; set --database-url or %s, e.g. %s", EnvURL, DefaultURL)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's message may quote the DSN with its password; say only what is wrong.
		return nil, fmt.Errorf("database URL is not a valid Postgres URL or DSN (expected e.g. %s): %s", DefaultURL, redactParseError(err))
	}
	return cfg, nil
}

// Open connects to Postgres and checks the connection with a ping. With
// Options.CreateDatabase it first creates the database when it is missing.
// The pool's connections, and those opened from its Config().ConnConfig,
// have their waits bounded by Options.Timeouts.
func Open(ctx context.Context, dsn string, opts Options) (*pgxpool.Pool, error) {
	cfg, err := ParseURL(dsn)
	if err != nil {
		return nil, err
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	cfg.MinConns = min(opts.MinConns, cfg.MaxConns)
	if opts.QueryExecMode != 0 {
		cfg.ConnConfig.DefaultQueryExecMode = opts.QueryExecMode
	}
	opts.Timeouts.apply(cfg)
	if opts.ApplicationName != "" && !urlSets(&cfg.ConnConfig.Config, "application_name") {
		cfg.ConnConfig.RuntimeParams["application_name"] = opts.ApplicationName
	}
	cfg.BeforeClose = closeWithin(BrokenCloseTimeout)
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		registerUUID(conn.TypeMap())
		if opts.AfterConnect != nil {
			return opts.AfterConnect(ctx, conn)
		}
		return nil
	}
	pool, err := connect(ctx, cfg)
	if err != nil && opts.CreateDatabase && isMissingDatabase(err) {
		if err := createDatabase(ctx, cfg.ConnConfig); err != nil {
			return nil, err
		}
		pool, err = connect(ctx, cfg)
	}
	if err != nil {
		return nil, describe(cfg.ConnConfig, err)
	}
	return pool, nil
}

func connect(ctx context.Context, cfg *pgxpool.Config) (*pgxpool.Pool, error) {
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

// createDatabase connects to the server's "postgres" database and creates
// the one the DSN names. A concurrent creator winning the race is fine.
func createDatabase(ctx context.Context, target *pgx.ConnConfig) error {
	admin := target.Copy()
	admin.Database = "postgres"
	conn, err := pgx.ConnectConfig(ctx, admin)
	if err != nil {
		return describe(target, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{target.Database}.Sanitize())
	var pgErr *pgconn.PgError
	// Programs started together (make run) race to create it: the loser
	// gets duplicate_database, or a unique violation on pg_database when
	// both passed the existence check inside CREATE DATABASE at once.
	if errors.As(err, &pgErr) && (pgErr.Code == "42P04" || pgErr.Code == "23505") {
		return nil
	}
	if err != nil {
		return fmt.Errorf("database %q does not exist and could not be created on %s: %w", target.Database, where(target), err)
	}
	return nil
}

func isMissingDatabase(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "3D000" // invalid_catalog_name
}

// describe turns a connection error into one line that says where Herald
// tried and what to do next.
func describe(cfg *pgx.ConnConfig, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "3D000":
			return fmt.Errorf("database %q does not exist on %s; create it or let Herald create it (run with --migrate)", cfg.Database, where(cfg))
		case "28000", "28P01":
			return fmt.Errorf("Postgres at %s refused user %q: %s; check the user and password in --database-url / %s", where(cfg), cfg.User, pgErr.Message, EnvURL)
		}
		return fmt.Errorf("Postgres at %s: %s (SQLSTATE %s)", where(cfg), pgErr.Message, pgErr.Code)
	}
	var netErr net.Error
	var opErr *net.OpError
	if errors.As(err, &opErr) || errors.As(err, &netErr) || errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "connect") {
		return fmt.Errorf("cannot reach Postgres at %s (%s); %s", where(cfg), rootCause(err), StartHint)
	}
	return fmt.Errorf("Postgres at %s: %w", where(cfg), err)
}

func where(cfg *pgx.ConnConfig) string {
	return fmt.Sprintf("%s:%d/%s", cfg.Host, cfg.Port, cfg.Database)
}

// rootCause keeps the innermost message ("connect: connection refused") and
// drops the layers pgx adds around it, which repeat the address once per
// address tried.
func rootCause(err error) string {
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Err != nil {
		return opErr.Op + ": " + opErr.Err.Error()
	}
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return msg
}

func redactParseError(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		return msg[i+2:]
	}
	return msg
}
