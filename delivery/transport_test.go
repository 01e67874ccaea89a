package delivery_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/internal/webhooktest"
	"github.com/heraldhq/herald/migrations"
)

// attemptWithDefaults makes one attempt of a delivery to url with a worker
// whose Transport is left to its default, as code embedding the delivery
// package without cmd/dispatcher gets it, and returns the delivery.
func attemptWithDefaults(t *testing.T, url string) deliveryRow {
	t.Helper()
	b, ctx := newBundle(t)
	w, err := delivery.NewWorker(delivery.Config{DB: b.pool, Secrets: b.store, Policy: once, Timeout: 5 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	worker := rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{Schema: migrations.Schema}, river.Worker[delivery.Args](w))
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })

	endpoint := b.endpoint(t, ctx, url)
	id := b.pendingDelivery(t, ctx, b.message(t, ctx), endpoint)
	_, err = worker.Work(ctx, t, tx, delivery.Args{DeliveryID: id, EndpointID: endpoint}, nil)
	require.NoError(t, err)
	return b.delivery(t, ctx, id)
}

// Without a Transport the worker still refuses blocked addresses: the
// default is the SSRF guard's transport, allowing nothing extra.
func TestDefaultTransportIsTheSSRFGuard(t *testing.T) {
	t.Parallel()
	r := webhooktest.NewReceiver(t, webhooktest.Status(http.StatusOK))

	d := attemptWithDefaults(t, r.URL)
	require.Equal(t, "failed", d.Status)
	require.NotNil(t, d.LastError, "the attempt records why it failed")
	require.Contains(t, *d.LastError, "127.0.0.1 is loopback")
	require.Contains(t, *d.LastError, "SSRF guard")
	require.Zero(t, r.Count(), "no request may reach a blocked address")
}

// The default transport ignores HTTP_PROXY: through a proxy the dialled
// address would be the proxy's, and the guard would never see the real
// destination. Not parallel: it sets the environment.
func TestDefaultTransportIgnoresHTTPProxy(t *testing.T) {
	proxy := webhooktest.NewReceiver(t, webhooktest.Status(http.StatusOK))
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("http_proxy", proxy.URL)
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")

	d := attemptWithDefaults(t, "http://198.51.100.7/webhooks")
	require.Zero(t, proxy.Count(), "the request went through HTTP_PROXY")
	require.Equal(t, "failed", d.Status)
	require.NotNil(t, d.LastError)
	require.Contains(t, *d.LastError, "198.51.100.7 is reserved for documentation")
}

// hugeHeaders answers 200 with 9 MiB of headers, far over the transport's
// limit (ssrf.MaxResponseHeaderBytes).
func hugeHeaders(w http.ResponseWriter) {
	value := strings.Repeat("x", 1<<20)
	for i := range 9 {
		w.Header().Set(fmt.Sprintf("X-Huge-%d", i), value)
	}
	w.WriteHeader(http.StatusOK)
}

// An endpoint answering with 9 MiB of headers (under Go's default limit of
// 10 MiB) gets a failed attempt that says why, instead of 9 MiB of memory
// for every worker it holds.
func TestHugeResponseHeadersFailTheAttempt(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, delivery.Config{Policy: once})
	r := webhooktest.NewReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) { hugeHeaders(w) })

	id := b.enqueue(t, ctx, b.message(t, ctx), b.endpoint(t, ctx, r.URL))
	d := b.waitStatus(t, ctx, id, "failed")
	require.Equal(t, 1, r.Count())
	require.Contains(t, *d.LastError, "server response headers exceeded 65536 bytes")
	attempts := b.attempts(t, ctx, id)
	require.Len(t, attempts, 1)
	require.Nil(t, attempts[0].StatusCode, "no response was read")
	require.Equal(t, *d.LastError, *attempts[0].Error)
}
