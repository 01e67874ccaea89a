package database_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/database"
	"github.com/heraldhq/herald/internal/pgtest"
)

func TestOpenUnreachableSaysWhereAndHow(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	_, err := database.Open(ctx, "postgres://postgres@127.0.0.1:1/herald?sslmode=disable&connect_timeout=2", database.Options{})
	require.Error(t, err)
	msg := err.Error()
	require.Contains(t, msg, "cannot reach Postgres at 127.0.0.1:1/herald")
	require.Contains(t, msg, "pg_ctlcluster")
	require.NotContains(t, msg, "\n", "the error is one line")
}

func TestParseURLRejectsMalformed(t *testing.T) {
	t.Parallel()
	for _, dsn := range []string{"", "   ", "postgres://user:secretpw@host:notaport/db", "mysql://x"} {
		_, err := database.ParseURL(dsn)
		require.Error(t, err, "dsn %q", dsn)
		require.NotContains(t, err.Error(), "secretpw", "the password must not leak into the error")
		require.True(t, strings.Contains(err.Error(), "database URL"), "error names the setting: %v", err)
	}
}

func TestOpenCreatesMissingDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, dbName := missingDatabase(t, "herald_create")

	_, err := database.Open(ctx, url, database.Options{})
	require.ErrorContains(t, err, "does not exist", "without CreateDatabase a missing database is an error")

	pool, err := database.Open(ctx, url, database.Options{CreateDatabase: true})
	require.NoError(t, err)
	defer pool.Close()
	var name string
	require.NoError(t, pool.QueryRow(ctx, "SELECT current_database()").Scan(&name))
	require.Equal(t, dbName, name)
}

// make run starts the api and the dispatcher at once on a fresh machine;
// both find the database missing and create it.
func TestOpenCreatesMissingDatabaseConcurrently(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, _ := missingDatabase(t, "herald_create_race")

	const programs = 4
	errs := make(chan error, programs)
	for range programs {
		go func() {
			pool, err := database.Open(ctx, url, database.Options{CreateDatabase: true, MaxConns: 1})
			if err == nil {
				pool.Close()
			}
			errs <- err
		}()
	}
	for range programs {
		require.NoError(t, <-errs)
	}
}

// missingDatabase returns the URL and name of a database that does not
// exist yet, named prefix and a unique suffix, and drops it when the test
// ends.
func missingDatabase(t *testing.T, prefix string) (url, name string) {
	t.Helper()
	admin := pgtest.NewPoolFrom(t, pgtest.Empty)
	cfg := admin.Config().ConnConfig.Copy()
	cfg.Database = fmt.Sprintf("%s_%d", prefix, time.Now().UnixNano())
	t.Cleanup(func() {
		_, _ = admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{cfg.Database}.Sanitize()+" WITH (FORCE)")
	})
	return fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Host, cfg.Port, cfg.Database), cfg.Database
}

// A program's connections carry its application_name, so that
// pg_stat_activity counts them by program; one in the URL wins.
func TestOpenNamesTheApplication(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t, pgtest.Empty)
	name := func(dsn string) string {
		pool, err := database.Open(ctx, dsn, database.Options{ApplicationName: "herald-test"})
		require.NoError(t, err)
		defer pool.Close()
		var got string
		require.NoError(t, pool.QueryRow(ctx, "SELECT current_setting('application_name')").Scan(&got))
		return got
	}
	require.Equal(t, "herald-test", name(url))
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	require.Equal(t, "mine", name(url+sep+"application_name=mine"), "the URL's application_name wins")
}
