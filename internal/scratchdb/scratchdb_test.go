package scratchdb_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/scratchdb"
)

type testBundle struct {
	ctx    context.Context
	server *scratchdb.Server
	prefix string // of every database the test makes
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	ctx := context.Background()
	// A Server of the test's own: Created lists only what the test made.
	server, err := scratchdb.Open(ctx, pgtest.Server(t).AdminURL())
	require.NoError(t, err)
	b := &testBundle{ctx: ctx, server: server, prefix: scratchdb.UniqueName("scratchdb_test_") + "_"}
	t.Cleanup(func() { require.Empty(t, b.databases(t), "every database the test made is dropped") })
	return b
}

// databases lists the server's databases whose names start with the test's
// prefix.
func (b *testBundle) databases(t *testing.T) []string {
	t.Helper()
	conn, err := pgx.Connect(b.ctx, b.server.AdminURL())
	require.NoError(t, err)
	defer conn.Close(b.ctx)
	rows, err := conn.Query(b.ctx, "SELECT datname FROM pg_database WHERE starts_with(datname, $1) ORDER BY datname", b.prefix)
	require.NoError(t, err)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return names
}

func count(t *testing.T, url string) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var n int
	require.NoError(t, conn.QueryRow(context.Background(), "SELECT count(*) FROM things").Scan(&n))
	return n
}

func createThings(ctx context.Context, pool *pgxpool.Pool) error {
	_, err := pool.Exec(ctx, "CREATE TABLE things (id int); INSERT INTO things VALUES (1)")
	return err
}

func TestCreateCloneAndDrop(t *testing.T) {
	t.Parallel()
	b := setup(t)
	original, clone := b.prefix+"original", b.prefix+"clone"

	url, err := b.server.Create(b.ctx, original, createThings)
	require.NoError(t, err)
	require.Equal(t, 1, count(t, url))
	cloneURL, err := b.server.Clone(b.ctx, clone, original)
	require.NoError(t, err)
	require.Equal(t, 1, count(t, cloneURL), "the clone has the template's rows")
	require.Equal(t, []string{original, clone}, b.server.Created())
	require.Equal(t, []string{clone, original}, b.databases(t))

	require.NoError(t, b.server.Drop(b.ctx, clone))
	require.Equal(t, []string{original}, b.server.Created())
	require.NoError(t, b.server.DropAll(b.ctx))
	require.Empty(t, b.server.Created())
	require.Empty(t, b.databases(t))
	require.NoError(t, b.server.Drop(b.ctx, clone), "dropping a database that is gone is no error")
}

// A database left by an interrupted run is replaced, not in the way.
func TestCreateReplacesADatabaseOfTheSameName(t *testing.T) {
	t.Parallel()
	b := setup(t)
	name := b.prefix + "leftover"
	t.Cleanup(func() { require.NoError(t, b.server.Drop(b.ctx, name)) })

	url, err := b.server.Create(b.ctx, name, createThings)
	require.NoError(t, err)
	conn, err := pgx.Connect(b.ctx, url)
	require.NoError(t, err)
	defer conn.Close(b.ctx)

	_, err = b.server.Create(b.ctx, name, nil)
	require.NoError(t, err, "an open connection to the old database does not stop the new one")
	fresh, err := pgx.Connect(b.ctx, url)
	require.NoError(t, err)
	defer fresh.Close(b.ctx)
	var tables int
	require.NoError(t, fresh.QueryRow(b.ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 'things'").Scan(&tables))
	require.Zero(t, tables, "the new database is empty")
	require.Equal(t, []string{name}, b.server.Created(), "the name is listed once")
}

// Processes asking for a template at once build it once, and a built
// template is reused.
func TestTemplateIsBuiltOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var builds atomic.Int32
	tmpl := scratchdb.Template{
		Name:        "scratchdb_test",
		Fingerprint: scratchdb.UniqueName(""),
		Migrate: func(ctx context.Context, pool *pgxpool.Pool) error {
			builds.Add(1)
			return createThings(ctx, pool)
		},
	}
	var (
		wg    sync.WaitGroup
		names [3]string
		errs  [3]error
	)
	for i := range names {
		// A Server of its own each, as separate test binaries have.
		srv, err := scratchdb.Open(b.ctx, b.server.AdminURL())
		require.NoError(t, err)
		wg.Go(func() { names[i], errs[i] = srv.Template(b.ctx, tmpl) })
	}
	wg.Wait()
	t.Cleanup(func() { require.NoError(t, b.server.Drop(b.ctx, names[0])) })
	for i := range names {
		require.NoError(t, errs[i])
		require.Equal(t, "herald_tmpl_scratchdb_test_"+tmpl.Fingerprint, names[i])
	}
	require.Equal(t, int32(1), builds.Load())

	again, err := b.server.Template(b.ctx, tmpl)
	require.NoError(t, err)
	require.Equal(t, names[0], again)
	require.Equal(t, int32(1), builds.Load(), "a built template is reused")
	url, err := b.server.Clone(b.ctx, b.prefix+"from_template", again)
	require.NoError(t, err)
	require.Equal(t, 1, count(t, url))
	require.NoError(t, b.server.DropAll(b.ctx))
}

func TestTryLockFailsWhileAnotherSessionHoldsTheLock(t *testing.T) {
	t.Parallel()
	b := setup(t)
	name := b.prefix + "locked"
	first, err := b.server.TryLock(b.ctx, name)
	require.NoError(t, err)
	_, err = b.server.TryLock(b.ctx, name)
	require.ErrorIs(t, err, scratchdb.ErrLocked)

	require.NoError(t, first.Release(b.ctx))
	second, err := b.server.Lock(b.ctx, name)
	require.NoError(t, err, "a released lock can be taken again")
	require.NoError(t, second.Release(b.ctx))
}
