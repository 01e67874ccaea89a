package dispatcher

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
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
	for i := range fanOuts {
		_, err := outbox.PublishPool(ctx, pool, outbox.Message{Tenant: "acme", Type: "invoice.paid", ObjectID: "inv_1", Data: map[string]any{}})
		require.NoError(t, err)
		// An insert of this client's, rolled back, spends River's
		// notification: River's limiter leaves the fan-out's out.
		tx, err := pool.Begin(ctx)
		require.NoError(t, err)
		_, err = d.river.InsertTx(ctx, tx, delivery.Args{DeliveryID: uuid.New(), EndpointID: uuid.New()}, nil)
		require.NoError(t, err)
		require.NoError(t, tx.Rollback(ctx))
		claimed, _, err := d.fanOut(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, claimed)

		wait, cancel := context.WithTimeout(ctx, 5*time.Second)
		n, err := listener.WaitForNotification(wait)
		cancel()
		require.NoError(t, err, "fan-out %d committed jobs without waking the producers", i)
		require.Equal(t, riverInsertPayload, n.Payload)
		// River's and the fan-out's, when both were sent, arrive as one.
		extra, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		_, err = listener.WaitForNotification(extra)
		cancel()
		require.Error(t, err, "fan-out %d woke the producers twice", i)
	}
	require.JSONEq(t, `{"queue": "`+delivery.Queue+`"}`, riverInsertPayload, "River's payload")
}
