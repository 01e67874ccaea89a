package database_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/blackhole"
	"github.com/heraldhq/herald/internal/database"
	"github.com/heraldhq/herald/internal/pgtest"
)

// emptyDatabase returns the URL of a fresh database, with query added.
func emptyDatabase(t *testing.T, query string) string {
	t.Helper()
	u, err := url.Parse(pgtest.NewDatabase(t, pgtest.Empty))
	require.NoError(t, err)
	if query != "" {
		u.RawQuery += "&" + query
	}
	return u.String()
}

func open(t *testing.T, dsn string, opts database.Options) *pgxpool.Pool {
	t.Helper()
	pool, err := database.Open(context.Background(), dsn, opts)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

func show(t *testing.T, pool *pgxpool.Pool, setting string) string {
	t.Helper()
	var value string
	require.NoError(t, pool.QueryRow(context.Background(), "SELECT current_setting($1)", setting).Scan(&value))
	return value
}

// Every session of a pool has Postgres's statement and idle-in-transaction
// timeouts, Herald's unless the URL sets its own.
func TestOpenSetsServerTimeoutsUnlessTheURLDoes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, query         string
		timeouts            database.Timeouts
		statement, idleInTx string
	}{
		{name: "defaults", statement: "1min", idleInTx: "30s"},
		{name: "set", timeouts: database.Timeouts{Statement: 1500 * time.Millisecond, IdleInTransaction: time.Second}, statement: "1500ms", idleInTx: "1s"},
		{name: "none", timeouts: database.Timeouts{Statement: -1, IdleInTransaction: -1}, statement: "0", idleInTx: "0"},
		{name: "URL parameter", query: "statement_timeout=5s", statement: "5s", idleInTx: "30s"},
		{name: "URL options", query: "options=-c%20idle_in_transaction_session_timeout%3D7s%20--statement-timeout%3D9s", statement: "9s", idleInTx: "7s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pool := open(t, emptyDatabase(t, tc.query), database.Options{Timeouts: tc.timeouts})
			require.Equal(t, tc.statement, show(t, pool, "statement_timeout"))
			require.Equal(t, tc.idleInTx, show(t, pool, "idle_in_transaction_session_timeout"))
		})
	}
}

func TestOpenBoundsConnectingAndPinging(t *testing.T) {
	t.Parallel()
	dsn := emptyDatabase(t, "")
	pool := open(t, dsn, database.Options{})
	require.Equal(t, database.DefaultConnectTimeout, pool.Config().ConnConfig.ConnectTimeout)
	require.Equal(t, database.DefaultPingTimeout, pool.Config().PingTimeout)

	pool = open(t, dsn+"&connect_timeout=3&pool_ping_timeout=4s", database.Options{Timeouts: database.Timeouts{Connect: time.Second, Ping: time.Second}})
	require.Equal(t, 3*time.Second, pool.Config().ConnConfig.ConnectTimeout, "the URL's connect_timeout wins")
	require.Equal(t, 4*time.Second, pool.Config().PingTimeout, "the URL's pool_ping_timeout wins")
}

// A connection through a proxy that went silent (a failover that left it
// half-open) costs a caller the ping timeout, not its whole deadline, and
// its place in the pool is free again soon after (BrokenCloseTimeout), so
// the pool opens one that works: with every connection dead, a caller
// gets a working one in seconds.
func TestAcquireReplacesHalfOpenConnectionsInSeconds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, proxy := proxied(t, emptyDatabase(t, ""))
	pool := open(t, dsn, database.Options{MaxConns: 3, Timeouts: database.Timeouts{Ping: time.Second}})
	conns := make([]*pgxpool.Conn, 3)
	for i := range conns {
		var err error
		conns[i], err = pool.Acquire(ctx)
		require.NoError(t, err)
	}
	for _, c := range conns {
		c.Release()
	}

	proxy.BlackHole()
	proxy.ForwardNew()
	time.Sleep(1100 * time.Millisecond) // pgxpool pings connections idle for a second
	// Three dead connections at a second each, then a new one in the
	// place the first left: well within a deadline that one dead
	// connection would use up without the ping timeout, and the 15 s
	// pgx's close holds a place without BrokenCloseTimeout.
	queryCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var one int
	require.NoError(t, pool.QueryRow(queryCtx, "SELECT 1").Scan(&one))
}

// Postgres ends the transaction of a client that went silent in the
// middle of it, so its locks do not hold others back.
func TestIdleInTransactionTimeoutReleasesAHalfOpenClientsLocks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	direct := emptyDatabase(t, "")
	dsn, proxy := proxied(t, direct)
	pool := open(t, dsn, database.Options{Timeouts: database.Timeouts{IdleInTransaction: time.Second}})
	other := open(t, direct, database.Options{})
	_, err := other.Exec(ctx, "CREATE TABLE claims (id int PRIMARY KEY); INSERT INTO claims VALUES (1)")
	require.NoError(t, err)

	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "SELECT * FROM claims WHERE id = 1 FOR UPDATE")
	require.NoError(t, err)
	proxy.BlackHole()
	t.Cleanup(func() {
		// Gives the dead connection back, so that the pool can close.
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_ = tx.Rollback(ctx)
	})

	claimed := func() bool {
		var n int
		err := pgx.BeginFunc(ctx, other, func(tx pgx.Tx) error {
			return tx.QueryRow(ctx, "SELECT count(*) FROM (SELECT FROM claims WHERE id = 1 FOR UPDATE SKIP LOCKED) c").Scan(&n)
		})
		require.NoError(t, err)
		return n == 1
	}
	require.False(t, claimed(), "the silent client still holds the row")
	require.Eventually(t, claimed, 20*time.Second, 100*time.Millisecond, "Postgres ends the silent client's transaction")
}

// proxied puts a black-hole proxy in front of the database at dsn and
// returns the URL through it.
func proxied(t *testing.T, dsn string) (string, *blackhole.Proxy) {
	t.Helper()
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	proxy, err := blackhole.Listen(u.Host)
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })
	u.Host = proxy.Addr()
	return u.String(), proxy
}
