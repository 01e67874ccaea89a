// Package metrics exposes the state of Herald's outbox and queue to
// Prometheus, read from the database when Prometheus scrapes, so any api
// replica reports the same numbers. Every value comes from an index bounded
// by what is waiting (the undispatched messages, the live jobs), never by
// history: no scrape counts delivered messages, deliveries or attempts.
// Those are counted by the processes that do the work (package delivery's
// herald_attempts_total and herald_attempt_duration_seconds, on each
// dispatcher's --metrics-addr), which Prometheus sums across replicas.
package metrics

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// ScrapeTimeout bounds the queries of one scrape.
const ScrapeTimeout = 5 * time.Second

var (
	backlogDesc = prometheus.NewDesc("herald_outbox_backlog",
		"Published messages not yet dispatched into deliveries.", nil, nil)
	oldestDesc = prometheus.NewDesc("herald_outbox_oldest_undispatched_age_seconds",
		"Age of the oldest message not yet dispatched; 0 when the outbox is empty.", nil, nil)
	queueDesc = prometheus.NewDesc("herald_queue_jobs",
		"River jobs waiting or running, by queue and state.", []string{"queue", "state"}, nil)
	upDesc = prometheus.NewDesc("herald_metrics_database_up",
		"1 when the last scrape could read the database, 0 when it could not.", nil, nil)
)

// Collector reads Herald's metrics from the database at scrape time.
type Collector struct {
	pool   *pgxpool.Pool
	logger *slog.Logger
}

// NewCollector returns a collector reading from pool; failures are logged
// to logger and reported as herald_metrics_database_up 0.
func NewCollector(pool *pgxpool.Pool, logger *slog.Logger) *Collector {
	return &Collector{pool: pool, logger: logger}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{backlogDesc, oldestDesc, queueDesc, upDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), ScrapeTimeout)
	defer cancel()
	if err := c.collect(ctx, ch); err != nil {
		c.logger.Warn("metrics scrape could not read the database", "error", err)
		ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 1)
}

func (c *Collector) collect(ctx context.Context, ch chan<- prometheus.Metric) error {
	// One snapshot for all values, so they agree with each other.
	tx, err := c.pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead})
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()

	var backlog int64
	var oldest float64
	if err := tx.QueryRow(ctx, outboxBacklog).Scan(&backlog, &oldest); err != nil {
		return err
	}
	ch <- prometheus.MustNewConstMetric(backlogDesc, prometheus.GaugeValue, float64(backlog))
	ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, oldest)

	rows, err := tx.Query(ctx, queueDepth)
	if err != nil {
		return err
	}
	var (
		queue, state string
		n            int64
	)
	_, err = pgx.ForEachRow(rows, []any{&queue, &state, &n}, func() error {
		ch <- prometheus.MustNewConstMetric(queueDesc, prometheus.GaugeValue, float64(n), queue, state)
		return nil
	})
	return err
}
