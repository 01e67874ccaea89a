// Package migrations holds Herald's database schema as embedded, numbered SQL
// files and applies it, together with River's own schema, in one call.
//
// Herald's tables and River's live in the Postgres schema "herald". Apply is
// idempotent and safe to call from several processes starting at once: it
// holds a Postgres advisory lock while it works.
package migrations

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// Schema is the Postgres schema that holds Herald's tables and River's.
const Schema = "herald"

// advisoryLockKey serialises migrations across processes. It is an arbitrary
// constant ("herald" in ASCII) that no other part of Herald uses.
const advisoryLockKey int64 = 0x686572616c64

//go:embed *.sql
var files embed.FS

// Migration is one numbered SQL file.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// All returns Herald's migrations in version order.
func All() ([]Migration, error) { return Load(files, "migration", "0001_core.sql") }

// Load reads the numbered SQL files of fsys in version order: each name
// starts with its version and an underscore, like example. set names the
// files in errors ("migration", "producer migration"). Two files of one
// version are an error.
func Load(fsys fs.FS, set, example string) ([]Migration, error) {
	entries, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, err
	}
	all := make([]Migration, 0, len(entries))
	for _, name := range entries {
		number, _, ok := strings.Cut(name, "_")
		version, err := strconv.Atoi(number)
		if !ok || err != nil {
			return nil, fmt.Errorf("%s file %q: name must start with a number and an underscore, like %s", set, name, example)
		}
		sql, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		all = append(all, Migration{Version: version, Name: strings.TrimSuffix(path.Base(name), ".sql"), SQL: string(sql)})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Version < all[j].Version })
	for i := 1; i < len(all); i++ {
		if all[i].Version == all[i-1].Version {
			return nil, fmt.Errorf("%ss %s and %s share version %d", set, all[i-1].Name, all[i].Name, all[i].Version)
		}
	}
	return all, nil
}

// Fingerprint is a hash of every embedded migration and of River's. Test
// helpers use it to name template databases, so a changed migration gets a
// fresh template.
func Fingerprint() string {
	all, err := All()
	if err != nil {
		return "invalid"
	}
	return FingerprintOf(all, fmt.Sprintf("river %d\n", len(riverMigrator(nil).AllVersions())))
}

// FingerprintOf hashes the migrations all, then more, into 16 hex digits:
// a name for a template database built from them.
func FingerprintOf(all []Migration, more ...string) string {
	h := sha256.New()
	for _, m := range all {
		fmt.Fprintf(h, "%d %s\n%s\n", m.Version, m.Name, m.SQL)
	}
	for _, s := range more {
		io.WriteString(h, s)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func riverMigrator(pool *pgxpool.Pool) *rivermigrate.Migrator[pgx.Tx] {
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{
		Schema: Schema,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		// New fails only on an invalid static configuration.
		panic(fmt.Sprintf("rivermigrate configuration: %v", err))
	}
	return m
}

// Apply brings the database up to date: River's migrations first, then
// Herald's. Herald's pending migrations run in one transaction, so a failing
// migration leaves Herald's tables as they were. Calling Apply on an
// up-to-date database does nothing.
func Apply(ctx context.Context, pool *pgxpool.Pool) error {
	return apply(ctx, pool, math.MaxInt)
}

// apply is Apply up to and including migration last.
func apply(ctx context.Context, pool *pgxpool.Pool, last int) error {
	all, err := All()
	if err != nil {
		return err
	}
	// The lock is held on a connection of its own, outside the pool, so that
	// callers waiting for it never hold pool connections the winner needs.
	lockConn, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer lockConn.Close(context.WithoutCancel(ctx))
	if _, err := lockConn.Exec(ctx, "SELECT pg_advisory_lock($1)", advisoryLockKey); err != nil {
		return fmt.Errorf("migrate: take advisory lock: %w", err)
	}
	defer func() {
		// A fresh context: the unlock must run even when ctx was cancelled.
		_, _ = lockConn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", advisoryLockKey)
	}()

	var producer bool
	if err := pool.QueryRow(ctx, producerVersionTableExists).Scan(&producer); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if producer {
		return ErrProducerDatabase
	}
	if _, err := pool.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+Schema); err != nil {
		return fmt.Errorf("migrate: create schema %s: %w", Schema, err)
	}
	if _, err := riverMigrator(pool).Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("migrate river: %w", err)
	}

	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if err := ApplyPending(ctx, tx, versionTable, "migration", all, last); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("migrate: commit: %w", err)
	}
	return nil
}

// ErrProducerDatabase means the database holds a producer's outbox of
// split mode (package migrations/producer), which Herald's relay reads: a
// database holds one or the other, never both.
var ErrProducerDatabase = errors.New("migrate: this database holds a producer's outbox for split mode (herald.producer_schema_migrations); give Herald a database of its own and relay from this one with --source-database-url")

// ErrPending means the database lacks migrations this build has.
var ErrPending = errors.New("database migrations are not current")

// Check reports whether every migration this build embeds has been applied,
// River's included. It returns an error wrapping ErrPending when not; the
// readiness endpoint uses it.
func Check(ctx context.Context, pool *pgxpool.Pool) error {
	all, err := All()
	if err != nil {
		return err
	}
	var exists bool
	if err := pool.QueryRow(ctx, versionTableExists).Scan(&exists); err != nil {
		return fmt.Errorf("check migrations: %w", err)
	}
	if !exists {
		return fmt.Errorf("%w: schema %s has no migrations; start Herald with migrations enabled", ErrPending, Schema)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("check migrations: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	applied, err := Applied(ctx, tx, versionTable, "migration")
	if err != nil {
		return err
	}
	for _, m := range all {
		if !applied[m.Version] {
			return fmt.Errorf("%w: %s is not applied", ErrPending, m.Name)
		}
	}
	river := riverMigrator(pool)
	existing, err := river.ExistingVersions(ctx)
	if err != nil {
		return fmt.Errorf("check river migrations: %w", err)
	}
	if want := len(river.AllVersions()); len(existing) < want {
		return fmt.Errorf("%w: River has %d of %d migrations", ErrPending, len(existing), want)
	}
	return nil
}

// ApplyPending runs in tx, in order, each migration of all up to version
// last that versionTable (created when missing) does not record, and
// records it. set names the migrations in errors ("migration", "producer
// migration"). On an error the caller rolls tx back and nothing changes.
// Herald's Apply and the producer's (package migrations/producer) share
// it.
func ApplyPending(ctx context.Context, tx pgx.Tx, versionTable, set string, all []Migration, last int) error {
	create := `CREATE TABLE IF NOT EXISTS ` + versionTable + ` (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)`
	if _, err := tx.Exec(ctx, create); err != nil {
		return fmt.Errorf("create %s: %w", versionTable, err)
	}
	applied, err := Applied(ctx, tx, versionTable, set)
	if err != nil {
		return err
	}
	for _, m := range all {
		if applied[m.Version] || m.Version > last {
			continue
		}
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			return fmt.Errorf("%s %s failed, nothing was changed: %w", set, m.Name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+versionTable+` (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
			return fmt.Errorf("%s %s: record version: %w", set, m.Name, err)
		}
	}
	return nil
}

// Applied returns the versions versionTable records; set names the
// migrations in errors.
func Applied(ctx context.Context, tx pgx.Tx, versionTable, set string) (map[int]bool, error) {
	rows, err := tx.Query(ctx, `SELECT version FROM `+versionTable)
	if err != nil {
		return nil, fmt.Errorf("read applied %ss: %w", set, err)
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return nil, fmt.Errorf("read applied %ss: %w", set, err)
	}
	applied := make(map[int]bool, len(versions))
	for _, v := range versions {
		applied[v] = true
	}
	return applied, nil
}

const (
	// versionTable records Herald's migrations applied.
	versionTable       = Schema + ".schema_migrations"
	versionTableExists = `SELECT to_regclass('herald.schema_migrations') IS NOT NULL`
	// producerVersionTableExists finds producer.VersionTable.
	producerVersionTableExists = `SELECT to_regclass('herald.producer_schema_migrations') IS NOT NULL`
)
