package dispatcher_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/dispatcher"
)

// Each running dispatcher keeps a heartbeat row, so replicas can divide
// rate limits between them, and removes it when it stops.
func TestDispatchersRegisterWhileRunning(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	stopFirst := b.start(t, dispatcher.Config{})
	stopSecond := b.start(t, dispatcher.Config{})

	live := func() int {
		var n int
		require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM herald.dispatchers").Scan(&n))
		return n
	}
	require.Eventually(t, func() bool { return live() == 2 }, 10*time.Second, 20*time.Millisecond)
	stopFirst()
	require.Equal(t, 1, live(), "a stopped dispatcher leaves at once")
	stopSecond()
	require.Zero(t, live())
}
