package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/outbox"
)

// fanOutLoop leads the fan-out until ctx ends: it waits to become the
// fan-out leader (leader.go), then runs fan-out transactions while they
// find full batches and sleeps until a publish notifies it or
// PollInterval passes, until its lock connection fails; then it tries to
// lead again.
func (d *Dispatcher) fanOutLoop(ctx context.Context) {
	for ctx.Err() == nil {
		l, err := d.lead(ctx)
		if err != nil {
			return
		}
		d.drainAndWait(ctx, l)
		l.close(ctx)
		if ctx.Err() == nil {
			d.logger.WarnContext(ctx, "no longer leading the fan-out; another dispatcher may take it over")
		}
	}
}

// The fan-out leader's lock connection, which also LISTENs, is pinged every
// listenerPingInterval, notifications or not, between fan-out transactions
// too (keepAlive). So a dead one is noticed within listenerPingInterval +
// listenerTimeout, however long PollInterval, and the dispatcher gives up
// leading and tries again; and Postgres, which ends the session once the
// leader has sent nothing for leaderIdleTimeout, ends it only when the
// leader stopped sending (see leader.go). River's own listener pings at
// the same interval.
const (
	listenerPingInterval = 5 * time.Second
	// listenerTimeout bounds taking the lock and subscribing, a ping, and
	// closing.
	listenerTimeout = 10 * time.Second
)

// listener is the fan-out leader's connection: it holds leaderLockKey and
// is subscribed to outbox.NotifyChannel.
type listener struct {
	conn *pgx.Conn
	// pinged is when the connection last answered a statement of the
	// leader's: a ping, or the session's set-up.
	pinged time.Time
}

// wait waits up to wait for a notification and says whether one came. It
// pings the connection every listenerPingInterval, and returns an error
// when the connection failed.
func (l *listener) wait(ctx context.Context, wait time.Duration) (bool, error) {
	until := time.Now().Add(wait)
	for {
		if err := l.keepAlive(ctx); err != nil {
			return false, err
		}
		left := time.Until(until)
		if left <= 0 {
			return false, nil
		}
		waitCtx, cancel := context.WithTimeout(ctx, min(left, listenerPingInterval-time.Since(l.pinged)))
		_, err := l.conn.WaitForNotification(waitCtx)
		cancel()
		switch {
		case err == nil:
			return true, nil
		case ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded):
			return false, err
		}
	}
}

// keepAlive pings the connection when listenerPingInterval has passed
// since it last answered one.
func (l *listener) keepAlive(ctx context.Context) error {
	if time.Since(l.pinged) < listenerPingInterval {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, listenerTimeout)
	defer cancel()
	if err := l.conn.Ping(ctx); err != nil {
		return fmt.Errorf("ping the fan-out leader's connection: %w", err)
	}
	l.pinged = time.Now()
	return nil
}

func (l *listener) close(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), listenerTimeout)
	defer cancel()
	_ = l.conn.Close(ctx)
}

// drainAndWait alternates draining and waiting on l until ctx ends or
// the connection fails. When to drain is the wakeSchedule's: at once
// after a notification, once more when the publishes it silenced have
// committed, and every PollInterval otherwise. Nothing polls faster, so an
// idle fan-out costs one empty transaction per PollInterval.
func (d *Dispatcher) drainAndWait(ctx context.Context, l *listener) {
	w := wakeSchedule{poll: d.pollInterval, coalesce: d.drainCoalesce}
	for {
		// Subscribed before draining, so a publish committed while a batch
		// runs still wakes the next wait.
		d.drain(ctx, l)
		w.drained(time.Now())
		notified, err := l.wait(ctx, w.wait(time.Now()))
		if notified {
			// With DrainCoalesce, the publishes of the rest of it wait
			// to go with this one.
			sleep(ctx, w.holdBack(time.Now()))
			w.notified(time.Now())
			// One drain claims every message committed before it starts,
			// so a burst of publishes needs one drain, not one each.
			_, err = takeBurst(ctx, l.conn, d.batchSize, burstGap)
		}
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			d.logger.ErrorContext(ctx, "wait for published messages; reconnecting", "error", err)
			return
		}
	}
}

// followUpMargin is how long after the end of outbox.NotifyWindow the
// follow-up drain waits: a publish that decided not to notify has still to
// commit.
const followUpMargin = 10 * time.Millisecond

// wakeSchedule says when the fan-out drains next. Publishers notify only
// when no publish has notified in the last outbox.NotifyWindow
// (herald.wake_dispatcher): a notification serialises committing
// transactions cluster-wide. So the publishes that follow a notification
// within the window notify nobody, and a notification calls for two
// drains: one at once, and a follow-up NotifyWindow + followUpMargin after
// it, by which time those publishes have committed. A notification before
// the follow-up is due moves it on; later publishes notify for themselves.
// Without notifications the fan-out drains every poll, which also finds a
// message whose producer held its transaction open past the follow-up.
type wakeSchedule struct {
	poll time.Duration
	// coalesce is Config.DrainCoalesce.
	coalesce time.Duration
	// followUp is when the follow-up drain is due; zero when none is.
	followUp  time.Time
	lastDrain time.Time
}

// notified records a notification that arrived at now.
func (w *wakeSchedule) notified(now time.Time) {
	w.followUp = now.Add(outbox.NotifyWindow + followUpMargin)
}

// drained records a drain that ended at now.
func (w *wakeSchedule) drained(now time.Time) {
	w.lastDrain = now
	if !w.followUp.IsZero() && !now.Before(w.followUp) {
		w.followUp = time.Time{}
	}
}

// holdBack is how long a notification that arrived at now waits before
// its drain: the rest of coalesce since the last drain, or nothing.
func (w *wakeSchedule) holdBack(now time.Time) time.Duration {
	return max(w.lastDrain.Add(w.coalesce).Sub(now), 0)
}

// wait is how long from now the fan-out may wait for a notification
// before it drains again.
func (w *wakeSchedule) wait(now time.Time) time.Duration {
	next := w.lastDrain.Add(w.poll)
	if !w.followUp.IsZero() && w.followUp.Before(next) {
		next = w.followUp
	}
	return max(next.Sub(now), 0)
}

// burstGap is how soon after a notification the next must arrive to count
// as part of the same burst.
const burstGap = time.Millisecond

// takeBurst consumes, after a notification woke the fan-out, the ones that
// follow it within gap of each other, up to limit (that many mean at least
// a batch is waiting: time to drain), and returns how many it took. Each
// publish notifies once; without this, the fan-out ran one transaction per
// publish, and while the database was down it spun through the backlog of
// notifications, logging a failed drain for each.
func takeBurst(ctx context.Context, conn *pgx.Conn, limit int, gap time.Duration) (int, error) {
	for n := 0; n < limit; n++ {
		waitCtx, cancel := context.WithTimeout(ctx, gap)
		_, err := conn.WaitForNotification(waitCtx)
		cancel()
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				return n, nil
			}
			return n, err
		}
	}
	return limit, nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
