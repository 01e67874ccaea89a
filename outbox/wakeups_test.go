package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/outbox"
)

// Publishes notify at most once per NotifyWindow (10 ms), and never wait for each other to
// decide: a publish while another is taking the notification skips it.
func TestWakeDispatcherNotifiesAtMostOncePerWindow(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	listener, err := b.pool.Acquire(ctx)
	require.NoError(t, err)
	defer listener.Release()
	_, err = listener.Exec(ctx, "LISTEN "+outbox.NotifyChannel)
	require.NoError(t, err)

	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	wake := func(at time.Time) {
		t.Helper()
		_, err := b.pool.Exec(ctx, "SELECT herald.wake_dispatcher($1)", at)
		require.NoError(t, err)
	}
	notified := func() bool {
		t.Helper()
		// A marker sent after the wake arrives after any notification it
		// caused: notifications arrive in commit order.
		_, err := b.pool.Exec(ctx, "SELECT pg_notify($1, 'marker')", outbox.NotifyChannel)
		require.NoError(t, err)
		waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		var got []*pgconn.Notification
		for len(got) == 0 || got[len(got)-1].Payload != "marker" {
			n, err := listener.Conn().WaitForNotification(waitCtx)
			require.NoError(t, err)
			got = append(got, n)
		}
		return len(got) > 1
	}

	wake(t0)
	require.True(t, notified(), "the first wake notifies")
	wake(t0.Add(outbox.NotifyWindow - time.Millisecond))
	require.False(t, notified(), "within the window it does not")
	wake(t0.Add(outbox.NotifyWindow))
	require.True(t, notified(), "a window later it does again")

	// A transaction taking the notification holds it until it commits;
	// another wake meanwhile neither waits nor notifies.
	taking, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = taking.Rollback(ctx) }()
	_, err = taking.Exec(ctx, "SELECT herald.wake_dispatcher($1)", t0.Add(time.Second))
	require.NoError(t, err)
	wake(t0.Add(2 * time.Second))
	require.False(t, notified(), "a wake while another transaction takes the notification skips it")
	require.NoError(t, taking.Commit(ctx))
	require.True(t, notified(), "the notification comes with the commit")
}
