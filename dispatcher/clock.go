package dispatcher

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald/signing"
)

// The clock check (see clockCheck).
const (
	// DefaultClockCheckInterval is how often a dispatcher compares its
	// clock with Postgres's, after the comparison at start.
	DefaultClockCheckInterval = time.Minute
	// ClockWarnSkew is how far the dispatcher's clock may be from
	// Postgres's before every check logs an error.
	ClockWarnSkew = 30 * time.Second
	// ClockRefuseSkew is how far the dispatcher's clock may be from
	// Postgres's before it refuses to send: receivers reject a
	// webhook-timestamp more than signing.DefaultTolerance (5 minutes)
	// from their own clock, and a minute less leaves room for theirs being
	// off too. Every signature sent past it would be rejected and charged
	// to its endpoint.
	ClockRefuseSkew = signing.DefaultTolerance - time.Minute
)

// clockCheckTimeout bounds one comparison: a check that cannot reach
// Postgres keeps the last result.
const clockCheckTimeout = 5 * time.Second

// clockCheck compares the clock the dispatcher signs with against
// Postgres's, the one clock every replica shares, and implements
// delivery.ClockGuard: past ClockRefuseSkew its ClockFault stops every
// delivery job, which defers without charging its endpoint. The skew is
// the gauge herald_dispatcher_clock_skew_seconds.
type clockCheck struct {
	pool     *pgxpool.Pool
	now      func() time.Time
	interval time.Duration // not positive: no check
	logger   *slog.Logger
	gauge    prometheus.Gauge

	// skew is the last measured skew in nanoseconds: this process's clock
	// minus Postgres's.
	skew atomic.Int64
}

func newClockCheck(pool *pgxpool.Pool, now func() time.Time, interval time.Duration, logger *slog.Logger) *clockCheck {
	return &clockCheck{
		pool: pool, now: now, interval: interval, logger: logger,
		gauge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "herald_dispatcher_clock_skew_seconds",
			Help: fmt.Sprintf("How far this dispatcher's clock is ahead of Postgres's (negative: behind) at the last check. Past %s either way it sends nothing.", ClockRefuseSkew),
		}),
	}
}

// ClockFault implements delivery.ClockGuard.
func (c *clockCheck) ClockFault() error {
	skew := time.Duration(c.skew.Load())
	if skew.Abs() < ClockRefuseSkew {
		return nil
	}
	return fmt.Errorf("it is %s Postgres's by %s, and receivers reject timestamps more than %s off; fix the machine's time (NTP)",
		aheadOrBehind(skew), skew.Abs().Round(time.Millisecond), signing.DefaultTolerance)
}

// run checks the clock every interval until ctx ends. The first check is
// the caller's (check), before anything is sent.
func (c *clockCheck) run(ctx context.Context) {
	if c.interval <= 0 {
		return
	}
	t := time.NewTicker(c.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.check(ctx)
		}
	}
}

// check measures the skew once and logs what it means.
func (c *clockCheck) check(ctx context.Context) {
	if c.interval <= 0 {
		return
	}
	skew, err := c.measure(ctx)
	if err != nil {
		if ctx.Err() == nil {
			c.logger.WarnContext(ctx, "could not compare the clock with Postgres's; keeping the last result",
				"skew", time.Duration(c.skew.Load()), "error", err)
		}
		return
	}
	refused := c.ClockFault() != nil
	c.skew.Store(int64(skew))
	c.gauge.Set(skew.Seconds())
	attrs := []any{"skew", skew, "clock", aheadOrBehind(skew) + " Postgres's", "refuse_at", ClockRefuseSkew}
	switch {
	case skew.Abs() >= ClockRefuseSkew:
		c.logger.ErrorContext(ctx, "this dispatcher's clock is too far off to sign: sending nothing until it is right; receivers would reject every signature", attrs...)
	case skew.Abs() >= ClockWarnSkew:
		c.logger.ErrorContext(ctx, "this dispatcher's clock is off; it refuses to send past refuse_at", attrs...)
	case refused:
		c.logger.InfoContext(ctx, "this dispatcher's clock is right again; sending", attrs...)
	}
}

// measure returns this process's clock minus Postgres's. Postgres reads
// its clock somewhere during the round trip; the middle of the round trip
// is the best guess of when, so the error is at most half of it.
func (c *clockCheck) measure(ctx context.Context) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, clockCheckTimeout)
	defer cancel()
	before := c.now()
	var postgres time.Time
	if err := c.pool.QueryRow(ctx, selectClock).Scan(&postgres); err != nil {
		return 0, fmt.Errorf("read Postgres's clock: %w", err)
	}
	after := c.now()
	return before.Add(after.Sub(before) / 2).Sub(postgres), nil
}

func aheadOrBehind(skew time.Duration) string {
	if skew < 0 {
		return "behind"
	}
	return "ahead of"
}
