package dispatcher_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/dispatcher"
	"github.com/heraldhq/herald/internal/webhooktest"
)

// One endpoint in ten hangs until the request times out. The in-flight cap
// keeps the hanging endpoints from holding more than cap workers each, so
// the others keep every remaining worker: all their deliveries succeed, at
// the first attempt, before a single hanging request has even timed out.
// Without the cap the hanging endpoints' 30 deliveries would soon occupy all
// 16 workers until their requests time out.
func TestSlowEndpointsDoNotDelayOthers(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	const (
		endpoints = 20
		hanging   = 2
		messages  = 15
		workers   = 16
		capacity  = 2
	)
	var hangingIDs []uuid.UUID
	var hangingReceivers []*webhooktest.Receiver
	for i := range endpoints {
		if i%(endpoints/hanging) == 0 {
			r := webhooktest.NewReceiver(t, webhooktest.Hang())
			id, _ := b.endpoint(t, ctx, tenant, r.URL)
			hangingIDs = append(hangingIDs, id)
			hangingReceivers = append(hangingReceivers, r)
			continue
		}
		b.endpoint(t, ctx, tenant, webhooktest.NewReceiver(t, webhooktest.Status(200)).URL)
	}
	b.start(t, dispatcher.Config{
		Workers:       workers,
		ShutdownGrace: 100 * time.Millisecond,
		Delivery:      delivery.Config{Timeout: 5 * time.Second, MaxInflightPerEndpoint: capacity},
	})
	for range messages {
		b.publish(t, ctx, event("invoice.paid"))
	}

	healthy := messages * (endpoints - hanging)
	b.waitSucceeded(t, ctx, healthy, 60*time.Second)

	var hangingAttempts, healthyRetries int
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM herald.attempts WHERE endpoint_id = ANY ($1)", hangingIDs).Scan(&hangingAttempts))
	require.Zero(t, hangingAttempts, "every healthy delivery must arrive before the first hanging request times out")
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM herald.deliveries WHERE status = 'succeeded' AND attempt_count <> 1").Scan(&healthyRetries))
	require.Zero(t, healthyRetries, "healthy deliveries succeed at the first attempt")
	for i, r := range hangingReceivers {
		require.Positive(t, r.Inflight(), "hanging endpoint %d must still hold requests while the others finished", i)
		require.LessOrEqual(t, r.PeakInflight(), capacity, "hanging endpoint %d held more requests than the cap", i)
	}
}
