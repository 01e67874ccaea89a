package dispatcher_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/dispatcher"
	"github.com/heraldhq/herald/internal/webhooktest"
	"github.com/heraldhq/herald/signing"
)

// verifying answers as a Standard Webhooks receiver holding secret: 400
// to a request of r whose signature or timestamp it rejects (5 minutes of
// tolerance), 200 otherwise.
func verifying(r **webhooktest.Receiver, secret *atomic.Pointer[signing.Secret]) webhooktest.Responder {
	return func(n int, w http.ResponseWriter, _ *http.Request) {
		req := (*r).Requests()[n-1]
		if err := (signing.Verifier{Secrets: []signing.Secret{*secret.Load()}}).Verify(req.Header, req.Body); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusOK)
	}
}

// A dispatcher whose clock is 10 minutes ahead of Postgres's would sign
// timestamps every receiver rejects. It refuses to send: the deliveries,
// batched or alone, wait unsent and uncharged, each deferral counted and
// the skew shown, until its clock is right; then they go out and verify.
func TestSkewedClockRefusesToSend(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	var skew atomic.Int64
	skew.Store(int64(10 * time.Minute))
	now := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	var (
		secret atomic.Pointer[signing.Secret]
		r      *webhooktest.Receiver
	)
	r = webhooktest.NewReceiver(t, verifying(&r, &secret))
	endpoint, s := b.endpoint(t, ctx, tenant, r.URL)
	secret.Store(&s)
	// Three messages published before the dispatcher starts go in one
	// batch job, the one after in a job of its own.
	for range 3 {
		b.publish(t, ctx, event("invoice.paid"))
	}
	metrics := prometheus.NewRegistry()
	b.start(t, dispatcher.Config{Delivery: delivery.Config{Now: now}, Registerer: metrics, ClockCheckInterval: 100 * time.Millisecond})
	b.publish(t, ctx, event("invoice.paid"))

	require.Eventually(t, func() bool {
		return metric(t, metrics, "herald_dispatcher_faults_total", "cause", "clock_skew") >= 2
	}, 30*time.Second, 20*time.Millisecond, "both jobs are deferred")
	require.InDelta(t, (10 * time.Minute).Seconds(), metric(t, metrics, "herald_dispatcher_clock_skew_seconds"), 5)
	require.Zero(t, r.Count(), "nothing was sent")
	var charged int
	var failingSince *time.Time
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE attempt_count > 0 OR first_attempt_at IS NOT NULL)
FROM herald.deliveries WHERE endpoint_id = $1`, endpoint).Scan(&charged))
	require.Zero(t, charged, "no attempt was charged")
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT failing_since FROM herald.endpoints WHERE id = $1", endpoint).Scan(&failingSince))
	require.Nil(t, failingSince, "the endpoint's failing spell has not started")

	skew.Store(0)
	b.waitSucceeded(t, ctx, 4, time.Minute)
	require.InDelta(t, 0, metric(t, metrics, "herald_dispatcher_clock_skew_seconds"), 5)
	reqs := r.Requests()
	require.Len(t, reqs, 4, "each delivery was sent once")
	for _, req := range reqs {
		require.NoError(t, signing.Verifier{Secrets: []signing.Secret{s}}.Verify(req.Header, req.Body))
	}
	var attempts int
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM herald.attempts WHERE endpoint_id = $1", endpoint).Scan(&attempts))
	require.Equal(t, 4, attempts, "one attempt recorded per delivery, the one sent")
}
