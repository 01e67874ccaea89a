// Package producer installs the producer's side of split mode: the outbox
// alone, in a producer's own database, from which Herald's dispatcher
// relays messages into Herald's database (package relay).
//
// It creates, in the Postgres schema "herald" (migrations.Schema), the
// table of messages waiting to be relayed (herald.outbox), the objects'
// versions (herald.object_versions), the idempotency keys claimed
// (herald.publish_idempotency_keys) and the publishing functions under the
// names Herald's own database has them: herald.try_publish_many (what
// outbox.Publish and outbox.PublishMany call), herald.publish and
// herald.publish_many. A producer therefore publishes with the same calls
// in either mode; which database its transaction is on decides where the
// message goes. Nothing else is created: no deliveries, attempts or jobs.
//
// A database holds either Herald's schema (package migrations) or the
// producer's, never both: Apply refuses a database with Herald's schema,
// and migrations.Apply refuses one with the producer's.
//
// Install it once from the producer's program at start:
//
//	if err := producer.Apply(ctx, pool); err != nil { … }
//
// or let the dispatcher do it: with --migrate (the default) it applies
// Apply to every --source-database-url it relays from.
package producer

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/migrations"
)

// VersionTable records the producer migrations applied. Its name differs
// from Herald's herald.schema_migrations, so each set can tell that the
// other is installed.
const VersionTable = migrations.Schema + ".producer_schema_migrations"

// advisoryLockKey serialises producer migrations across processes
// ("herald" in ASCII, plus one: Herald's own set uses the key without it).
const advisoryLockKey int64 = 0x686572616c64 + 1

//go:embed *.sql
var files embed.FS

// All returns the producer's migrations in version order.
func All() ([]migrations.Migration, error) {
	return migrations.Load(files, "producer migration", "0001_outbox.sql")
}

// Fingerprint is a hash of every producer migration; test helpers name
// template databases with it.
func Fingerprint() string {
	all, err := All()
	if err != nil {
		return "invalid"
	}
	return migrations.FingerprintOf(all)
}

// ErrHeraldDatabase means the database holds Herald's own schema: a
// producer in single mode publishes there directly, and split mode needs a
// database without it.
var ErrHeraldDatabase = errors.New("this database holds Herald's own schema (herald.schema_migrations); in single-database mode publish there directly, and in split mode install the producer's outbox in the producer's own database")

// ErrPending means the producer's outbox is missing or older than this
// build's.
var ErrPending = errors.New("the producer's outbox is not installed or not current")

// Apply installs or upgrades the producer's outbox. Pending migrations run
// in one transaction under an advisory lock, so concurrent callers are
// safe and a failing migration changes nothing. Calling it on a current
// database does nothing. It returns an error wrapping ErrHeraldDatabase,
// changing nothing, when the database holds Herald's own schema.
func Apply(ctx context.Context, pool *pgxpool.Pool) error {
	all, err := All()
	if err != nil {
		return err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("install the producer's outbox: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", advisoryLockKey); err != nil {
		return fmt.Errorf("install the producer's outbox: take advisory lock: %w", err)
	}
	defer func() {
		// A fresh context: the unlock must run even when ctx was cancelled.
		_, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", advisoryLockKey)
	}()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("install the producer's outbox: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var herald bool
	if err := tx.QueryRow(ctx, heraldVersionTableExists).Scan(&herald); err != nil {
		return fmt.Errorf("install the producer's outbox: %w", err)
	}
	if herald {
		return fmt.Errorf("install the producer's outbox: %w", ErrHeraldDatabase)
	}
	if _, err := tx.Exec(ctx, createSchema); err != nil {
		return fmt.Errorf("install the producer's outbox: create schema %s: %w", migrations.Schema, err)
	}
	if err := migrations.ApplyPending(ctx, tx, VersionTable, "producer migration", all, math.MaxInt); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("install the producer's outbox: commit: %w", err)
	}
	return nil
}

// Check reports whether the producer's outbox is installed and current:
// an error wrapping ErrPending when not, or ErrHeraldDatabase when the
// database holds Herald's own schema instead.
func Check(ctx context.Context, db Querier) error {
	var herald, producer bool
	if err := db.QueryRow(ctx, versionTablesExist).Scan(&herald, &producer); err != nil {
		return fmt.Errorf("check the producer's outbox: %w", err)
	}
	if herald {
		return ErrHeraldDatabase
	}
	if !producer {
		return fmt.Errorf("%w: %s does not exist; install it with producer.Apply (package migrations/producer) or start the dispatcher with --migrate", ErrPending, VersionTable)
	}
	all, err := All()
	if err != nil {
		return err
	}
	rows, err := db.Query(ctx, selectVersions)
	if err != nil {
		return fmt.Errorf("check the producer's outbox: %w", err)
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return fmt.Errorf("check the producer's outbox: %w", err)
	}
	if len(versions) < len(all) {
		return fmt.Errorf("%w: %d of %d producer migrations applied; run producer.Apply or start the dispatcher with --migrate", ErrPending, len(versions), len(all))
	}
	return nil
}

// Querier is a pool, a connection or a transaction.
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

const (
	createSchema             = `CREATE SCHEMA IF NOT EXISTS ` + migrations.Schema
	heraldVersionTableExists = `SELECT to_regclass('` + migrations.Schema + `.schema_migrations') IS NOT NULL`
	versionTablesExist       = `SELECT to_regclass('` + migrations.Schema + `.schema_migrations') IS NOT NULL, to_regclass('` + VersionTable + `') IS NOT NULL`
	selectVersions           = `SELECT version FROM ` + VersionTable
)
