package dispatcher

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/internal/database"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/outbox"
	"github.com/heraldhq/herald/store"
)

// Every fan-out transaction that inserts jobs wakes River's producers when
// it commits, on River's insert channel with River's payload, even when
// River's own notification was left out because another insert of this
// client notified less than a FetchCooldown before. Without it, the jobs of
// back-to-back fan-outs waited for the next poll (JobPollInterval).
func TestEveryFanOutWithJobsWakesTheProducers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t, pgtest.Herald)
	pool, err := database.Open(ctx, url, database.Options{MaxConns: 2})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	box, err := secretbox.Parse(secretbox.Generate())
	require.NoError(t, err)
	st, err := store.New(pool, store.Config{Box: box})
	require.NoError(t, err)
	_, err = st.CreateTenant(ctx, store.NewTenant{ID: "acme"})
	require.NoError(t, err)
	_, err = st.CreateEndpoint(ctx, store.NewEndpoint{TenantID: "acme", URL: "https://example.com/hook"})
	require.NoError(t, err)
	d, err := New(Config{Pool: pool, Delivery: delivery.Config{Secrets: st}, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)

	listener, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = listener.Close(ctx) })
	_, err = listener.Exec(ctx, `LISTEN "`+riverInsertChannel+`"`)
	require.NoError(t, err)

	const fanOuts = 5
	for range fanOuts {
		_, err := outbox.PublishPool(ctx, pool, outbox.Message{Tenant: "acme", Type: "invoice.paid", ObjectID: "inv_1", Data: map[string]any{}})
		require.NoError(t, err)
		claimed, _, err := d.fanOut(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, claimed)
	}
	// One per fan-out, and River's own for the first insert of its client
	// (its limiter starts open); River's for the others depend on how
	// quickly they followed each other, so they are not counted on.
	var got int
	for {
		wait, cancel := context.WithTimeout(ctx, time.Second)
		n, err := listener.WaitForNotification(wait)
		cancel()
		if err != nil {
			break
		}
		require.JSONEq(t, `{"queue": "`+delivery.Queue+`"}`, n.Payload)
		got++
	}
	require.GreaterOrEqual(t, got, fanOuts+1, "every fan-out that committed jobs wakes the producers")
}
