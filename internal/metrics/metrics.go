// Package metrics exposes Herald's delivery metrics to Prometheus. Every
// value is read from the database when Prometheus scrapes, so any api
// replica reports the same numbers and nothing is lost when one restarts.
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

// LatencyBuckets are the attempt-latency histogram's upper bounds in
// seconds, up to the delivery timeout's ceiling.
var LatencyBuckets = []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30}

var (
	deliveriesDesc = prometheus.NewDesc("herald_deliveries",
		"Deliveries by status (pending, succeeded, failed, cancelled, skipped).", []string{"status"}, nil)
	attemptsDesc = prometheus.NewDesc("herald_attempts_total",
		"Delivery attempts by outcome.", []string{"outcome"}, nil)
	latencyDesc = prometheus.NewDesc("herald_attempt_duration_seconds",
		"How long delivery attempts took, from request start to response or error.", nil, nil)
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
	for _, d := range []*prometheus.Desc{deliveriesDesc, attemptsDesc, latencyDesc, backlogDesc, oldestDesc, queueDesc, upDesc} {
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

	if err := labelled(ctx, tx, countDeliveriesByStatus, ch, deliveriesDesc, prometheus.GaugeValue); err != nil {
		return err
	}
	if err := labelled(ctx, tx, countAttemptsByOutcome, ch, attemptsDesc, prometheus.CounterValue); err != nil {
		return err
	}

	bounds := make([]float64, len(LatencyBuckets))
	for i, b := range LatencyBuckets {
		bounds[i] = b*1000 + 1
	}
	rows, err := tx.Query(ctx, attemptLatencyBuckets, bounds)
	if err != nil {
		return err
	}
	var (
		perBucket = make([]uint64, len(LatencyBuckets)+1)
		count     uint64
		sumMS     float64
		index     int
		n         int64
		sum       float64
	)
	_, err = pgx.ForEachRow(rows, []any{&index, &n, &sum}, func() error {
		perBucket[index] += uint64(n)
		count += uint64(n)
		sumMS += sum
		return nil
	})
	if err != nil {
		return err
	}
	buckets := make(map[float64]uint64, len(LatencyBuckets))
	var cumulative uint64
	for i, b := range LatencyBuckets {
		cumulative += perBucket[i]
		buckets[b] = cumulative
	}
	ch <- prometheus.MustNewConstHistogram(latencyDesc, count, sumMS/1000, buckets)

	var backlog int64
	var oldest float64
	if err := tx.QueryRow(ctx, outboxBacklog).Scan(&backlog, &oldest); err != nil {
		return err
	}
	ch <- prometheus.MustNewConstMetric(backlogDesc, prometheus.GaugeValue, float64(backlog))
	ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, oldest)

	rows, err = tx.Query(ctx, queueDepth)
	if err != nil {
		return err
	}
	var queue, state string
	_, err = pgx.ForEachRow(rows, []any{&queue, &state, &n}, func() error {
		ch <- prometheus.MustNewConstMetric(queueDesc, prometheus.GaugeValue, float64(n), queue, state)
		return nil
	})
	return err
}

// labelled emits one metric per (label, count) row of query.
func labelled(ctx context.Context, tx pgx.Tx, query string, ch chan<- prometheus.Metric, desc *prometheus.Desc, kind prometheus.ValueType) error {
	rows, err := tx.Query(ctx, query)
	if err != nil {
		return err
	}
	var label string
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&label, &n}, func() error {
		ch <- prometheus.MustNewConstMetric(desc, kind, float64(n), label)
		return nil
	})
	return err
}
