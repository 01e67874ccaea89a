package relay_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/dispatcher"
	"github.com/heraldhq/herald/internal/database"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/internal/webhooktest"
	"github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/schedule"
	"github.com/heraldhq/herald/store"
)

const (
	tenant = "acme"
	source = "billing"
)

// testBundle is split mode in miniature: Herald's database and a
// producer's, two scratch databases on the test server.
type testBundle struct {
	herald *pgxpool.Pool
	// producer is the producer's application pool, which publishes;
	// source is the relay's pool on the same database.
	producer *pgxpool.Pool
	source   *pgxpool.Pool
	store    *store.Store
}

func setup(t *testing.T) (*testBundle, context.Context) {
	t.Helper()
	ctx := context.Background()
	producerURL := pgtest.NewDatabase(t, relay.ProducerTemplate)
	b := &testBundle{
		herald:   open(t, pgtest.NewDatabase(t, pgtest.Herald), 4),
		producer: open(t, producerURL, 4),
		source:   openSource(t, producerURL),
	}
	box, err := secretbox.Parse(secretbox.Generate())
	require.NoError(t, err)
	b.store, err = store.New(b.herald, store.Config{Box: box})
	require.NoError(t, err)
	_, err = b.store.CreateTenant(ctx, store.NewTenant{ID: tenant})
	require.NoError(t, err)
	return b, ctx
}

func open(t *testing.T, url string, maxConns int32) *pgxpool.Pool {
	t.Helper()
	pool, err := database.Open(context.Background(), url, database.Options{MaxConns: maxConns})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// openSource opens url as the dispatcher opens a source.
func openSource(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := database.Open(context.Background(), url, database.Options{MaxConns: relay.SourceMaxConns, QueryExecMode: relay.SourceQueryExecMode})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// newRelay builds a relay from the bundle's producer database into its
// Herald database; edit changes the configuration first.
func (b *testBundle) newRelay(t *testing.T, edit func(*relay.Config)) *relay.Relay {
	t.Helper()
	cfg := relay.Config{
		Pool:         b.herald,
		Sources:      []relay.Source{{Name: source, Pool: b.source}},
		PollInterval: 50 * time.Millisecond,
		Logger:       slog.New(slog.DiscardHandler),
	}
	if edit != nil {
		edit(&cfg)
	}
	r, err := relay.New(cfg)
	require.NoError(t, err)
	return r
}

// run runs r until the returned function is called or the test ends.
func run(t *testing.T, r *relay.Relay) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	var stopped bool
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(time.Minute):
			t.Fatal("the relay did not stop")
		}
	}
	t.Cleanup(stop)
	return stop
}

// startDispatcher runs a dispatcher on Herald's database that reaches
// receivers on loopback, until the test ends.
func (b *testBundle) startDispatcher(t *testing.T) {
	t.Helper()
	d, err := dispatcher.New(dispatcher.Config{
		Pool:         b.herald,
		Delivery:     deliveryConfig(b.store),
		PollInterval: 100 * time.Millisecond,
		Logger:       slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
}

func deliveryConfig(st *store.Store) delivery.Config {
	return delivery.Config{
		Secrets:   st,
		Transport: webhooktest.Transport(),
		Policy:    schedule.Policy{Base: 20 * time.Millisecond, Cap: 100 * time.Millisecond, Window: time.Hour},
	}
}

// count returns the single number query gives on pool.
func count(t *testing.T, pool *pgxpool.Pool, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), query, args...).Scan(&n))
	return n
}

// eventually waits up to within for cond, then fails with what.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
