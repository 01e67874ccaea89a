package dispatcher_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/dispatcher"
	"github.com/heraldhq/herald/internal/webhooktest"
)

// One endpoint in ten hangs, after answering its first request (an
// endpoint that has not answered gets one attempt at a time; one that has
// gets the cap). The in-flight cap keeps each hanging endpoint from holding
// more than capacity workers, so the others keep every remaining worker:
// all their deliveries succeed, at the first attempt, while the hanging
// endpoints still hold their requests. Without the cap the hanging
// endpoints' 18 deliveries soon occupy all 16 workers and the healthy
// deliveries queued behind them wait.
//
// The hanging receivers answer when the test releases them, not when the
// sender's timeout fires: whether the healthy deliveries beat a timeout is a
// race against the machine's speed, whereas "delivered while the others
// hang" is an ordering. TestWorkerTimeout covers the timeout itself.
func TestSlowEndpointsDoNotDelayOthers(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	const (
		endpoints = 20
		hanging   = 2
		messages  = 10
		workers   = 16
		capacity  = 2
	)
	release := make(chan struct{})
	hang := func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			w.WriteHeader(http.StatusOK)
			return
		}
		select {
		case <-release:
			w.WriteHeader(http.StatusOK)
		case <-r.Context().Done():
		}
	}
	var hangingIDs []uuid.UUID
	var hangingReceivers []*webhooktest.Receiver
	for i := range endpoints {
		if i%(endpoints/hanging) == 0 {
			r := webhooktest.NewReceiver(t, hang)
			id, _ := b.endpoint(t, ctx, tenant, r.URL)
			hangingIDs = append(hangingIDs, id)
			hangingReceivers = append(hangingReceivers, r)
			continue
		}
		b.endpoint(t, ctx, tenant, webhooktest.NewReceiver(t, webhooktest.Status(200)).URL)
	}
	b.start(t, dispatcher.Config{
		Workers:  workers,
		Delivery: delivery.Config{Timeout: time.Minute, MaxInflightPerEndpoint: capacity},
	})
	// The first message reaches every endpoint; the rest then find the
	// hanging endpoints answering, with their whole cap.
	b.publish(t, ctx, event("invoice.paid"))
	b.waitSucceeded(t, ctx, endpoints, time.Minute)
	for range messages - 1 {
		b.publish(t, ctx, event("invoice.paid"))
	}

	healthy := messages*(endpoints-hanging) + hanging
	b.waitSucceeded(t, ctx, healthy, 2*time.Minute)
	var hangingAttempts, retried int
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM herald.attempts WHERE endpoint_id = ANY ($1)", hangingIDs).Scan(&hangingAttempts))
	require.Equal(t, hanging, hangingAttempts, "every healthy delivery must arrive while the hanging endpoints still hold the requests after their first")
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM herald.deliveries WHERE status = 'succeeded' AND attempt_count <> 1").Scan(&retried))
	require.Zero(t, retried, "healthy deliveries succeed at the first attempt")
	for i, r := range hangingReceivers {
		require.Eventually(t, func() bool { return r.PeakInflight() == capacity }, time.Minute, 10*time.Millisecond,
			"hanging endpoint %d must be held at its cap", i)
	}

	close(release)
	b.waitSucceeded(t, ctx, messages*endpoints, 2*time.Minute)
	for i, r := range hangingReceivers {
		require.LessOrEqual(t, r.PeakInflight(), capacity, "hanging endpoint %d held more requests than the cap", i)
	}
}
