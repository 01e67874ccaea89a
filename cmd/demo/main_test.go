package main

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/api"
	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/store"
)

// The demo seeds a tenant, an endpoint at its own receiver and three
// events through the API, and seeding twice reuses what exists.
func TestDemoSeedsThroughTheAPI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	box, err := secretbox.Parse(secretbox.Generate())
	require.NoError(t, err)
	st, err := store.New(pool, store.Config{Box: box})
	require.NoError(t, err)
	server, err := api.New(api.Config{Pool: pool, Store: st, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	httpServer := httptest.NewServer(server.Handler())
	t.Cleanup(httpServer.Close)
	_, key, err := auth.CreateAPIKey(ctx, pool, "", "demo test")
	require.NoError(t, err)

	for range 2 {
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- run(runCtx, []string{"--api-url", httpServer.URL, "--api-key", key, "--receiver-addr", "127.0.0.1:0",
				"--receiver-url", "http://127.0.0.1:9/webhooks"})
		}()
		require.Eventually(t, func() bool {
			var links int
			require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM herald.portal_links").Scan(&links))
			return links > 0
		}, 30*time.Second, 20*time.Millisecond, "the demo mints a portal link once it has seeded")
		cancel()
		require.NoError(t, <-done)
		_, err := pool.Exec(ctx, "DELETE FROM herald.portal_links")
		require.NoError(t, err)
	}

	var tenants, endpoints, messages, eventTypes int
	require.NoError(t, pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM herald.tenants WHERE id = 'demo'),
  (SELECT count(*) FROM herald.endpoints WHERE tenant_id = 'demo'),
  (SELECT count(*) FROM herald.messages WHERE tenant_id = 'demo'),
  (SELECT count(*) FROM herald.event_types)`).Scan(&tenants, &endpoints, &messages, &eventTypes))
	require.Equal(t, 1, tenants)
	require.Equal(t, 1, endpoints, "the second run reuses the endpoint")
	require.Equal(t, 6, messages)
	require.Equal(t, 2, eventTypes)
}
