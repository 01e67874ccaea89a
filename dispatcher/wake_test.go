package dispatcher

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

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
