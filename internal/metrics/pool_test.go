package metrics

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/testfactory"
)

// The first scrape on a connection that has not read the messages
// partitions paid for loading their catalog and planning over them (67 and
// 96 ms p99 on the aged benchmark's 35 partitions, against 50 ms wanted):
// OpenPool's one connection is made before anything asks for it and has
// already planned a scrape's statements when the first scrape comes.
func TestOpenPoolWarmsItsConnectionBeforeTheFirstScrape(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	app := pgtest.NewPool(t)
	cfg := app.Config()
	cfg.ConnConfig.RuntimeParams["application_name"] = "herald-api"
	pool, err := OpenPool(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	require.Eventually(t, func() bool { return pool.Stat().IdleConns() == 1 }, 10*time.Second, 10*time.Millisecond,
		"the pool makes its connection without being asked")
	require.EqualValues(t, 1, pool.Stat().MaxConns())

	var name string
	var planned []string
	require.NoError(t, pool.QueryRow(ctx, `
SELECT current_setting('application_name'),
       coalesce(array_agg(statement) FILTER (WHERE generic_plans + custom_plans > 0), '{}')
FROM pg_prepared_statements`).Scan(&name, &planned))
	require.Equal(t, "herald-api (metrics)", name)
	for _, sql := range []string{outboxBacklog, queueDepth} {
		require.Contains(t, planned, sql, "the warm-up planned %s", strings.TrimSpace(sql))
	}

	// And the connection serves scrapes.
	testfactory.Message(t, app, nil)
	registry := prometheus.NewRegistry()
	registry.MustRegister(NewCollector(pool, slog.New(slog.DiscardHandler)))
	families, err := registry.Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	for _, f := range families {
		got[f.GetName()] = f.GetMetric()[0].GetGauge().GetValue()
	}
	require.Equal(t, 1.0, got["herald_metrics_database_up"])
	require.Equal(t, 1.0, got["herald_outbox_backlog"])
}
