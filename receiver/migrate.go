package receiver

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Schema is the Postgres schema that holds the receiver's tables in the
// consumer's database: events (the inbox), claims, object_versions and
// schema_migrations. It is fixed so that every process of a consumer agrees
// on it; several senders share it, told apart by their source.
const Schema = "webhook_inbox"

// migrationLockKey serialises Migrate across processes. It is an arbitrary
// constant ("whinbox" in ASCII), distinct from Herald's own lock.
const migrationLockKey int64 = 0x7768696e626f78

//go:embed migrations/*.sql
var migrationFiles embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// Migrate creates or updates the receiver's tables in the schema
// webhook_inbox of the database db points at. Call it when the consumer
// starts, before the Handler or Worker is used.
//
// It is idempotent and safe to call from several processes at once: it works
// in one transaction under a transaction-scoped advisory lock, so a second
// caller waits and then finds nothing to do, and a failing migration changes
// nothing.
func Migrate(ctx context.Context, db DB) error {
	all, err := embeddedMigrations()
	if err != nil {
		return err
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("migrate %s: %w", Schema, err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, takeMigrationLock, migrationLockKey); err != nil {
		return fmt.Errorf("migrate %s: take advisory lock: %w", Schema, err)
	}
	if _, err := tx.Exec(ctx, createSchema); err != nil {
		return fmt.Errorf("migrate %s: create schema: %w", Schema, err)
	}
	if _, err := tx.Exec(ctx, createVersionTable); err != nil {
		return fmt.Errorf("migrate %s: create version table: %w", Schema, err)
	}
	rows, err := tx.Query(ctx, selectMigrationVersions)
	if err != nil {
		return fmt.Errorf("migrate %s: read applied versions: %w", Schema, err)
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return fmt.Errorf("migrate %s: read applied versions: %w", Schema, err)
	}
	applied := make(map[int]bool, len(versions))
	for _, v := range versions {
		applied[v] = true
	}
	for _, m := range all {
		if applied[m.version] {
			continue
		}
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return fmt.Errorf("migrate %s: %s failed, nothing was changed: %w", Schema, m.name, err)
		}
		if _, err := tx.Exec(ctx, insertMigrationVersion, m.version, m.name); err != nil {
			return fmt.Errorf("migrate %s: record %s: %w", Schema, m.name, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("migrate %s: commit: %w", Schema, err)
	}
	return nil
}

func embeddedMigrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	all := make([]migration, 0, len(names))
	for _, path := range names {
		name := strings.TrimSuffix(strings.TrimPrefix(path, "migrations/"), ".sql")
		number, _, _ := strings.Cut(name, "_")
		version, err := strconv.Atoi(number)
		if err != nil {
			return nil, fmt.Errorf("receiver migration %q: name must start with a number, like 0001_inbox.sql", path)
		}
		sql, err := migrationFiles.ReadFile(path)
		if err != nil {
			return nil, err
		}
		all = append(all, migration{version: version, name: name, sql: string(sql)})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].version < all[j].version })
	return all, nil
}
