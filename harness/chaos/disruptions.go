package chaos

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// disruption is a kill of a dispatcher or the outage, due when the
// consumer has stored a share of the events.
type disruption struct {
	// at is the share of the run's events stored by the consumer, in (0, 1).
	at float64
	// dispatcher is the one to kill; -1 means the outage.
	dispatcher int
}

// settleLogEvery is how often settle logs what it waits for.
const settleLogEvery = 5 * time.Second

// outageAt is when the outage comes: halfway through.
const outageAt = 0.5

// disruptions spreads the kills evenly between 10 % and 85 % of the events,
// taking the dispatchers in turns, and puts the outage halfway.
func disruptions(cfg Config, outage bool) []disruption {
	var ds []disruption
	for k := range cfg.Kills {
		at := 0.3
		if cfg.Kills > 1 {
			at = 0.1 + 0.75*float64(k)/float64(cfg.Kills-1)
		}
		ds = append(ds, disruption{at: at, dispatcher: k % cfg.Dispatchers})
	}
	if outage {
		ds = append(ds, disruption{at: outageAt, dispatcher: -1})
	}
	slices.SortStableFunc(ds, func(a, b disruption) int { return cmp.Compare(a.at, b.at) })
	return ds
}

// runFaults carries out the disruptions as the consumer's progress reaches
// them. It fails when progress stalls for cfg.Settle.
func runFaults(ctx context.Context, cfg Config, outage Outage, f *fleet, c *consumer, r *Report, logger *slog.Logger) error {
	for _, d := range disruptions(cfg, outage != nil) {
		if err := waitForProgress(ctx, c, int(d.at*float64(cfg.Events)), cfg.Settle); err != nil {
			return err
		}
		if d.dispatcher < 0 {
			logger.Info("chaos: outage", "stored", c.storedCount(), "how", outage.String())
			start := time.Now()
			if err := outage.Break(ctx); err != nil {
				return err
			}
			end := time.Now()
			r.outages = append(r.outages, window{from: start, to: end})
			r.PostgresRestarts++
			r.Downtime += end.Sub(start)
			logger.Info("chaos: databases back", "after", time.Since(start).Round(time.Millisecond))
			continue
		}
		logger.Info("chaos: SIGKILL", "dispatcher", d.dispatcher, "stored", c.storedCount())
		if err := f.kill(d.dispatcher); err != nil {
			return err
		}
		sleep(ctx, cfg.Downtime)
		if err := f.start(d.dispatcher); err != nil {
			return err
		}
	}
	return nil
}

// waitForProgress waits until the consumer has stored n events.
func waitForProgress(ctx context.Context, c *consumer, n int, stall time.Duration) error {
	last, since := c.storedCount(), time.Now()
	for last < n {
		if time.Since(since) > stall {
			return fmt.Errorf("chaos: the consumer stored no new event for %s (at %d, waiting for %d)", stall, last, n)
		}
		sleep(ctx, pollEvery)
		if err := ctx.Err(); err != nil {
			return err
		}
		if now := c.storedCount(); now > last {
			last, since = now, time.Now()
		}
	}
	return nil
}

// settle waits until every message is dispatched, every delivery
// succeeded or failed for good, and the consumer has applied its inbox, or
// cfg.Settle passes.
func settle(ctx context.Context, cfg Config, herald, consumer *pgxpool.Pool, logger *slog.Logger) error {
	deadline := time.Now().Add(cfg.Settle)
	var state string
	lastLog := time.Now()
	for time.Now().Before(deadline) {
		if time.Since(lastLog) >= settleLogEvery {
			logger.Info("chaos: settling", "state", state)
			lastLog = time.Now()
		}
		var undispatched, pending, deliveries, unprocessed int
		err := herald.QueryRow(ctx, heraldBacklog).Scan(&undispatched, &pending, &deliveries)
		if err == nil {
			err = consumer.QueryRow(ctx, consumerBacklog).Scan(&unprocessed)
		}
		if err != nil {
			state = err.Error()
		} else {
			state = fmt.Sprintf("%d messages not dispatched, %d of %d deliveries pending, %d events in the consumer's inbox not applied",
				undispatched, pending, deliveries, unprocessed)
			if undispatched == 0 && pending == 0 && deliveries >= cfg.Events && unprocessed == 0 {
				return nil
			}
		}
		sleep(ctx, 4*pollEvery)
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return fmt.Errorf("%s", state)
}
