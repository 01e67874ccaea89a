package dispatcher

import (
	"context"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/blackhole"
	"github.com/heraldhq/herald/internal/database"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/outbox"
)

// A burst of publishes wakes the fan-out once: the notifications that
// follow the first are taken in with it, so one drain serves them all.
func TestTakeBurstTakesTheNotificationsOfABurst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t, pgtest.Herald)
	listener, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = listener.Close(ctx) })
	_, err = listener.Exec(ctx, "LISTEN "+outbox.NotifyChannel)
	require.NoError(t, err)
	publisher, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = publisher.Close(ctx) })

	const burst = 50
	for i := range burst {
		_, err := publisher.Exec(ctx, "SELECT pg_notify($1, $2)", outbox.NotifyChannel, strconv.Itoa(i))
		require.NoError(t, err)
	}
	_, err = listener.WaitForNotification(ctx)
	require.NoError(t, err)
	// A generous gap: the test is about counting, not about timing.
	n, err := takeBurst(ctx, listener, 1000, time.Second)
	require.NoError(t, err)
	require.Equal(t, burst-1, n)

	for i := range 5 {
		_, err := publisher.Exec(ctx, "SELECT pg_notify($1, $2)", outbox.NotifyChannel, strconv.Itoa(i))
		require.NoError(t, err)
	}
	n, err = takeBurst(ctx, listener, 3, time.Second)
	require.NoError(t, err)
	require.Equal(t, 3, n, "takes at most limit, then drains")
	n, err = takeBurst(ctx, listener, 1000, time.Second)
	require.NoError(t, err)
	require.Equal(t, 2, n, "the connection is still usable after a burst ends")
}

// A listening connection that went silent without closing (a failover
// that left it half-open) is noticed, however long the fan-out would
// wait for a notification: its wait ends in an error and the fan-out
// listens again.
func TestListenerNoticesASilentConnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u, err := url.Parse(pgtest.NewDatabase(t, pgtest.Herald))
	require.NoError(t, err)
	proxy, err := blackhole.Listen(u.Host)
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })
	u.Host = proxy.Addr()
	pool, err := database.Open(ctx, u.String(), database.Options{MaxConns: 1})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	d := &Dispatcher{pool: pool}

	l, err := d.listen(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { l.close(ctx) })
	notified, err := l.wait(ctx, 100*time.Millisecond)
	require.NoError(t, err)
	require.False(t, notified)

	proxy.BlackHole()
	start := time.Now()
	_, err = l.wait(ctx, time.Hour)
	require.Error(t, err, "a silent connection is an error, not a long wait")
	bound := listenerPingInterval + listenerTimeout + 10*time.Second // 10 s for a loaded machine
	require.Less(t, time.Since(start), bound)
}
