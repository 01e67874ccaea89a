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
	"fmt"
	"log/slog"
	"strings"
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

// ConnectionSuffix ends the application_name of the connection OpenPool
// opens, after its program's ("herald-api"), so that pg_stat_activity
// tells it from the program's pool.
const ConnectionSuffix = " (metrics)"

// Collector reads Herald's metrics from the database at scrape time.
type Collector struct {
	pool   *pgxpool.Pool
	logger *slog.Logger
}

// NewCollector returns a collector reading from pool, best one opened by
// OpenPool; failures are logged to logger and reported as
// herald_metrics_database_up 0.
func NewCollector(pool *pgxpool.Pool, logger *slog.Logger) *Collector {
	return &Collector{pool: pool, logger: logger}
}

// OpenPool opens the pool a Collector reads through: base's settings with
// one connection of its own, made in the background as the pool opens and
// again whenever it is replaced, and warmed by reading a scrape once
// before any scrape gets it.
//
// A scrape on a connection that has never read the messages table pays
// for loading its partitions' catalog entries and planning over them:
// 40 ms on an idle machine with 35 partitions, 190 ms on a busy one,
// against about 1 ms for the prepared statements after. Through the
// application's pool every scrape can land on such a connection, and
// waits behind the application's requests for one; through its own
// warmed connection neither happens. It costs one database connection,
// named base's application_name and ConnectionSuffix.
func OpenPool(ctx context.Context, base *pgxpool.Config) (*pgxpool.Pool, error) {
	cfg := base.Copy()
	cfg.MaxConns, cfg.MinConns = 1, 1
	cfg.ConnConfig.RuntimeParams["application_name"] = strings.TrimSpace(cfg.ConnConfig.RuntimeParams["application_name"] + ConnectionSuffix)
	connected := cfg.AfterConnect
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		if connected != nil {
			if err := connected(ctx, conn); err != nil {
				return err
			}
		}
		if _, err := read(ctx, conn); err != nil {
			return fmt.Errorf("metrics: warm a new connection with a scrape's queries: %w", err)
		}
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("metrics: open the pool for scrapes: %w", err)
	}
	return pool, nil
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
	s, err := read(ctx, c.pool)
	if err != nil {
		c.logger.Warn("metrics scrape could not read the database", "error", err)
		ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(backlogDesc, prometheus.GaugeValue, float64(s.backlog))
	ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, s.oldest)
	for _, q := range s.queues {
		ch <- prometheus.MustNewConstMetric(queueDesc, prometheus.GaugeValue, float64(q.jobs), q.queue, q.state)
	}
	ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 1)
}

// snapshot is what one scrape reads.
type snapshot struct {
	backlog int64
	oldest  float64
	queues  []queueJobs
}

// queueJobs is the number of River jobs of a queue in a state.
type queueJobs struct {
	queue, state string
	jobs         int64
}

// beginner is a pool or a connection.
type beginner interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// read reads a scrape's values in one snapshot, so they agree with each
// other.
func read(ctx context.Context, db beginner) (snapshot, error) {
	var s snapshot
	tx, err := db.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead})
	if err != nil {
		return s, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if err := tx.QueryRow(ctx, outboxBacklog).Scan(&s.backlog, &s.oldest); err != nil {
		return s, err
	}
	rows, err := tx.Query(ctx, queueDepth)
	if err != nil {
		return s, err
	}
	var q queueJobs
	_, err = pgx.ForEachRow(rows, []any{&q.queue, &q.state, &q.jobs}, func() error {
		s.queues = append(s.queues, q)
		return nil
	})
	return s, err
}
