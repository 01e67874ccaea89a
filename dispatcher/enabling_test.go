package dispatcher

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/deliverystatus"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/outbox"
	"github.com/heraldhq/herald/store"
)

// A fan-out that read an endpoint as disabled makes its delivery skipped.
// Enabling the endpoint meanwhile waits for that fan-out to commit, so the
// enabling transaction (and the only_failed replay started in it) sees the
// skipped delivery. Before the barrier, enabling went ahead: the chaos run
// once ended with a skipped delivery that its replay never saw.
func TestEnablingWaitsForAFanOutThatReadTheEndpointDisabled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	box, err := secretbox.Parse(secretbox.Generate())
	require.NoError(t, err)
	st, err := store.New(pool, store.Config{Box: box})
	require.NoError(t, err)
	_, err = st.CreateTenant(ctx, store.NewTenant{ID: "acme"})
	require.NoError(t, err)
	e, err := st.CreateEndpoint(ctx, store.NewEndpoint{TenantID: "acme", URL: "https://example.com/hook"})
	require.NoError(t, err)
	_, err = st.DisableEndpoint(ctx, e.ID, "answered 410 Gone")
	require.NoError(t, err)
	_, err = outbox.PublishPool(ctx, pool, outbox.Message{Tenant: "acme", Type: "invoice.paid", ObjectID: "inv_1", Data: map[string]any{}})
	require.NoError(t, err)

	tx, err := beginFanOut(ctx, pool)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	batch, err := claim(ctx, tx, 10, WideFanOutLimit, newFilterCache(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	require.Len(t, batch.deliveries, 1)
	require.Equal(t, deliverystatus.Skipped, batch.deliveries[0].status, "the fan-out read the endpoint as disabled")
	var groups jobGroups
	_, err = createDeliveries(ctx, tx, batch, &groups)
	require.NoError(t, err)

	enabled := make(chan error, 1)
	go func() {
		_, err := st.EnableEndpoint(ctx, e.ID)
		enabled <- err
	}()
	// Enabling waits on the advisory lock while the fan-out is open.
	require.Eventually(t, func() bool {
		var waiting bool
		err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory')`).Scan(&waiting)
		return err == nil && waiting
	}, 10*time.Second, 10*time.Millisecond, "enabling must wait for the fan-out in flight")
	select {
	case err := <-enabled:
		t.Fatalf("enabling finished while the fan-out was open (err %v)", err)
	default:
	}

	require.NoError(t, tx.Commit(ctx))
	require.NoError(t, <-enabled)
}
