package api_test

import (
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

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
		`herald_deliveries{status="succeeded"} 1`,
		`herald_deliveries{status="failed"} 1`,
		`herald_attempts_total{outcome="failed"} 1`,
		`herald_attempt_duration_seconds_bucket{le="0.01"} 0`,
		`herald_attempt_duration_seconds_bucket{le="0.05"} 2`,
		`herald_attempt_duration_seconds_count 2`,
		`herald_outbox_backlog 1`,
		`herald_outbox_oldest_undispatched_age_seconds`,
		`herald_metrics_database_up 1`,
		`go_goroutines`,
	} {
		require.Contains(t, text, want)
	}
}
