package api_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/api"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/store"
)

// The api's /metrics reports what waits (the outbox, the queue) from
// indexes; how deliveries went is counted by the dispatchers that made the
// attempts, so it is not here (issue 16, item 4).
func TestMetricsAreReadFromTheDatabase(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ep := b.addEndpoint(t, "acme")
	m := b.publish(t, b.acme, "acme", "invoice.paid", "inv_1")
	b.addDelivery(t, m.ID, ep, "succeeded", "succeeded")
	b.addDelivery(t, b.publish(t, b.acme, "acme", "invoice.paid", "inv_2").ID, ep, "failed", "failed")
	_, err := b.pool.Exec(b.ctx, "UPDATE herald.messages SET dispatched_at = now() WHERE id = $1", uuid.MustParse(m.ID))
	require.NoError(t, err)

	resp := b.do(t, "", "GET", "/metrics", nil)
	require.Equal(t, http.StatusOK, resp.Status)
	text := string(resp.Body)
	for _, want := range []string{
		`herald_outbox_backlog 1`,
		`herald_outbox_oldest_undispatched_age_seconds`,
		`herald_metrics_database_up 1`,
		`go_goroutines`,
	} {
		require.Contains(t, text, want)
	}
	for _, history := range []string{"herald_deliveries", "herald_attempts_total", "herald_attempt_duration_seconds"} {
		require.NotContains(t, text, history, "counted by the dispatchers, not read from history")
	}
}

func TestMetricsTokenGuardsMetrics(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	box, err := secretbox.Parse(secretbox.Generate())
	require.NoError(t, err)
	st, err := store.New(pool, store.Config{Box: box})
	require.NoError(t, err)
	s, err := api.New(api.Config{Pool: pool, Store: st, Logger: slog.New(slog.DiscardHandler), MetricsToken: "scrape-secret"})
	require.NoError(t, err)
	server := httptest.NewServer(s.Handler())
	t.Cleanup(server.Close)

	scrape := func(authorization string) *http.Response {
		req, err := http.NewRequest(http.MethodGet, server.URL+"/metrics", nil)
		require.NoError(t, err)
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { _ = resp.Body.Close() })
		return resp
	}
	for _, wrong := range []string{"", "Bearer nope", "Basic scrape-secret", "Bearer scrape-secretX"} {
		resp := scrape(wrong)
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "Authorization %q", wrong)
		require.Contains(t, resp.Header.Get("WWW-Authenticate"), "Bearer")
	}
	resp := scrape("Bearer scrape-secret")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Contains(t, string(body), "herald_metrics_database_up 1")

	// The other operational routes stay open: a load balancer probes them.
	health, err := http.Get(server.URL + "/healthz")
	require.NoError(t, err)
	_ = health.Body.Close()
	require.Equal(t, http.StatusOK, health.StatusCode)
}
