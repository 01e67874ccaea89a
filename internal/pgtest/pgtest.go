// Package pgtest gives each test its own migrated Postgres database.
//
// The first test to ask for a template builds it once (migrated, then renamed
// into place under an advisory lock, so parallel test binaries never see a
// half-built one); every test then gets a fresh database cloned from it with
// CREATE DATABASE … TEMPLATE, which takes milliseconds, and dropped when the
// test ends. Tests can therefore run in parallel without seeing each other's
// rows.
//
// The server defaults to local Postgres as user postgres; set
// HERALD_TEST_DATABASE_URL to use another. When the server is unreachable the
// test fails (never skips) with the same one-line message the programs print.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/database"
	"github.com/heraldhq/herald/migrations"
)

// EnvURL names the environment variable that points tests at a Postgres
// server. Its database part is ignored: tests make their own databases.
const EnvURL = "HERALD_TEST_DATABASE_URL"

const defaultServerURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// Template is a migrated database that tests clone.
type Template struct {
	// Name identifies the template; letters, digits and underscores.
	Name string
	// Fingerprint changes whenever Migrate would build a different schema,
	// so a stale template is never reused.
	Fingerprint string
	// Migrate builds the schema in an empty database.
	Migrate func(ctx context.Context, pool *pgxpool.Pool) error
}

// Herald is the template with Herald's migrations (River's included).
var Herald = Template{Name: "herald", Fingerprint: migrations.Fingerprint(), Migrate: migrations.Apply}

// Empty is a template with no tables, for code that migrates by itself.
var Empty = Template{Name: "empty", Fingerprint: "v1", Migrate: func(context.Context, *pgxpool.Pool) error { return nil }}

// NewPool returns a pool on a fresh database cloned from the Herald template.
// The pool is closed and the database dropped when the test ends.
func NewPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return NewPoolFrom(t, Herald)
}

// NewPoolFrom is NewPool for another template.
func NewPoolFrom(t testing.TB, tmpl Template) *pgxpool.Pool {
	t.Helper()
	url := NewDatabase(t, tmpl)
	ctx := context.Background()
	pool, err := database.Open(ctx, url, database.Options{})
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// NewDatabase clones tmpl into a fresh database and returns its URL, for
// tests that start Herald's programs as subprocesses. The database is dropped
// when the test ends; connections still open then are terminated.
func NewDatabase(t testing.TB, tmpl Template) string {
	t.Helper()
	url, drop, err := cloneTemplate(context.Background(), tmpl)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		if err := drop(); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return url
}

// NewPoolForExample is NewPool for runnable examples, which have no
// testing.TB: it returns a pool on a fresh database cloned from the Herald
// template and a function that closes the pool and drops the database.
func NewPoolForExample(ctx context.Context) (*pgxpool.Pool, func(), error) {
	url, drop, err := cloneTemplate(ctx, Herald)
	if err != nil {
		return nil, nil, fmt.Errorf("pgtest: %w", err)
	}
	pool, err := database.Open(ctx, url, database.Options{})
	if err != nil {
		_ = drop()
		return nil, nil, fmt.Errorf("pgtest: %w", err)
	}
	return pool, func() { pool.Close(); _ = drop() }, nil
}

// cloneTemplate creates a database from tmpl and returns its URL and a
// function that drops it, terminating connections still open.
func cloneTemplate(ctx context.Context, tmpl Template) (string, func() error, error) {
	server, err := server()
	if err != nil {
		return "", nil, err
	}
	templateName, err := ensureTemplate(ctx, server, tmpl)
	if err != nil {
		return "", nil, fmt.Errorf("template %s: %w", tmpl.Name, err)
	}
	name := "herald_test_" + randomSuffix()
	if err := adminExec(ctx, server, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s",
		pgx.Identifier{name}.Sanitize(), pgx.Identifier{templateName}.Sanitize())); err != nil {
		return "", nil, fmt.Errorf("create test database: %w", err)
	}
	drop := func() error {
		if err := adminExec(context.Background(), server, fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)",
			pgx.Identifier{name}.Sanitize())); err != nil {
			return fmt.Errorf("drop test database %s: %w", name, err)
		}
		return nil
	}
	cfg := server.Copy()
	cfg.Database = name
	return connString(cfg), drop, nil
}

var (
	serverOnce sync.Once
	serverCfg  *pgx.ConnConfig
	serverErr  error

	templatesMu sync.Mutex
	templates   = map[string]string{}
)

func server() (*pgx.ConnConfig, error) {
	serverOnce.Do(func() {
		url := os.Getenv(EnvURL)
		if url == "" {
			url = defaultServerURL
		}
		cfg, err := database.ParseURL(url)
		if err != nil {
			serverErr = fmt.Errorf("%s: %w", EnvURL, err)
			return
		}
		serverCfg = cfg.ConnConfig
		serverCfg.Database = "postgres"
		pool, err := database.Open(context.Background(), connString(serverCfg), database.Options{})
		if err != nil {
			serverErr = err
			return
		}
		pool.Close()
	})
	return serverCfg, serverErr
}

// ensureTemplate builds the template database once per fingerprint. Test
// binaries of several packages run at once, so the check and the build happen
// under an advisory lock, and the build happens under a temporary name that is
// renamed only when migrations succeeded.
func ensureTemplate(ctx context.Context, server *pgx.ConnConfig, tmpl Template) (string, error) {
	name := fmt.Sprintf("herald_tmpl_%s_%s", tmpl.Name, tmpl.Fingerprint)
	templatesMu.Lock()
	defer templatesMu.Unlock()
	if _, ok := templates[name]; ok {
		return name, nil
	}

	conn, err := pgx.ConnectConfig(ctx, server)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	h := fnv.New64a()
	h.Write([]byte(name))
	lockKey := int64(h.Sum64())
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", lockKey); err != nil {
		return "", err
	}
	defer func() { _, _ = conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", lockKey) }()

	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", err
	}
	if !exists {
		if err := buildTemplate(ctx, conn, server, tmpl, name); err != nil {
			return "", err
		}
	}
	templates[name] = name
	return name, nil
}

func buildTemplate(ctx context.Context, conn *pgx.Conn, server *pgx.ConnConfig, tmpl Template, name string) error {
	building := name + "_building"
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{building}.Sanitize()+" WITH (FORCE)"); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{building}.Sanitize()); err != nil {
		return err
	}
	cfg := server.Copy()
	cfg.Database = building
	migrateCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	pool, err := database.Open(migrateCtx, connString(cfg), database.Options{MaxConns: 4})
	if err != nil {
		return err
	}
	err = tmpl.Migrate(migrateCtx, pool)
	pool.Close()
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	_, err = conn.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s RENAME TO %s",
		pgx.Identifier{building}.Sanitize(), pgx.Identifier{name}.Sanitize()))
	return err
}

func adminExec(ctx context.Context, server *pgx.ConnConfig, sql string) error {
	conn, err := pgx.ConnectConfig(ctx, server)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

func connString(cfg *pgx.ConnConfig) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(cfg.User, cfg.Password),
		Host:     fmt.Sprintf("%s:%d", cfg.Host, cfg.Port),
		Path:     "/" + cfg.Database,
		RawQuery: "sslmode=disable",
	}
	if cfg.Password == "" {
		u.User = url.User(cfg.User)
	}
	return u.String()
}

func randomSuffix() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
