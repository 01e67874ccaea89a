package health_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/dispatcher"
	"github.com/heraldhq/herald/health"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/internal/testclock"
	"github.com/heraldhq/herald/internal/testfactory"
	"github.com/heraldhq/herald/internal/webhooktest"
	"github.com/heraldhq/herald/migrations"
	"github.com/heraldhq/herald/outbox"
	"github.com/heraldhq/herald/replay"
	"github.com/heraldhq/herald/schedule"
	"github.com/heraldhq/herald/signing"
	"github.com/heraldhq/herald/store"
)

type pipelineBundle struct {
	pool      *pgxpool.Pool
	store     *store.Store
	guard     *ssrf.Guard
	customer  *webhooktest.Receiver
	accepting *atomic.Bool
	ops       *webhooktest.Receiver
	opsSecret signing.Secret
	endpoint  store.Endpoint
}

// setupPipeline makes a customer endpoint whose receiver answers 503 until
// accepting is set, and an operator endpoint of the ops tenant subscribed
// to the operational events.
func setupPipeline(t *testing.T) (*pipelineBundle, context.Context) {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	box, err := secretbox.Parse(secretbox.Generate())
	require.NoError(t, err)
	guard := ssrf.New(netip.MustParsePrefix("127.0.0.0/8"))
	st, err := store.New(pool, store.Config{Box: box, CheckURL: guard.CheckURL})
	require.NoError(t, err)

	b := &pipelineBundle{pool: pool, store: st, guard: guard, accepting: &atomic.Bool{}}
	b.customer = webhooktest.NewReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		if b.accepting.Load() {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	b.ops = webhooktest.NewReceiver(t, webhooktest.Status(http.StatusOK))

	for _, tenant := range []string{"acme", health.DefaultOpsTenant} {
		_, err := st.CreateTenant(ctx, store.NewTenant{ID: tenant})
		require.NoError(t, err)
	}
	b.endpoint, err = st.CreateEndpoint(ctx, store.NewEndpoint{TenantID: "acme", URL: b.customer.URL})
	require.NoError(t, err)
	opsEndpoint, err := st.CreateEndpoint(ctx, store.NewEndpoint{
		TenantID: health.DefaultOpsTenant, URL: b.ops.URL,
		EventTypes: []string{health.TypeEndpointFailing, health.TypeEndpointDisabled, health.TypeEndpointRecovered, health.TypeDeliveryExhausted},
	})
	require.NoError(t, err)
	b.opsSecret, err = st.RevealSecret(ctx, opsEndpoint.ID)
	require.NoError(t, err)

	return b, ctx
}

// startDispatcher runs a dispatcher, fanning out and delivering in real
// time, until the test ends.
func (b *pipelineBundle) startDispatcher(t *testing.T) {
	t.Helper()
	d, err := dispatcher.New(dispatcher.Config{
		Pool:         b.pool,
		Delivery:     delivery.Config{Secrets: b.store, Transport: b.guard.Transport()},
		PollInterval: 50 * time.Millisecond,
		Logger:       slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		stop()
		require.NoError(t, <-done)
	})
}

// opsEvents returns the operational events the operator endpoint received,
// in arrival order, after checking each one's signature.
func (b *pipelineBundle) opsEvents(t *testing.T) []string {
	t.Helper()
	var types []string
	for _, req := range b.ops.Requests() {
		require.NoError(t, signing.Verifier{Secrets: []signing.Secret{b.opsSecret}}.Verify(req.Header, req.Body),
			"operational events are signed like any webhook")
		var body struct{ Type string }
		require.NoError(t, json.Unmarshal(req.Body, &body))
		types = append(types, body.Type)
	}
	return types
}

func (b *pipelineBundle) waitOpsEvents(t *testing.T, want ...string) {
	t.Helper()
	require.Eventually(t, func() bool { return len(b.ops.Requests()) >= len(want) }, 20*time.Second, 20*time.Millisecond,
		"the operator endpoint received %v, want %v", b.opsEvents(t), want)
	require.Equal(t, want, b.opsEvents(t))
}

func (b *pipelineBundle) publish(t *testing.T, ctx context.Context) uuid.UUID {
	t.Helper()
	p, err := outbox.PublishPool(ctx, b.pool, outbox.Message{
		Tenant: "acme", Type: "invoice.paid", ObjectID: "inv_" + uuid.NewString(), Data: map[string]any{"amount": 4200},
	})
	require.NoError(t, err)
	return p.ID
}

func (b *pipelineBundle) deliveryStatus(t *testing.T, ctx context.Context, message uuid.UUID) string {
	t.Helper()
	var status string
	err := b.pool.QueryRow(ctx, "SELECT status FROM herald.deliveries WHERE message_id = $1 AND endpoint_id = $2", message, b.endpoint.ID).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		return ""
	}
	require.NoError(t, err)
	return status
}

// An endpoint that fails for five simulated days is warned about after one
// day and disabled after five, and both events reach the operator's
// endpoint through Herald's own pipeline, signed. Messages published while
// it is disabled are skipped; re-enabled and replayed, everything it missed
// arrives.
func TestDeadEndpointIsDisabledAndReplayedAfterReEnabling(t *testing.T) {
	t.Parallel()
	b, ctx := setupPipeline(t)

	// The customer's first delivery runs on a simulated clock, one job run
	// at a time, as a dispatcher would run it while days pass. Its
	// delivery row is made here, as the fan-out would; the job lives in
	// tx, out of sight of the real-time dispatcher started below.
	clock := testclock.New(time.Now().UTC())
	start := clock.Now()
	worker, err := delivery.NewWorker(delivery.Config{
		DB: b.pool, Secrets: b.store, Transport: b.guard.Transport(), Now: clock.Now,
		Policy: schedule.Policy{Window: 7 * 24 * time.Hour},
		Logger: slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	stepped := rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{Schema: migrations.Schema, Test: river.TestConfig{Time: clock}},
		river.Worker[delivery.Args](worker))
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	first := b.publish(t, ctx)
	deliveryID := testfactory.Delivery(t, b.pool, &testfactory.DeliveryOpts{MessageID: first, EndpointID: b.endpoint.ID}).ID
	b.startDispatcher(t)

	result, err := stepped.Work(ctx, t, tx, delivery.Args{DeliveryID: deliveryID, EndpointID: b.endpoint.ID}, nil)
	require.NoError(t, err)
	warned := false
	for result.EventKind == river.EventKindJobSnoozed {
		clock.Set(result.Job.ScheduledAt)
		result, err = stepped.WorkJob(ctx, t, tx, result.Job)
		require.NoError(t, err)
		e, err := b.store.GetEndpoint(ctx, b.endpoint.ID)
		require.NoError(t, err)
		elapsed := clock.Now().Sub(start)
		if !warned && elapsed >= health.DefaultWarnAfter {
			warned = true
			require.True(t, e.Enabled)
			b.waitOpsEvents(t, health.TypeEndpointFailing)
		}
		require.Equal(t, elapsed < health.DefaultDisableAfter, e.Enabled, "enabled after %s of failures", elapsed)
	}
	require.Equal(t, river.EventKindJobCompleted, result.EventKind, "the disabled endpoint's job ends")
	require.True(t, warned)
	b.waitOpsEvents(t, health.TypeEndpointFailing, health.TypeEndpointDisabled)

	e, err := b.store.GetEndpoint(ctx, b.endpoint.ID)
	require.NoError(t, err)
	require.False(t, e.Enabled)
	require.Contains(t, e.DisabledReason, "no successful attempt for 5 days")
	require.Equal(t, "cancelled", b.deliveryStatus(t, ctx, first))
	var disabled struct{ Data health.DisabledEvent }
	require.NoError(t, json.Unmarshal(b.ops.Requests()[1].Body, &disabled))
	require.Equal(t, b.endpoint.ID, disabled.Data.Endpoint.ID)
	require.Equal(t, e.DisabledReason, disabled.Data.Reason)
	failedAttempts := b.customer.Count()
	require.Greater(t, failedAttempts, 10, "attempts kept failing for five days")

	// Published while the endpoint is disabled: recorded, not sent.
	missed := []uuid.UUID{b.publish(t, ctx), b.publish(t, ctx)}
	for _, m := range missed {
		require.Eventually(t, func() bool { return b.deliveryStatus(t, ctx, m) == "skipped" }, 10*time.Second, 10*time.Millisecond)
	}
	require.Equal(t, failedAttempts, b.customer.Count())

	// The owner fixes the receiver, re-enables the endpoint and replays
	// what failed or was skipped.
	b.accepting.Store(true)
	_, err = b.store.EnableEndpoint(ctx, b.endpoint.ID)
	require.NoError(t, err)
	jobs, err := river.NewClient(riverpgxv5.New(b.pool), &river.Config{Schema: migrations.Schema})
	require.NoError(t, err)
	require.NoError(t, pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		_, err := replay.StartTx(ctx, tx, jobs, replay.Params{EndpointID: b.endpoint.ID, Since: start.Add(-time.Minute), OnlyFailed: true})
		return err
	}))
	for _, m := range append([]uuid.UUID{first}, missed...) {
		require.Eventually(t, func() bool { return b.deliveryStatus(t, ctx, m) == "succeeded" }, 20*time.Second, 20*time.Millisecond,
			"message %s was replayed", m)
	}
	received := map[string]bool{}
	for _, req := range b.customer.Requests()[failedAttempts:] {
		received[req.Header.Get(signing.HeaderID)] = true
	}
	for _, m := range append([]uuid.UUID{first}, missed...) {
		require.True(t, received[delivery.MessageHeaderID(m)], "the receiver got message %s after the replay", m)
	}
	require.Len(t, b.opsEvents(t), 2, "re-enabling is the owner's act; no further event")
}
