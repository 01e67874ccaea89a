package relay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/outbox"
)

// followUpDelay is how long after a notification the relay drains once
// more: the source's publishes notify at most once per
// outbox.NotifyWindow (herald.wake_relay), so those that stayed silent
// have committed by then.
const followUpDelay = outbox.NotifyWindow + 10*time.Millisecond

// listenTimeout bounds connecting and subscribing, and a ping.
const listenTimeout = 10 * time.Second

// runSource relays from s until ctx ends: it drains s, prunes it when due,
// and waits for a notification, the follow-up or the next poll. Without a
// listening connection it polls. Before it returns, the last step's mark
// has ended.
func (r *Relay) runSource(ctx context.Context, s Source) {
	var nextPrune time.Time
	var pending *marking
	defer func() { pending.wait() }()
	src := &sourceRun{Source: s}
	for ctx.Err() == nil {
		conn, err := listen(ctx, s)
		if err != nil {
			if ctx.Err() == nil {
				r.logger.ErrorContext(ctx, "listen for the source's publishes; polling until it works", "source", s.Name, "error", err)
			}
			pending = r.drain(ctx, src, pending)
			nextPrune = r.pruneIfDue(ctx, s, nextPrune)
			sleep(ctx, r.pollInterval)
			continue
		}
		r.drainAndWait(ctx, src, conn, &nextPrune, &pending)
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), listenTimeout)
		_ = conn.Close(closeCtx)
		cancel()
	}
}

// drainAndWait alternates draining and waiting on conn until ctx ends or
// conn fails.
func (r *Relay) drainAndWait(ctx context.Context, s *sourceRun, conn *pgx.Conn, nextPrune *time.Time, pending **marking) {
	var followUp time.Time
	for {
		// Subscribed before draining, so a publish committed meanwhile
		// still wakes the next wait.
		*pending = r.drain(ctx, s, *pending)
		*nextPrune = r.pruneIfDue(ctx, s.Source, *nextPrune)
		wait := r.pollInterval
		if !followUp.IsZero() {
			wait = max(time.Until(followUp), 0)
			followUp = time.Time{}
		}
		notified, err := waitForNotification(ctx, conn, wait)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			r.logger.ErrorContext(ctx, "wait for the source's publishes; listening again", "source", s.Name, "error", err)
			return
		case notified:
			followUp = time.Now().Add(followUpDelay)
		}
	}
}

// sourceRun is a source and what its relay loop knows of it.
type sourceRun struct {
	Source
	// statsChecked is set once ensureStats has found statistics on the
	// outbox or tried to make them.
	statsChecked bool
}

// drain runs relay steps on s until one claims less than a batch, or
// moves nothing (all held back: the next drain retries them). pending is
// the last mark of the previous drain, maybe still committing; drain
// returns its own last one, which commits while the relay waits.
func (r *Relay) drain(ctx context.Context, s *sourceRun, pending *marking) *marking {
	for ctx.Err() == nil {
		claimed, moved, next, err := r.step(ctx, s.Source, pending)
		if err != nil {
			if ctx.Err() == nil {
				r.logger.ErrorContext(ctx, "relay from the source", "source", s.Name, "error", err)
			}
			return pending
		}
		if next != nil {
			pending = next
		}
		if claimed > 0 && !s.statsChecked {
			r.ensureStats(ctx, s)
		}
		if claimed < r.batchSize || moved == 0 {
			return pending
		}
	}
	return pending
}

// listen opens a connection of its own to s (a pooled one would carry
// the LISTEN back into the pool) and subscribes it to
// outbox.NotifyChannel.
func listen(ctx context.Context, s Source) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, listenTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, s.Pool.Config().ConnConfig)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+outbox.NotifyChannel); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return conn, nil
}

// waitForNotification waits up to wait for a notification on conn and
// says whether one came; notifications already queued behind it are
// consumed too, since one drain takes every committed message. A wait
// that ends without one pings conn, so a dead connection is noticed
// within a poll.
func waitForNotification(ctx context.Context, conn *pgx.Conn, wait time.Duration) (bool, error) {
	waitCtx, cancel := context.WithTimeout(ctx, wait)
	_, err := conn.WaitForNotification(waitCtx)
	cancel()
	if err == nil {
		for range maxBurst {
			burstCtx, cancel := context.WithTimeout(ctx, time.Millisecond)
			_, err := conn.WaitForNotification(burstCtx)
			cancel()
			if err != nil {
				break
			}
		}
		return true, nil
	}
	if ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
		return false, err
	}
	pingCtx, cancel := context.WithTimeout(ctx, listenTimeout)
	defer cancel()
	if err := conn.Ping(pingCtx); err != nil {
		return false, fmt.Errorf("ping the listening connection: %w", err)
	}
	return false, nil
}

// maxBurst bounds how many queued notifications one wait consumes.
const maxBurst = 1000

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// ensureStats analyzes s's outbox, the first time a claim finds rows
// there, if it has no statistics: ANALYZE never ran on it while it held
// rows. Until then the planner takes its partial indexes for as empty as
// they were when the migration made them, and a claim looks each
// message's lower versions up along outbox_unrelayed, the whole backlog
// for each, instead of outbox_unrelayed_object: 3.6 s for a claim of 500
// over 50,000 waiting, 3.3 ms once analyzed, even with 20 rows then.
// Autovacuum analyzes the outbox after its first 50 changes; a server
// without autovacuum never would. A role that does not own the table
// cannot analyze it: that is logged once, with the fix.
func (r *Relay) ensureStats(ctx context.Context, s *sourceRun) {
	if err := r.analyzeWithoutStats(ctx, s.Source); err != nil {
		if ctx.Err() == nil {
			r.logger.ErrorContext(ctx, "analyze the source's outbox; trying again at the next claim", "source", s.Name, "error", err)
		}
		return
	}
	s.statsChecked = true
}

// analyzeWithoutStats analyzes s's outbox if it has no statistics, and
// warns when it still has none after.
func (r *Relay) analyzeWithoutStats(ctx context.Context, s Source) error {
	var has bool
	if err := s.Pool.QueryRow(ctx, outboxHasStats).Scan(&has); err != nil || has {
		return err
	}
	if _, err := s.Pool.Exec(ctx, analyzeOutbox); err != nil {
		return err
	}
	if err := s.Pool.QueryRow(ctx, outboxHasStats).Scan(&has); err != nil {
		return err
	}
	if !has {
		r.logger.WarnContext(ctx, "the source's outbox has no statistics and the relay's role cannot analyze it; run ANALYZE herald.outbox as its owner, or let autovacuum do it",
			"source", s.Name)
	}
	return nil
}
