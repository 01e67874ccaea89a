// Package pgtest gives each test its own migrated Postgres database.
//
// The first test to ask for a template builds it once (migrated, then renamed
// into place under an advisory lock, so parallel test binaries never see a
// half-built one); every test then gets a fresh database cloned from it with
// CREATE DATABASE … TEMPLATE, which takes milliseconds, and dropped when the
// test ends. Package scratchdb does the work; the bench, chaos and sim
// harnesses use it too. Tests can therefore run in parallel without seeing each other's
// rows.
//
// The server defaults to local Postgres as user postgres; set
// HERALD_TEST_DATABASE_URL to use another. When the server is unreachable the
// test fails (never skips) with the same one-line message the programs print.
package pgtest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/database"
	"github.com/heraldhq/herald/internal/scratchdb"
	"github.com/heraldhq/herald/migrations"
)

// EnvURL names the environment variable that points tests at a Postgres
// server. Its database part is ignored: tests make their own databases.
const EnvURL = "HERALD_TEST_DATABASE_URL"

const defaultServerURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// Template is a migrated database that tests clone; see scratchdb.Template.
type Template = scratchdb.Template

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

// Server returns the test server, for tests that make databases of their
// own with package scratchdb or check that a program dropped the ones it
// made.
func Server(t testing.TB) *scratchdb.Server {
	t.Helper()
	srv, err := server()
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return srv
}

// cloneTemplate creates a database from tmpl and returns its URL and a
// function that drops it, terminating connections still open.
func cloneTemplate(ctx context.Context, tmpl Template) (string, func() error, error) {
	srv, err := server()
	if err != nil {
		return "", nil, err
	}
	template, err := srv.Template(ctx, tmpl)
	if err != nil {
		return "", nil, fmt.Errorf("template %s: %w", tmpl.Name, err)
	}
	name := scratchdb.UniqueName("herald_test_")
	url, err := srv.Clone(ctx, name, template)
	if err != nil {
		return "", nil, err
	}
	return url, func() error { return srv.Drop(context.Background(), name) }, nil
}

var (
	serverOnce sync.Once
	serverVal  *scratchdb.Server
	serverErr  error
)

// server opens the test server once per test binary.
func server() (*scratchdb.Server, error) {
	serverOnce.Do(func() {
		url := os.Getenv(EnvURL)
		if url == "" {
			serverVal, serverErr = scratchdb.Open(context.Background(), defaultServerURL)
			return
		}
		if serverVal, serverErr = scratchdb.Open(context.Background(), url); serverErr != nil {
			serverErr = fmt.Errorf("%s: %w", EnvURL, serverErr)
		}
	})
	return serverVal, serverErr
}
