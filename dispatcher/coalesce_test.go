package dispatcher_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/dispatcher"
	"github.com/heraldhq/herald/internal/webhooktest"
)

// With DrainCoalesce, a trickle of publishes goes out together: the
// notifications that come within DrainCoalesce of the last drain wait out
// the rest of it, so nine publishes 10 ms apart take one or two fan-outs
// (and batch jobs) instead of one each, and every one is still delivered.
func TestDrainCoalesceSendsATrickleTogether(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	r := webhooktest.NewReceiver(t, webhooktest.Status(200))
	b.endpoint(t, ctx, tenant, r.URL)
	b.start(t, dispatcher.Config{DrainCoalesce: 300 * time.Millisecond, PollInterval: 10 * time.Second})

	b.publish(t, ctx, event("invoice.paid"))
	b.waitSucceeded(t, ctx, 1, 20*time.Second)
	for range 9 {
		b.publish(t, ctx, event("invoice.paid"))
		time.Sleep(10 * time.Millisecond)
	}
	b.waitSucceeded(t, ctx, 10, 20*time.Second)

	var jobs int
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM herald.river_job WHERE kind = $1", delivery.BatchKind).Scan(&jobs))
	require.LessOrEqual(t, jobs, 3, "ten publishes went out in %d batch jobs; the nine of the trickle should go together", jobs)
	require.Len(t, r.Requests(), 10)
}
