package receiver

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// The lease guarantees that an event which kills the process handling it
// (a handler that calls os.Exit, crashes the runtime or runs out of memory)
// becomes a dead letter after MaxAttempts deaths, and that the events
// claimed with it are applied, exactly once.
//
// Why it holds. A claim takes due events with FOR UPDATE SKIP LOCKED,
// counts an attempt on each and moves its next_attempt_at to the end of the
// lease, and commits before any of them is applied: the count survives the
// process. Each event is then applied in its own transaction whose first
// statement marks it processed on the condition that the lease is still
// the worker's (leases, a number every lease increments, is unchanged). So
// the effect and the mark commit together or not at all, the row lock
// keeps every other worker off the event while it is applied, and a worker
// whose lease was taken over applies nothing. When a process dies, its
// transaction rolls back and its leases lapse; the next claim after
// LeaseDuration sees them again.
//
// Which event of a lapsed batch killed the process is unknown, so a lapse
// of a lease held with other events charges none of them: the next claim
// takes back the attempt and retries such events alone, one per lease. A
// lapse of a lease held alone is the event's own: it keeps the attempt,
// and once attempts reach MaxAttempts the next claim makes it a dead letter
// instead of leasing it again. A poison event thus costs one death for its
// batch and at most MaxAttempts deaths alone, LeaseDuration apart, and no
// other event is charged for them.
//
// The plain alternative, one transaction that claims, applies and marks a
// batch, counts nothing when the process dies: the claim rolls back with
// it, the same event is claimed first again, and one poison event kills
// every process that starts, forever.

// lapsedError is the last error recorded for an event whose lease lapsed
// while it was handled alone.
const lapsedError = "lease lapsed: the worker handling this event alone died or lost its database connection (a handler that exits or crashes the process, or runs out of memory, does this)"

// releaseTimeout bounds how long a worker tries to release its leases,
// retrying every releaseRetry: long enough to outlast a quick restart of
// the database, which would otherwise leave a batch waiting for its lease
// to lapse.
const (
	releaseTimeout = 5 * time.Second
	releaseRetry   = 100 * time.Millisecond
)

// dueEvent is an event as a claim first sees it.
type dueEvent struct {
	id        int64
	source    string
	webhookID string
	attempts  int
	// lapsed: the event was leased and its lease ran out; its worker died,
	// or stalled before applying it.
	lapsed bool
	// leasedAlone: that lease held only this event.
	leasedAlone bool
}

// leasePlan is what one claim does with the events it found due.
type leasePlan struct {
	lease []int64    // the events to lease
	alone bool       // lease holds one event whose lease lapsed
	dead  []dueEvent // lapsed alone on their last attempt
}

// planLease decides what a claim does with due, in claim order:
//
//	lapsed alone, attempts >= maxAttempts   → dead letter
//	any other lapsed                        → the first is leased alone; the rest wait for later claims
//	none lapsed                             → all leased together
func planLease(due []dueEvent, maxAttempts int) leasePlan {
	var plan leasePlan
	var batch []int64
	for _, ev := range due {
		switch {
		case ev.lapsed && ev.leasedAlone && ev.attempts >= maxAttempts:
			plan.dead = append(plan.dead, ev)
		case ev.lapsed && !plan.alone:
			plan.lease, plan.alone = []int64{ev.id}, true
		case !ev.lapsed:
			batch = append(batch, ev.id)
		}
	}
	if !plan.alone {
		plan.lease = batch
	}
	return plan
}

// leasedEvent is an event this worker holds a lease on.
type leasedEvent struct {
	Event
	// lease is the number of the lease, the event's leases column.
	lease int
}

// claimLeases leases up to BatchSize due events and commits, and returns
// them in the order of their IDs. more reports that other events may be
// due already: the claim found a full batch or left some for later.
func (w *Worker) claimLeases(ctx context.Context) (events []leasedEvent, more bool, err error) {
	tx, err := w.db.Begin(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("claim: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	rows, err := tx.Query(ctx, selectDueEvents, w.cfg.BatchSize)
	if err != nil {
		return nil, false, fmt.Errorf("claim: %w", err)
	}
	due, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (dueEvent, error) {
		var ev dueEvent
		err := row.Scan(&ev.id, &ev.source, &ev.webhookID, &ev.attempts, &ev.lapsed, &ev.leasedAlone)
		return ev, err
	})
	if err != nil {
		return nil, false, fmt.Errorf("claim: %w", err)
	}
	plan := planLease(due, w.cfg.MaxAttempts)
	if len(plan.dead) > 0 {
		ids := make([]int64, len(plan.dead))
		for i, ev := range plan.dead {
			ids[i] = ev.id
		}
		if _, err := tx.Exec(ctx, deadLetterLapsed, ids, lapsedError); err != nil {
			return nil, false, fmt.Errorf("claim: dead-letter lapsed events: %w", err)
		}
	}
	if len(plan.lease) > 0 {
		if events, err = leaseEventsTx(ctx, tx, plan, w.cfg.LeaseDuration); err != nil {
			return nil, false, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, false, fmt.Errorf("claim: commit: %w", err)
	}
	w.logLapses(ctx, due, plan)
	more = len(due) == w.cfg.BatchSize || len(plan.lease)+len(plan.dead) < len(due)
	return events, more, nil
}

func leaseEventsTx(ctx context.Context, tx pgx.Tx, plan leasePlan, d time.Duration) ([]leasedEvent, error) {
	rows, err := tx.Query(ctx, leaseEvents, plan.lease, d.Seconds(), plan.alone, lapsedError)
	if err != nil {
		return nil, fmt.Errorf("claim: lease: %w", err)
	}
	events, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (leasedEvent, error) {
		var ev leasedEvent
		err := row.Scan(&ev.ID, &ev.Source, &ev.WebhookID, &ev.ObjectID, &ev.Version, &ev.Payload, &ev.ReceivedAt, &ev.Attempts, &ev.lease)
		ev.Attempts-- // the handler is told the earlier attempts, not this one
		return ev, err
	})
	if err != nil {
		return nil, fmt.Errorf("claim: lease: %w", err)
	}
	slices.SortFunc(events, func(a, b leasedEvent) int { return cmp.Compare(a.ID, b.ID) })
	return events, nil
}

// logLapses reports the lapsed leases a claim acted on.
func (w *Worker) logLapses(ctx context.Context, due []dueEvent, plan leasePlan) {
	for _, ev := range plan.dead {
		w.cfg.Logger.ErrorContext(ctx, "webhook worker: event's lease lapsed on its last attempt, so its worker died while handling it; it is now a dead letter: fix the cause, then redrive it",
			"source", ev.source, "webhook_id", ev.webhookID, "attempts", ev.attempts, "max_attempts", w.cfg.MaxAttempts)
	}
	if !plan.alone {
		return
	}
	i := slices.IndexFunc(due, func(ev dueEvent) bool { return ev.id == plan.lease[0] })
	ev := due[i]
	log := w.cfg.Logger.With("source", ev.source, "webhook_id", ev.webhookID)
	if ev.leasedAlone {
		log.WarnContext(ctx, "webhook worker: event's lease lapsed while it was handled alone: its worker died or lost its database connection; retrying it",
			"attempt", ev.attempts+1, "max_attempts", w.cfg.MaxAttempts)
	} else {
		log.WarnContext(ctx, "webhook worker: event's lease, held with other events, lapsed: their worker died or stalled; retrying it alone, uncharged", "lease_duration", w.cfg.LeaseDuration)
	}
}

// release ends the leases of events a stopping worker did not apply, so
// they are due at once with their attempt taken back. It runs after ctx is
// cancelled too, and retries for up to releaseTimeout while the database
// is unreachable; after that the leases lapse instead.
func (w *Worker) release(ctx context.Context, events []leasedEvent) {
	if len(events) == 0 {
		return
	}
	ids, leases := make([]int64, len(events)), make([]int, len(events))
	for i, ev := range events {
		ids[i], leases[i] = ev.ID, ev.lease
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	retry := time.NewTicker(releaseRetry)
	defer retry.Stop()
	for {
		_, err := w.db.Exec(ctx, releaseLeases, ids, leases)
		if err == nil {
			return
		}
		select {
		case <-retry.C:
		case <-ctx.Done():
			w.cfg.Logger.WarnContext(ctx, "webhook worker: could not release the leases of events it did not apply; they are claimed again when the leases lapse",
				"events", len(events), "lease_duration", w.cfg.LeaseDuration, "error", err)
			return
		}
	}
}
