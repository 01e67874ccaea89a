package dispatcher_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/dispatcher"
	"github.com/heraldhq/herald/internal/webhooktest"
	"github.com/heraldhq/herald/store"
)

// An endpoint limited to 1 request per second, a backlog larger than the
// run, and three dispatchers, two of which are stopped and started again
// while they drain it. However the jobs are spread between them, and
// whichever of them restarted, the receiver sees no one-second window with
// more than 2 requests, and 1 request per second on average (within 10%).
func TestRateLimitHoldsAcrossDispatchersAndRestarts(t *testing.T) {
	t.Parallel()
	const (
		perSecond = 1.0
		run       = 36 * time.Second
		backlog   = 60
	)
	b, ctx := setup(t)
	r := webhooktest.NewReceiver(t, webhooktest.Status(200))
	_, err := b.store.CreateEndpoint(ctx, store.NewEndpoint{TenantID: tenant, URL: r.URL, RateLimit: perSecond})
	require.NoError(t, err)

	stops := []func(){
		b.start(t, dispatcher.Config{}),
		b.start(t, dispatcher.Config{}),
		b.start(t, dispatcher.Config{}),
	}
	for range backlog {
		b.publish(t, ctx, event("invoice.paid"))
	}
	require.Eventually(t, func() bool { return r.Count() > 0 }, 20*time.Second, 10*time.Millisecond, "the first delivery arrives")
	first := r.Requests()[0].Received

	// Each restart stops a dispatcher and starts a new one in its place,
	// with a fresh process's state and a pool of its own.
	for _, restart := range []struct {
		at      time.Duration
		replica int
	}{{6 * time.Second, 1}, {14 * time.Second, 2}, {22 * time.Second, 1}, {28 * time.Second, 2}} {
		time.Sleep(time.Until(first.Add(restart.at)))
		stops[restart.replica]()
		stops[restart.replica] = b.start(t, dispatcher.Config{})
	}
	time.Sleep(time.Until(first.Add(run)))

	var arrivals []time.Time
	for _, req := range r.Requests() {
		if req.Received.Before(first.Add(run)) {
			arrivals = append(arrivals, req.Received)
		}
	}
	require.Less(t, len(arrivals), backlog, "the backlog outlasts the run, so the limit alone sets the pace")
	busiest, busiestAt := 0, time.Duration(0)
	for i, start := range arrivals {
		n := 0
		for _, at := range arrivals[i:] {
			if at.Sub(start) < time.Second {
				n++
			}
		}
		if n > busiest {
			busiest, busiestAt = n, start.Sub(first)
		}
	}
	rate := float64(len(arrivals)) / run.Seconds()
	t.Logf("%d requests in %s (%.2f/s); busiest one-second window: %d requests, from %s", len(arrivals), run, rate, busiest, busiestAt)
	require.LessOrEqual(t, busiest, 2, "requests in the one-second window from %s", busiestAt)
	require.InDelta(t, perSecond, rate, perSecond/10, "requests per second over %s: %d", run, len(arrivals))
}
