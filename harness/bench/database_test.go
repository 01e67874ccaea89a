package bench_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/harness/bench"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/scratchdb"
)

// Every New is a fresh clone of the migrated template; a second bench on
// the same name is refused; Close leaves nothing behind.
func TestScratchDatabasesAreFreshAndExclusive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	server := pgtest.Server(t)
	name := scratchdb.UniqueName("herald_bench_test_")
	url := server.URL(name)
	dbs, err := bench.NewScratchDatabases(url)
	require.NoError(t, err)

	first, drop, err := dbs.New(ctx)
	require.NoError(t, err)
	require.Equal(t, url, first)
	exec(t, first, "INSERT INTO herald.tenants (id) VALUES ('acme')")
	require.NoError(t, drop())
	second, drop, err := dbs.New(ctx)
	require.NoError(t, err)
	require.Zero(t, count(t, second, "SELECT count(*) FROM herald.tenants"), "each scenario starts from the template")

	other, err := bench.NewScratchDatabases(url)
	require.NoError(t, err)
	_, _, err = other.New(ctx)
	require.ErrorContains(t, err, "another bench is using scratch database "+`"`+name+`"`)
	require.NoError(t, other.Close(ctx))

	require.NoError(t, drop())
	require.NoError(t, dbs.Close(ctx))
	require.Zero(t, count(t, server.AdminURL(), "SELECT count(*) FROM pg_database WHERE starts_with(datname, '"+name+"')"),
		"the scratch database and its template are dropped")
}

func exec(t *testing.T, url, sql string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(context.Background(), sql)
	require.NoError(t, err)
}

func count(t *testing.T, url, sql string) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var n int
	require.NoError(t, conn.QueryRow(context.Background(), sql).Scan(&n))
	return n
}

// The split scenarios' producer database goes on the server
// SetProducerServer names, with the producer's outbox, and Close drops it
// there. (A second URL for the test server stands in for another server.)
func TestScratchDatabasesPutTheProducerOnItsServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	server := pgtest.Server(t)
	name := scratchdb.UniqueName("herald_bench_test_")
	dbs, err := bench.NewScratchDatabases(server.URL(name))
	require.NoError(t, err)
	require.ErrorContains(t, dbs.SetProducerServer("postgres://[::1"), "producer server: database URL is not a valid Postgres URL")
	require.NoError(t, dbs.SetProducerServer(server.AdminURL()))

	url, drop, err := dbs.NewProducer(ctx)
	require.NoError(t, err)
	require.Equal(t, server.URL(name+"_producer"), url)
	require.Zero(t, count(t, url, "SELECT count(*) FROM herald.outbox"), "the producer's outbox is installed")
	require.NoError(t, drop())
	_, _, err = dbs.NewProducer(ctx)
	require.NoError(t, err)
	require.NoError(t, dbs.Close(ctx))
	require.Zero(t, count(t, server.AdminURL(), "SELECT count(*) FROM pg_database WHERE starts_with(datname, '"+name+"')"),
		"Close drops the producer database on its server")
}
