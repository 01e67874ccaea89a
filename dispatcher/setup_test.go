package dispatcher_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/dispatcher"
	"github.com/heraldhq/herald/internal/database"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/internal/webhooktest"
	"github.com/heraldhq/herald/outbox"
	"github.com/heraldhq/herald/schedule"
	"github.com/heraldhq/herald/signing"
	"github.com/heraldhq/herald/store"
)

const tenant = "acme"

// fast retries within milliseconds.
var fast = schedule.Policy{Base: 20 * time.Millisecond, Cap: 100 * time.Millisecond, Window: time.Hour}

type testBundle struct {
	url   string
	pool  *pgxpool.Pool
	store *store.Store
}

func setup(t *testing.T) (*testBundle, context.Context) {
	t.Helper()
	ctx := context.Background()
	b := &testBundle{url: pgtest.NewDatabase(t, pgtest.Herald)}
	b.pool = b.openPool(t, 3)
	box, err := secretbox.Parse(secretbox.Generate())
	require.NoError(t, err)
	b.store, err = store.New(b.pool, store.Config{Box: box})
	require.NoError(t, err)
	for _, id := range []string{tenant, "globex"} {
		_, err := b.store.CreateTenant(ctx, store.NewTenant{ID: id})
		require.NoError(t, err)
	}
	return b, ctx
}

// openPool opens a pool of its own on the test database, as a separate
// dispatcher process would. Pools are small: every test on the machine
// shares the server's connection limit.
func (b *testBundle) openPool(t *testing.T, maxConns int32) *pgxpool.Pool {
	t.Helper()
	pool, err := database.Open(context.Background(), b.url, database.Options{MaxConns: maxConns})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// start runs a dispatcher with cfg (Pool, Secrets, a Transport that reaches
// receivers on loopback and Logger filled in when unset, the fast policy by
// default) until the test ends, and checks that it stops cleanly. The
// returned function stops it early.
func (b *testBundle) start(t *testing.T, cfg dispatcher.Config) (stop func()) {
	t.Helper()
	if cfg.Pool == nil {
		cfg.Pool = b.openPool(t, 4)
	}
	if cfg.Delivery.Secrets == nil {
		cfg.Delivery.Secrets = b.store
	}
	if cfg.Delivery.Transport == nil {
		cfg.Delivery.Transport = webhooktest.Transport()
	}
	if cfg.Delivery.Policy == (schedule.Policy{}) {
		cfg.Delivery.Policy = fast
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 100 * time.Millisecond
	}
	cfg.Logger = slog.New(slog.DiscardHandler)
	d, err := dispatcher.New(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	var stopped bool
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err, "Run must return nil after a clean stop")
		case <-time.After(time.Minute):
			t.Fatal("the dispatcher did not stop")
		}
	}
	t.Cleanup(stop)
	return stop
}

// endpoint creates an endpoint of tenant at url subscribed to types (none:
// every type) and returns its id and secret.
func (b *testBundle) endpoint(t *testing.T, ctx context.Context, tenant, url string, types ...string) (uuid.UUID, signing.Secret) {
	t.Helper()
	e, err := b.store.CreateEndpoint(ctx, store.NewEndpoint{TenantID: tenant, URL: url, EventTypes: types})
	require.NoError(t, err)
	secret, err := b.store.RevealSecret(ctx, e.ID)
	require.NoError(t, err)
	return e.ID, secret
}

func event(typ string) outbox.Message {
	return outbox.Message{Tenant: tenant, Type: typ, ObjectID: "inv_" + uuid.NewString(), Data: map[string]any{"amount": 4200}}
}

func (b *testBundle) publish(t *testing.T, ctx context.Context, msg outbox.Message) uuid.UUID {
	t.Helper()
	p, err := outbox.PublishPool(ctx, b.pool, msg)
	require.NoError(t, err)
	return p.ID
}

// statuses counts deliveries by status.
func (b *testBundle) statuses(t *testing.T, ctx context.Context) map[string]int {
	t.Helper()
	rows, err := b.pool.Query(ctx, "SELECT status, count(*) FROM herald.deliveries GROUP BY status")
	require.NoError(t, err)
	defer rows.Close()
	counts := map[string]int{}
	for rows.Next() {
		var status string
		var n int
		require.NoError(t, rows.Scan(&status, &n))
		counts[status] = n
	}
	require.NoError(t, rows.Err())
	return counts
}

// deliveryStatus returns the status of a delivery, "" while it does not exist.
func (b *testBundle) deliveryStatus(t *testing.T, ctx context.Context, message, endpoint uuid.UUID) string {
	t.Helper()
	var status string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT coalesce(max(status), '') FROM herald.deliveries
WHERE message_id = $1 AND endpoint_id = $2`, message, endpoint).Scan(&status))
	return status
}

// waitSucceeded waits until n deliveries have succeeded.
func (b *testBundle) waitSucceeded(t *testing.T, ctx context.Context, n int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		statuses := b.statuses(t, ctx)
		if statuses["succeeded"] >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s, deliveries by status: %v; want %d succeeded", within, statuses, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func webhookIDs(reqs []webhooktest.Request) map[string]int {
	ids := map[string]int{}
	for _, r := range reqs {
		ids[r.Header.Get(signing.HeaderID)]++
	}
	return ids
}

func headerID(message uuid.UUID) string { return delivery.MessageHeaderID(message) }

// metric reads the value of the counter or gauge name from metrics, the
// series with the label pairs labels ("cause", "secrets") when given.
func metric(t *testing.T, metrics prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	families, err := metrics.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			matched := 0
			for _, l := range m.GetLabel() {
				for i := 0; i+1 < len(labels); i += 2 {
					if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
						matched++
					}
				}
			}
			if matched < len(labels)/2 {
				continue
			}
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s%v", name, labels)
	return 0
}
