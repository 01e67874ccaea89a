package dispatcher_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/dispatcher"
	"github.com/heraldhq/herald/internal/webhooktest"
	"github.com/heraldhq/herald/schedule"
	"github.com/heraldhq/herald/signing"
	"github.com/heraldhq/herald/store"
)

var _ delivery.HeaderSource = (*store.Store)(nil)

// An endpoint's custom headers arrive on every attempt, a secret one
// decrypted, beside a signature that still verifies; the attempt log masks
// the secret value.
func TestCustomHeadersArriveAndTheSignatureVerifies(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	r := webhooktest.NewReceiver(t, webhooktest.Status(500, 200))
	e, err := b.store.CreateEndpoint(ctx, store.NewEndpoint{TenantID: tenant, URL: r.URL, Headers: []store.EndpointHeader{
		{Name: "X-Tenant-Region", Value: "eu-west-1"},
		{Name: "X-Api-Key", Value: "sk_live_123", Secret: true},
	}})
	require.NoError(t, err)
	require.Equal(t, store.MaskedHeaderValue, e.Headers[1].Value, "a secret value is never shown")
	secret, err := b.store.RevealSecret(ctx, e.ID)
	require.NoError(t, err)
	b.start(t, dispatcher.Config{})

	msg := b.publish(t, ctx, event("invoice.paid"))
	b.waitSucceeded(t, ctx, 1, 20*time.Second)
	reqs := r.Requests()
	require.Len(t, reqs, 2, "one failed attempt, one retry")
	for _, req := range reqs {
		require.Equal(t, "eu-west-1", req.Header.Get("X-Tenant-Region"))
		require.Equal(t, "sk_live_123", req.Header.Get("X-Api-Key"))
		require.Equal(t, "application/json", req.Header.Get("Content-Type"))
		require.NoError(t, signing.Verifier{Secrets: []signing.Secret{secret}}.Verify(req.Header, req.Body))
	}

	var logged map[string]string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT request_headers FROM herald.attempts WHERE message_id = $1 ORDER BY attempt_number LIMIT 1`, msg).Scan(&logged))
	require.Equal(t, "eu-west-1", logged["x-tenant-region"])
	require.Equal(t, "********", logged["x-api-key"], "the attempt log masks the secret value")
}

// slowly answers 200 after delay.
func slowly(delay time.Duration) webhooktest.Responder {
	return func(_ int, w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(delay):
			w.WriteHeader(http.StatusOK)
		case <-r.Context().Done():
		}
	}
}

// A receiver that answers just after the global timeout gets its delivery
// through on the first attempt when its endpoint has a longer timeout of
// its own; an endpoint without one times out.
func TestEndpointTimeoutOverridesTheGlobalOne(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	r := webhooktest.NewReceiver(t, slowly(600*time.Millisecond))
	patient, err := b.store.CreateEndpoint(ctx, store.NewEndpoint{TenantID: tenant, URL: r.URL + "?patient", Timeout: 2 * time.Second})
	require.NoError(t, err)
	require.Equal(t, 2*time.Second, patient.Timeout)
	hurried, _ := b.endpoint(t, ctx, tenant, r.URL+"?hurried")
	b.start(t, dispatcher.Config{Delivery: delivery.Config{
		Timeout: 300 * time.Millisecond,
		// Retries wait an hour: only first attempts happen in the test.
		Policy: schedule.Policy{Base: time.Hour, Cap: time.Hour, Window: 24 * time.Hour},
	}})

	msg := b.publish(t, ctx, event("invoice.paid"))
	b.waitSucceeded(t, ctx, 1, 20*time.Second)
	require.Equal(t, "succeeded", b.deliveryStatus(t, ctx, msg, patient.ID))
	require.Eventually(t, func() bool { return b.attemptError(t, ctx, msg, hurried) != "" }, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, "timed out after 300ms", b.attemptError(t, ctx, msg, hurried))
	require.Equal(t, "pending", b.deliveryStatus(t, ctx, msg, hurried), "its retry waits")
}

// An endpoint's own retry window ends its deliveries' retries while the
// global window still runs for the others.
func TestEndpointRetryPolicyOverridesTheGlobalOne(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	r := webhooktest.NewReceiver(t, webhooktest.Status(500))
	short, err := b.store.CreateEndpoint(ctx, store.NewEndpoint{TenantID: tenant, URL: r.URL + "?short",
		RetryPolicy: store.RetryPolicy{Window: 2 * time.Second, Base: time.Second, Cap: time.Second}})
	require.NoError(t, err)
	long, _ := b.endpoint(t, ctx, tenant, r.URL+"?long")
	b.start(t, dispatcher.Config{Delivery: delivery.Config{Policy: schedule.Policy{Base: time.Second, Cap: time.Second, Window: time.Hour}}})

	msg := b.publish(t, ctx, event("invoice.paid"))
	require.Eventually(t, func() bool { return b.deliveryStatus(t, ctx, msg, short.ID) == "failed" }, 20*time.Second, 50*time.Millisecond,
		"the endpoint's 2 s window ended its retries")
	require.Equal(t, "pending", b.deliveryStatus(t, ctx, msg, long), "the global hour-long window still runs")
}

// attemptError is the error of the last attempt of message's delivery to
// endpoint; "" while there is none.
func (b *testBundle) attemptError(t *testing.T, ctx context.Context, message, endpoint uuid.UUID) string {
	t.Helper()
	var e *string
	err := b.pool.QueryRow(ctx, `SELECT error FROM herald.attempts WHERE message_id = $1 AND endpoint_id = $2 ORDER BY attempt_number DESC LIMIT 1`, message, endpoint).Scan(&e)
	if err != nil || e == nil {
		return ""
	}
	return *e
}
