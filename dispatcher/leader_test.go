package dispatcher_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/dispatcher"
	"github.com/heraldhq/herald/internal/database"
	"github.com/heraldhq/herald/internal/webhooktest"
)

// namedPool opens a dispatcher's pool whose connections are called name in
// pg_stat_activity.
func (b *testBundle) namedPool(t *testing.T, name string) *pgxpool.Pool {
	t.Helper()
	pool, err := database.Open(context.Background(), b.url, database.Options{MaxConns: 4, ApplicationName: name})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// leaders returns the application_name of every session of the test
// database that holds the fan-out lock, by its pid.
func (b *testBundle) leaders(t *testing.T, ctx context.Context) map[int]string {
	t.Helper()
	rows, err := b.pool.Query(ctx, `SELECT a.pid, a.application_name
FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND a.application_name LIKE '%' || $1`, dispatcher.FanOutLeaderSuffix)
	require.NoError(t, err)
	defer rows.Close()
	leaders := map[int]string{}
	for rows.Next() {
		var pid int
		var name string
		require.NoError(t, rows.Scan(&pid, &name))
		leaders[pid] = name
	}
	require.NoError(t, rows.Err())
	return leaders
}

// waitLeader waits until exactly one session leads the fan-out and
// returns its pid and application_name.
func (b *testBundle) waitLeader(t *testing.T, ctx context.Context, within time.Duration) (int, string) {
	t.Helper()
	var leaders map[int]string
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if leaders = b.leaders(t, ctx); len(leaders) == 1 {
			for pid, name := range leaders {
				return pid, name
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("after %s the fan-out leaders are %v; want exactly one", within, leaders)
	return 0, ""
}

// Of three dispatchers on one database, one leads the fan-out and the
// others only work jobs: one session holds the lock, and it keeps holding
// it while the followers try every PollInterval (100 ms here).
func TestOneDispatcherLeadsTheFanOut(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	r := webhooktest.NewReceiver(t, webhooktest.Status(200))
	b.endpoint(t, ctx, tenant, r.URL)
	for _, name := range []string{"one", "two", "three"} {
		b.start(t, dispatcher.Config{Pool: b.namedPool(t, name)})
	}

	pid, name := b.waitLeader(t, ctx, 10*time.Second)
	time.Sleep(time.Second)
	require.Equal(t, map[int]string{pid: name}, b.leaders(t, ctx), "leadership stays with one session while followers try")

	message := b.publish(t, ctx, event("invoice.paid"))
	b.waitSucceeded(t, ctx, 1, 10*time.Second)
	require.Equal(t, map[string]int{headerID(message): 1}, webhookIDs(r.Requests()))
}

// A follower takes the fan-out over within seconds when the leader's lock
// connection is killed (pg_terminate_backend) or the leader stops, and
// fans out the messages published after.
func TestAFollowerTakesTheFanOutOver(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	r := webhooktest.NewReceiver(t, webhooktest.Status(200))
	b.endpoint(t, ctx, tenant, r.URL)
	stops := map[string]func(){}
	for _, name := range []string{"first", "second"} {
		stops[name+dispatcher.FanOutLeaderSuffix] = b.start(t, dispatcher.Config{Pool: b.namedPool(t, name)})
	}
	before, _ := b.waitLeader(t, ctx, 10*time.Second)

	// Killed: the session ends and its lock with it.
	var terminated bool
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT pg_terminate_backend($1)", before).Scan(&terminated))
	require.True(t, terminated)
	require.Eventually(t, func() bool {
		leaders := b.leaders(t, ctx)
		_, old := leaders[before]
		return len(leaders) == 1 && !old
	}, 10*time.Second, 20*time.Millisecond, "a new session leads after the leader's was killed")
	afterKill := b.publish(t, ctx, event("invoice.paid"))
	b.waitSucceeded(t, ctx, 1, 10*time.Second)

	// Stopped: the other dispatcher takes over.
	_, leader := b.waitLeader(t, ctx, time.Second)
	stops[leader]()
	start := time.Now()
	require.Eventually(t, func() bool {
		leaders := b.leaders(t, ctx)
		for _, name := range leaders {
			return len(leaders) == 1 && name != leader
		}
		return false
	}, 10*time.Second, 20*time.Millisecond, "the follower leads once the leader stopped")
	t.Logf("the follower took over %s after the leader stopped", time.Since(start).Round(time.Millisecond))
	afterStop := b.publish(t, ctx, event("invoice.paid"))
	b.waitSucceeded(t, ctx, 2, 10*time.Second)
	require.Equal(t, map[string]int{headerID(afterKill): 1, headerID(afterStop): 1}, webhookIDs(r.Requests()))
}
