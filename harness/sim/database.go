package sim

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/receiver"
)

// NewDatabase returns the URL of a fresh, empty Postgres database named
// after name (letters, digits and underscores). Every handler design and
// crash design gets its own. The caller creates and later drops the
// databases: a test through internal/pgtest, cmd/sim through
// internal/scratchdb.
type NewDatabase func(ctx context.Context, name string) (url string, err error)

// defaultConnections is Config.Connections when it is zero. The racing
// sender has up to about a dozen requests in flight per design; four
// connections keep them racing inside Postgres while six designs side by
// side stay well within a shared server's connection limit.
const defaultConnections = 4

// Migrate creates the receiver module's tables and the simulated
// consumer's in the database pool points at. It is idempotent.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	if err := receiver.Migrate(ctx, pool); err != nil {
		return err
	}
	if _, err := pool.Exec(ctx, createTables); err != nil {
		return fmt.Errorf("create simulation tables: %w", err)
	}
	return nil
}

// openFresh opens a pool on a new database, migrates it and creates the
// accounts.
func openFresh(ctx context.Context, newDB NewDatabase, name string, c Config) (*pgxpool.Pool, error) {
	url, err := newDB(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("database %s: %w", name, err)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("database %s: %w", name, err)
	}
	cfg.MaxConns = int32(c.connections())
	// Committed work stays visible to every session and a dropped
	// connection still rolls back; only a server crash could lose a
	// commit, and no experiment crashes the server. Not waiting for the
	// WAL flush keeps a shared machine's disk out of the timings.
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("database %s: %w", name, err)
	}
	if err := Migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("database %s: %w", name, err)
	}
	if _, err := pool.Exec(ctx, insertAccounts, c.Accounts); err != nil {
		pool.Close()
		return nil, fmt.Errorf("database %s: create accounts: %w", name, err)
	}
	return pool, nil
}
