package delivery_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/health"
	"github.com/heraldhq/herald/internal/ratelimit"
	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/internal/testclock"
	"github.com/heraldhq/herald/internal/webhooktest"
	"github.com/heraldhq/herald/migrations"
)

// steppedBundle works delivery jobs one call at a time on a stubbed clock
// (rivertest.Worker), so a test decides when each job runs.
type steppedBundle struct {
	*testBundle
	clock  *testclock.Clock
	worker *rivertest.Worker[delivery.Args, pgx.Tx]
	batch  *rivertest.Worker[delivery.BatchArgs, pgx.Tx]
	// jobs inserts jobs outside tx, as the api and the replay worker do;
	// they are worked with worker.WorkJob.
	jobs *river.Client[pgx.Tx]
	tx   pgx.Tx
	// metrics holds the worker's metrics.
	metrics *prometheus.Registry
}

func setupStepped(t *testing.T, cfg delivery.Config) (*steppedBundle, context.Context) {
	t.Helper()
	b, ctx := newBundle(t)
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })

	clock := testclock.New(time.Now().UTC().Truncate(time.Second))
	cfg.DB, cfg.Now = b.pool, clock.Now
	cfg.RateLimiter = ratelimit.New(b.pool, ratelimit.Config{Now: clock.Now})
	if cfg.Secrets == nil {
		cfg.Secrets = b.store
	}
	if cfg.Transport == nil {
		cfg.Transport = webhooktest.Transport()
	}
	metrics := prometheus.NewRegistry()
	cfg.Registerer = metrics
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	w, err := delivery.NewWorker(cfg)
	require.NoError(t, err)
	config := &river.Config{Schema: migrations.Schema, Test: river.TestConfig{Time: clock}}
	jobs, err := river.NewClient(riverpgxv5.New(b.pool), &river.Config{Schema: migrations.Schema})
	require.NoError(t, err)
	return &steppedBundle{
		testBundle: b,
		clock:      clock,
		worker:     rivertest.NewWorker(t, riverpgxv5.New(nil), config, river.Worker[delivery.Args](w)),
		batch:      rivertest.NewWorker(t, riverpgxv5.New(nil), config, river.Worker[delivery.BatchArgs](w.BatchWorker())),
		jobs:       jobs,
		tx:         tx,
		metrics:    metrics,
	}, ctx
}

// The guard refuses a connection to a blocked address however the URL
// names it; the attempt is recorded with an error that says why, and nothing
// reaches the receiver.
func TestSSRFGuardRefusalIsRecordedOnTheAttempt(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, delivery.Config{Policy: once, Transport: ssrf.New().Transport()})
	r := webhooktest.NewReceiver(t, webhooktest.Status(200))
	u, err := url.Parse(r.URL)
	require.NoError(t, err)

	for _, target := range []string{
		r.URL,
		"http://localhost:" + u.Port() + "/",
		"http://[::ffff:127.0.0.1]:" + u.Port() + "/",
	} {
		id := b.enqueue(t, ctx, b.message(t, ctx), b.endpoint(t, ctx, target))
		d := b.waitStatus(t, ctx, id, "failed")
		require.Contains(t, *d.LastError, "loopback", target)
		require.Contains(t, *d.LastError, "SSRF guard", target)
		attempts := b.attempts(t, ctx, id)
		require.Len(t, attempts, 1)
		require.Nil(t, attempts[0].StatusCode)
		require.Equal(t, *d.LastError, *attempts[0].Error)
	}
	require.Zero(t, r.Count(), "no request may reach a blocked address")
}

// A 410 disables the endpoint at once and reports it as endpoint.disabled.
func TestGoneIsReportedAsOperationalEvent(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, delivery.Config{Policy: fast})
	endpoint := b.endpoint(t, ctx, webhooktest.NewReceiver(t, webhooktest.Status(http.StatusGone)).URL)
	id := b.enqueue(t, ctx, b.message(t, ctx), endpoint)
	b.waitStatus(t, ctx, id, "failed")

	var eventType, body string
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT event_type, body FROM herald.messages WHERE tenant_id = $1", health.DefaultOpsTenant).
		Scan(&eventType, &body))
	require.Equal(t, health.TypeEndpointDisabled, eventType)
	var payload struct{ Data health.DisabledEvent }
	require.NoError(t, json.Unmarshal([]byte(body), &payload))
	require.Equal(t, endpoint, payload.Data.Endpoint.ID)
	require.Equal(t, delivery.DisabledReason, payload.Data.Reason)
	require.Nil(t, payload.Data.FailingSince, "a healthy endpoint answered 410")
}

// A delivery whose retry window is spent is reported as delivery.exhausted,
// and its failures start the endpoint's failing spell.
func TestExhaustedDeliveryIsReported(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, delivery.Config{Policy: once})
	endpoint := b.endpoint(t, ctx, webhooktest.NewReceiver(t, webhooktest.Status(500)).URL)
	id := b.enqueue(t, ctx, b.message(t, ctx), endpoint)
	b.waitStatus(t, ctx, id, "failed")

	var eventType, objectID string
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT event_type, object_id FROM herald.messages WHERE tenant_id = $1", health.DefaultOpsTenant).
		Scan(&eventType, &objectID))
	require.Equal(t, health.TypeDeliveryExhausted, eventType)
	require.Equal(t, id.String(), objectID)
	var failingSince *time.Time
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT failing_since FROM herald.endpoints WHERE id = $1", endpoint).Scan(&failingSince))
	require.NotNil(t, failingSince)
}
