package chaos

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/replay"
)

// disruption is something the run does to Herald, due when the consumer
// has stored a share of the events.
type disruption struct {
	// at is the share of the run's events stored by the consumer, in (0, 1).
	at   float64
	kind disruptionKind
	// dispatcher is the one to kill, for kill.
	dispatcher int
}

type disruptionKind int

const (
	kill        disruptionKind = iota // SIGKILL a dispatcher, start it again
	outage                            // Setup.Outage
	resend                            // resend pending deliveries
	forceEnd                          // end delivery jobs by force
	enableGone                        // the 410 endpoint answers again: enable and replay it
	blackHoleDB                       // black-hole a dispatcher's database connections
)

// settleLogEvery is how often settle logs what it waits for.
const settleLogEvery = 5 * time.Second

// When the disruptions other than the kills come, as shares of the run.
const (
	outageAt    = 0.5
	resendAt    = 0.3
	forceEndAt  = 0.2
	blackHoleAt = 0.45
)

// disruptions spreads the kills evenly between 10 % and 85 % of the events,
// taking the dispatchers in turns, and puts the others at their shares.
func disruptions(cfg Config, withOutage bool) []disruption {
	var ds []disruption
	for k := range cfg.Kills {
		at := 0.3
		if cfg.Kills > 1 {
			at = 0.1 + 0.75*float64(k)/float64(cfg.Kills-1)
		}
		ds = append(ds, disruption{at: at, kind: kill, dispatcher: k % cfg.Dispatchers})
	}
	if withOutage {
		ds = append(ds, disruption{at: outageAt, kind: outage})
	}
	if cfg.Resends > 0 {
		ds = append(ds, disruption{at: resendAt, kind: resend})
	}
	if cfg.ForcedEnds > 0 {
		ds = append(ds, disruption{at: forceEndAt, kind: forceEnd})
	}
	if cfg.GoneShare > 0 {
		ds = append(ds, disruption{at: cfg.GoneUntil, kind: enableGone})
	}
	if cfg.BlackHole > 0 {
		ds = append(ds, disruption{at: blackHoleAt, kind: blackHoleDB})
	}
	slices.SortStableFunc(ds, func(a, b disruption) int { return cmp.Compare(a.at, b.at) })
	return ds
}

// blackHoleAfterStart is how long a dispatcher has run, at least, when its
// database connections become black holes.
const blackHoleAfterStart = 10 * time.Second

// waitingPatience bounds how long resend and forceEnd look for deliveries
// waiting for a retry.
const waitingPatience = 30 * time.Second

// runFaults carries out the disruptions as the consumer's progress reaches
// them. It fails when progress stalls for cfg.Settle.
func runFaults(ctx context.Context, h *harness, r *Report) error {
	cfg, c, logger := h.cfg, h.consumer, h.logger
	for _, d := range disruptions(cfg, h.outage != nil) {
		if err := waitForProgress(ctx, c, int(d.at*float64(cfg.Events)), cfg.Settle); err != nil {
			return err
		}
		var err error
		switch d.kind {
		case outage:
			logger.Info("chaos: outage", "stored", c.storedCount(), "how", h.outage.String())
			start := time.Now()
			if err := h.outage.Break(ctx); err != nil {
				return err
			}
			end := time.Now()
			r.PostgresRestarts++
			r.Downtime += end.Sub(start)
			logger.Info("chaos: databases back", "after", time.Since(start).Round(time.Millisecond))
		case kill:
			logger.Info("chaos: SIGKILL", "dispatcher", d.dispatcher, "stored", c.storedCount())
			if err := h.fleet.kill(d.dispatcher); err != nil {
				return err
			}
			sleep(ctx, cfg.Downtime)
			err = h.fleet.start(d.dispatcher)
		case resend:
			err = h.resendWaiting(ctx, r)
			c.endDeferring()
		case forceEnd:
			err = h.forceEndWaiting(ctx, r)
		case enableGone:
			c.endGone()
			logger.Info("chaos: the second endpoint answers again; enabling and replaying it", "stored", c.storedCount())
			var rep replay.Replay
			rep, err = h.operator.enableAndReplay(ctx, h.goneEndpoint, h.started)
			r.replayID = rep.ID
		case blackHoleDB:
			// RecoveryBound is a running dispatcher's: one still starting
			// (a kill just before) fails its start and exits instead.
			started, ok := h.fleet.running(blackHoled)
			if !ok {
				return fmt.Errorf("chaos: dispatcher %d is not running to black-hole its database", blackHoled)
			}
			sleep(ctx, time.Until(started.Add(blackHoleAfterStart)))
			logger.Info("chaos: black-holing a dispatcher's database connections", "dispatcher", blackHoled, "for", cfg.BlackHole, "bound", h.bound)
			var res blackHoleResult
			res, err = breakConnections(ctx, cfg, h.proxy, h.herald, h.bound)
			r.BlackHoles++
			r.BlackHoleRecovery = res.recovery
			r.RecoveryBound = res.bound
			if !res.recovered {
				r.problem("dispatcher %d did not start a job within %s (dispatcher.RecoveryBound) of its database answering again after %s of black hole", blackHoled, res.bound, res.silent)
			}
			logger.Info("chaos: black hole over", "recovered", res.recovered, "after", res.recovery.Round(time.Millisecond))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// resendWaiting resends cfg.Resends pending deliveries waiting for a
// retry, as many at a time as it finds.
func (h *harness) resendWaiting(ctx context.Context, r *Report) error {
	deadline := time.Now().Add(waitingPatience)
	for len(r.resent) < h.cfg.Resends && time.Now().Before(deadline) {
		resent, err := h.operator.resend(ctx, h.mainEndpoint, h.cfg.Resends-len(r.resent))
		if err != nil {
			return fmt.Errorf("chaos: resend: %w", err)
		}
		r.resent = append(r.resent, resent...)
		sleep(ctx, pollEvery)
	}
	h.logger.Info("chaos: resent pending deliveries", "count", len(r.resent))
	if len(r.resent) < h.cfg.Resends {
		r.problem("found only %d of %d pending deliveries waiting for a retry to resend within %s", len(r.resent), h.cfg.Resends, waitingPatience)
	}
	return nil
}

// forceEndWaiting ends cfg.ForcedEnds delivery jobs waiting for a retry.
func (h *harness) forceEndWaiting(ctx context.Context, r *Report) error {
	deadline := time.Now().Add(waitingPatience)
	for len(r.forced) < h.cfg.ForcedEnds && time.Now().Before(deadline) {
		ended, err := h.operator.forceEnd(ctx, h.mainEndpoint, h.cfg.ForcedEnds-len(r.forced), len(r.forced))
		if err != nil {
			return fmt.Errorf("chaos: end jobs by force: %w", err)
		}
		r.forced = append(r.forced, ended...)
		sleep(ctx, pollEvery)
	}
	h.logger.Info("chaos: ended delivery jobs by force", "count", len(r.forced))
	if len(r.forced) < h.cfg.ForcedEnds {
		r.problem("found only %d of %d delivery jobs waiting for a retry to end by force within %s", len(r.forced), h.cfg.ForcedEnds, waitingPatience)
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
// succeeded (the second endpoint's replayed), every replay completed and
// the consumer has applied its inbox (the poison event aside: a dead
// letter), or cfg.Settle passes.
func settle(ctx context.Context, cfg Config, herald, source, consumer *pgxpool.Pool, logger *slog.Logger) error {
	deadline := time.Now().Add(cfg.Settle)
	var state string
	lastLog := time.Now()
	for time.Now().Before(deadline) {
		if time.Since(lastLog) >= settleLogEvery {
			logger.Info("chaos: settling", "state", state)
			lastLog = time.Now()
		}
		var unrelayed, undispatched, unsettled, replays, deliveries, unprocessed int
		err := herald.QueryRow(ctx, heraldBacklog).Scan(&undispatched, &unsettled, &replays, &deliveries)
		if err == nil {
			err = consumer.QueryRow(ctx, consumerBacklog).Scan(&unprocessed)
		}
		if err == nil && source != nil {
			err = source.QueryRow(ctx, sourceBacklog).Scan(&unrelayed)
		}
		if err != nil {
			state = err.Error()
		} else {
			state = fmt.Sprintf("%d messages not relayed from the producer's database, %d not dispatched, %d of %d deliveries not succeeded, %d replays running, %d events in the consumer's inbox not applied",
				unrelayed, undispatched, unsettled, deliveries, replays, unprocessed)
			if unrelayed == 0 && undispatched == 0 && unsettled == 0 && replays == 0 && deliveries >= cfg.Events && unprocessed == 0 {
				return nil
			}
		}
		sleep(ctx, 4*pollEvery)
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return fmt.Errorf("%s%s", state, describeUnsettled(ctx, herald))
}

// describeUnsettled lists, for a run that did not settle, the deliveries
// not succeeded with their state and their River jobs', so that the
// report says where each one stopped.
func describeUnsettled(ctx context.Context, herald *pgxpool.Pool) string {
	rows, err := herald.Query(ctx, selectUnsettled)
	if err != nil {
		return "; listing them: " + err.Error()
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return "; listing them: " + err.Error()
		}
		b.WriteString("\n  ")
		b.WriteString(line)
	}
	if err := rows.Err(); err != nil {
		return "; listing them: " + err.Error()
	}
	return b.String()
}
