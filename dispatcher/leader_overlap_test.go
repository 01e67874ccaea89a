package dispatcher

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/internal/database"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/outbox"
	"github.com/heraldhq/herald/store"
)

// Two dispatchers that both believe they lead (a leader cut off from its
// lock connection drains until its ping fails) fan out at once: every
// message is claimed by one of them, gets one delivery per endpoint, and
// every delivery is in exactly one job.
func TestTwoLeadersAtOnceFanOutEachMessageOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t, pgtest.Herald)
	pool, err := database.Open(ctx, url, database.Options{MaxConns: 4})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	box, err := secretbox.Parse(secretbox.Generate())
	require.NoError(t, err)
	st, err := store.New(pool, store.Config{Box: box})
	require.NoError(t, err)
	_, err = st.CreateTenant(ctx, store.NewTenant{ID: "acme"})
	require.NoError(t, err)
	const messages, endpoints = 2000, 3
	for i := range endpoints {
		_, err = st.CreateEndpoint(ctx, store.NewEndpoint{TenantID: "acme", URL: fmt.Sprintf("https://example.com/hook/%d", i)})
		require.NoError(t, err)
	}
	leaders := make([]*Dispatcher, 2)
	for i := range leaders {
		own, err := database.Open(ctx, url, database.Options{MaxConns: 2})
		require.NoError(t, err)
		t.Cleanup(own.Close)
		leaders[i], err = New(Config{Pool: own, BatchSize: 20, Delivery: delivery.Config{Secrets: st}, Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, err)
	}

	published := make(chan struct{})
	go func() {
		defer close(published)
		for i := range messages / 100 {
			batch := make([]outbox.Message, 100)
			for j := range batch {
				batch[j] = outbox.Message{Tenant: "acme", Type: "invoice.paid", ObjectID: fmt.Sprintf("inv_%d_%d", i, j), Data: map[string]any{}}
			}
			if _, err := outbox.PublishManyPool(ctx, pool, batch); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var claimed [2]atomic.Int64
	var wg sync.WaitGroup
	for i, d := range leaders {
		wg.Go(func() {
			for {
				select {
				case <-published:
					claimed[i].Add(int64(d.drain(ctx, nil)))
					return
				default:
					claimed[i].Add(int64(d.drain(ctx, nil)))
				}
			}
		})
	}
	wg.Wait()
	t.Logf("claimed: %d and %d", claimed[0].Load(), claimed[1].Load())
	require.Equal(t, int64(messages), claimed[0].Load()+claimed[1].Load(), "every message claimed once")
	require.Positive(t, claimed[0].Load(), "both fanned out")
	require.Positive(t, claimed[1].Load(), "both fanned out")

	var undispatched, deliveries, distinct, inJobs, jobless int
	require.NoError(t, pool.QueryRow(ctx, `SELECT
    (SELECT count(*) FROM herald.messages WHERE dispatched_at IS NULL),
    (SELECT count(*) FROM herald.deliveries),
    (SELECT count(DISTINCT (message_id, endpoint_id)) FROM herald.deliveries)`).Scan(&undispatched, &deliveries, &distinct))
	require.Zero(t, undispatched)
	require.Equal(t, messages*endpoints, deliveries)
	require.Equal(t, deliveries, distinct)
	require.NoError(t, pool.QueryRow(ctx, `WITH job_deliveries AS (
    SELECT (args->>'delivery_id')::uuid AS id FROM herald.river_job WHERE kind = $1
    UNION ALL
    SELECT jsonb_array_elements_text(args->'delivery_ids')::uuid FROM herald.river_job WHERE kind = $2
)
SELECT (SELECT count(*) FROM job_deliveries),
    (SELECT count(*) FROM herald.deliveries d WHERE NOT EXISTS (SELECT FROM job_deliveries j WHERE j.id = d.id))`,
		delivery.Kind, delivery.BatchKind).Scan(&inJobs, &jobless))
	require.Equal(t, deliveries, inJobs, "every delivery in exactly one job")
	require.Zero(t, jobless)
}
