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
// tries to lead again.
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

	l, err := d.tryLead(ctx)
	require.NoError(t, err)
	require.NotNil(t, l, "no other dispatcher leads")
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

// The fan-out drains at a notification, once more a window and a margin
// later for the publishes the notification silenced, and otherwise only
// every poll: nothing polls fast while publishes keep coming.
func TestWakeScheduleDrainsAtNotificationsAndAfterTheirWindow(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	followUp := outbox.NotifyWindow + followUpMargin
	w := wakeSchedule{poll: time.Second}

	w.drained(at(0))
	require.Equal(t, time.Second, w.wait(at(0)), "idle: the next drain is a poll away")
	require.Equal(t, 400*time.Millisecond, w.wait(at(600*time.Millisecond)))

	w.notified(at(time.Second))
	w.drained(at(time.Second + time.Millisecond))
	require.Equal(t, followUp-time.Millisecond, w.wait(at(time.Second+time.Millisecond)), "the follow-up is due a window and a margin after the notification")

	// Another notification before the follow-up moves it on.
	w.notified(at(time.Second + 15*time.Millisecond))
	w.drained(at(time.Second + 16*time.Millisecond))
	require.Equal(t, followUp-time.Millisecond, w.wait(at(time.Second+16*time.Millisecond)))

	// The follow-up drain ends it; the poll is next.
	end := time.Second + 15*time.Millisecond + followUp
	w.drained(at(end))
	require.Equal(t, time.Second, w.wait(at(end)))
	require.Zero(t, w.wait(at(end+2*time.Second)), "an overdue poll drains at once")
}

func TestWakeScheduleHoldsANotificationBackForTheRestOfDrainCoalesce(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	w := wakeSchedule{poll: time.Second, coalesce: 100 * time.Millisecond}
	w.drained(t0)
	require.Equal(t, 70*time.Millisecond, w.holdBack(t0.Add(30*time.Millisecond)))
	require.Zero(t, w.holdBack(t0.Add(150*time.Millisecond)), "after a quiet spell a notification drains at once")
	require.Zero(t, (&wakeSchedule{poll: time.Second}).holdBack(t0), "off by default")
}
