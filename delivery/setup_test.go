package delivery_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/internal/historyid"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/internal/webhooktest"
	"github.com/heraldhq/herald/migrations"
	"github.com/heraldhq/herald/outbox"
	"github.com/heraldhq/herald/schedule"
	"github.com/heraldhq/herald/signing"
	"github.com/heraldhq/herald/store"
)

const tenant = "acme"

// fast retries within milliseconds, so a test sees several attempts at once.
var fast = schedule.Policy{Base: 20 * time.Millisecond, Cap: 100 * time.Millisecond, Window: time.Hour}

// once gives up after the first attempt: its window is spent at once.
var once = schedule.Policy{Window: time.Nanosecond}

type testBundle struct {
	pool   *pgxpool.Pool
	client *river.Client[pgx.Tx]
	store  *store.Store
}

// newBundle gives a test its database, with the store and one tenant.
func newBundle(t *testing.T) (*testBundle, context.Context) {
	t.Helper()
	ctx := context.Background()
	b := &testBundle{pool: pgtest.NewPool(t)}
	box, err := secretbox.Parse(secretbox.Generate())
	require.NoError(t, err)
	b.store, err = store.New(b.pool, store.Config{Box: box})
	require.NoError(t, err)
	_, err = b.store.CreateTenant(ctx, store.NewTenant{ID: tenant})
	require.NoError(t, err)
	return b, ctx
}

// setup starts a River client working deliveries with a worker configured
// by cfg (DB is filled in, Secrets when nil, and Transport when nil with
// one that reaches receivers on loopback).
func setup(t *testing.T, cfg delivery.Config) (*testBundle, context.Context) {
	t.Helper()
	b, ctx := newBundle(t)
	cfg.DB = b.pool
	if cfg.Secrets == nil {
		cfg.Secrets = b.store
	}
	if cfg.Transport == nil {
		cfg.Transport = webhooktest.Transport()
	}
	cfg.Logger = slog.New(slog.DiscardHandler)
	worker, err := delivery.NewWorker(cfg)
	require.NoError(t, err)
	workers := river.NewWorkers()
	river.AddWorker(workers, worker)
	river.AddWorker(workers, worker.BatchWorker())
	b.client, err = river.NewClient(riverpgxv5.New(b.pool), &river.Config{
		Schema:            migrations.Schema,
		Queues:            map[string]river.QueueConfig{delivery.Queue: {MaxWorkers: 10}},
		Workers:           workers,
		FetchCooldown:     10 * time.Millisecond,
		FetchPollInterval: 50 * time.Millisecond,
		Logger:            slog.New(slog.DiscardHandler),
		TestOnly:          true,
	})
	require.NoError(t, err)
	require.NoError(t, b.client.Start(ctx))
	t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		require.NoError(t, b.client.StopAndCancel(stopCtx))
	})
	return b, ctx
}

// endpoint creates an enabled endpoint at url, with a fresh whsec_ secret
// or the given one.
func (b *testBundle) endpoint(t *testing.T, ctx context.Context, url string, secret ...signing.Secret) uuid.UUID {
	t.Helper()
	n := store.NewEndpoint{TenantID: tenant, URL: url}
	if len(secret) > 0 {
		n.Secret = secret[0]
	}
	e, err := b.store.CreateEndpoint(ctx, n)
	require.NoError(t, err)
	return e.ID
}

// secret returns an endpoint's current secret.
func (b *testBundle) secret(t *testing.T, ctx context.Context, endpoint uuid.UUID) signing.Secret {
	t.Helper()
	secret, err := b.store.RevealSecret(ctx, endpoint)
	require.NoError(t, err)
	return secret
}

// message publishes an invoice.paid event and returns its id.
func (b *testBundle) message(t *testing.T, ctx context.Context) uuid.UUID {
	t.Helper()
	p, err := outbox.PublishPool(ctx, b.pool, outbox.Message{
		Tenant: tenant, Type: "invoice.paid", ObjectID: "inv_" + uuid.NewString(),
		Data: map[string]any{"amount": 4200, "currency": "eur"},
	})
	require.NoError(t, err)
	return p.ID
}

// enqueue creates the delivery of message to endpoint and its job, as the
// dispatcher does, and returns the delivery's id.
func (b *testBundle) enqueue(t *testing.T, ctx context.Context, message, endpoint uuid.UUID) uuid.UUID {
	t.Helper()
	id := b.pendingDelivery(t, ctx, message, endpoint)
	_, err := b.client.Insert(ctx, delivery.Args{DeliveryID: id, EndpointID: endpoint}, nil)
	require.NoError(t, err)
	return id
}

// pendingDelivery creates a pending delivery without a job, its id of its
// message's millisecond as the fan-out makes it (historyid.Child).
func (b *testBundle) pendingDelivery(t *testing.T, ctx context.Context, message, endpoint uuid.UUID) uuid.UUID {
	t.Helper()
	id := uuid.Must(historyid.Child(message))
	_, err := b.pool.Exec(ctx, "INSERT INTO herald.deliveries (id, message_id, endpoint_id, tenant_id) VALUES ($1, $2, $3, $4)",
		id, message, endpoint, tenant)
	require.NoError(t, err)
	return id
}

type deliveryRow struct {
	Status         string
	AttemptCount   int
	FirstAttemptAt *time.Time
	LastAttemptAt  *time.Time
	NextAttemptAt  *time.Time
	CompletedAt    *time.Time
	LastStatusCode *int
	LastError      *string
}

func (b *testBundle) delivery(t *testing.T, ctx context.Context, id uuid.UUID) deliveryRow {
	t.Helper()
	var d deliveryRow
	err := b.pool.QueryRow(ctx, `SELECT status, attempt_count, first_attempt_at, last_attempt_at, next_attempt_at,
    completed_at, last_status_code, last_error FROM herald.deliveries WHERE id = $1`, id).
		Scan(&d.Status, &d.AttemptCount, &d.FirstAttemptAt, &d.LastAttemptAt, &d.NextAttemptAt, &d.CompletedAt, &d.LastStatusCode, &d.LastError)
	require.NoError(t, err)
	return d
}

// waitStatus waits until the delivery has status.
func (b *testBundle) waitStatus(t *testing.T, ctx context.Context, id uuid.UUID, status string) deliveryRow {
	t.Helper()
	var d deliveryRow
	require.Eventually(t, func() bool {
		d = b.delivery(t, ctx, id)
		return d.Status == status
	}, 20*time.Second, 20*time.Millisecond, "delivery %s never became %s", id, status)
	return d
}

type attemptRow struct {
	Number         int
	Trigger        string
	StartedAt      time.Time
	DurationMS     int
	RequestHeaders map[string]string
	StatusCode     *int
	Error          *string
	Excerpt        string
	Outcome        string
}

func (b *testBundle) attempts(t *testing.T, ctx context.Context, deliveryID uuid.UUID) []attemptRow {
	t.Helper()
	rows, err := b.pool.Query(ctx, `SELECT attempt_number, trigger, started_at, duration_ms, request_headers, status_code,
    error, response_excerpt, outcome FROM herald.attempts WHERE delivery_id = $1 ORDER BY attempt_number`, deliveryID)
	require.NoError(t, err)
	attempts, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (attemptRow, error) {
		var a attemptRow
		var headers []byte
		err := row.Scan(&a.Number, &a.Trigger, &a.StartedAt, &a.DurationMS, &headers, &a.StatusCode, &a.Error, &a.Excerpt, &a.Outcome)
		if err == nil {
			err = json.Unmarshal(headers, &a.RequestHeaders)
		}
		return a, err
	})
	require.NoError(t, err)
	return attempts
}

func (b *testBundle) body(t *testing.T, ctx context.Context, message uuid.UUID) string {
	t.Helper()
	var body string
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT body FROM herald.messages WHERE id = $1", message).Scan(&body))
	return body
}

// faults reads herald_dispatcher_faults_total{cause} from metrics.
func faults(t *testing.T, metrics prometheus.Gatherer, cause delivery.FaultCause) float64 {
	t.Helper()
	families, err := metrics.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "herald_dispatcher_faults_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "cause" && l.GetValue() == string(cause) {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no herald_dispatcher_faults_total{cause=%q}", cause)
	return 0
}
