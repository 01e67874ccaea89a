package delivery

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
)

// Ordered delivery per object (an endpoint with ordering "object"): the
// deliveries of one object to one endpoint form a line, sent one at a time
// in version order. Only the line's head has a live job; the others wait in
// herald.ordered_waiting with none. Whoever settles a head (the recording
// of its attempt: succeeded, or given up) makes the next version the head
// and gives it a job in the same transaction. The SQL functions of
// migrations/0030_ordered_delivery.sql (rewritten by 0037 and 0048) do the
// changes to lines; docs/DESIGN.md ("Ordered delivery") has the rules and
// why they hold.

// OrderedWaitSnooze is how long a head's job waits before it looks again
// when a lower version of its object has not been fanned out yet: a
// concurrent fan-out holds it and commits within its transaction's time.
const OrderedWaitSnooze = 200 * time.Millisecond

// Head is a delivery that has just become the head of its line and needs a
// job: see LineJobs.
type Head struct {
	DeliveryID uuid.UUID
	EndpointID uuid.UUID
	Generation int
	// Batchable says the delivery may go in a BatchArgs job: it has not
	// been attempted since it was created or requeued, and nothing set its
	// next attempt.
	Batchable bool
	Trigger   Trigger
}

// LineJobs returns the jobs for heads: a BatchArgs job for up to MaxBatch
// batchable heads of one endpoint, generation and trigger (heads are of
// different objects, so a batch may send them at once), an Args job for
// each of the others.
func LineJobs(heads []Head) []river.InsertManyParams {
	type group struct {
		endpoint   uuid.UUID
		generation int
		trigger    Trigger
	}
	var (
		jobs []river.InsertManyParams
		open = map[group]int{} // → index in jobs of its unfilled batch
	)
	for _, h := range heads {
		if !h.Batchable {
			jobs = append(jobs, river.InsertManyParams{Args: Args{DeliveryID: h.DeliveryID, EndpointID: h.EndpointID, Trigger: h.Trigger, Generation: h.Generation}})
			continue
		}
		g := group{h.EndpointID, h.Generation, h.Trigger}
		i, ok := open[g]
		if !ok || len(jobs[i].Args.(BatchArgs).DeliveryIDs) == MaxBatch {
			jobs = append(jobs, river.InsertManyParams{Args: BatchArgs{EndpointID: h.EndpointID, Trigger: h.Trigger, Generation: h.Generation}})
			i = len(jobs) - 1
			open[g] = i
		}
		args := jobs[i].Args.(BatchArgs)
		args.DeliveryIDs = append(args.DeliveryIDs, h.DeliveryID)
		jobs[i].Args = args
	}
	// A batch of one costs River as much as an Args job, which is simpler.
	for i, j := range jobs {
		if b, ok := j.Args.(BatchArgs); ok && len(b.DeliveryIDs) == 1 {
			// Alone where the batch job would not have looked either.
			jobs[i].Args = Args{DeliveryID: b.DeliveryIDs[0], EndpointID: b.EndpointID, Trigger: b.Trigger, Generation: b.Generation, Alone: b.Generation == 0}
		}
	}
	return jobs
}

// Querier runs statements: a transaction, or a pool.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// JoinLines puts the pending deliveries ids of ordered endpoints in their
// lines, in version order, in tx, and returns those that are now the head of
// their line, for the caller to give jobs (LineJobs) in tx; trigger is what
// their attempts record. Deliveries of endpoints without ordering are left
// alone. preempt lets a version below the line's head go ahead of it: only
// the fan-out may pass it (see herald.ordered_join). A caller that has
// locked deliveries must have called LockLines on them first.
func JoinLines(ctx context.Context, tx Querier, ids []uuid.UUID, trigger Trigger, preempt bool) ([]Head, error) {
	heads, err := queryHeads(ctx, tx, joinLines, ids, string(trigger), preempt)
	if err != nil {
		return nil, fmt.Errorf("join %d deliveries to their lines: %w", len(ids), err)
	}
	return heads, nil
}

// LockLines locks, in tx, the lines of the messages messageIDs to the
// endpoint endpointID, if it is ordered, creating the missing ones. Every
// writer of a line locks it before the line's deliveries, so one that is
// about to lock deliveries (a resend, a replay) calls it first.
func LockLines(ctx context.Context, tx pgx.Tx, endpointID uuid.UUID, messageIDs []uuid.UUID) error {
	if _, err := tx.Exec(ctx, lockLines, endpointID, messageIDs); err != nil {
		return fmt.Errorf("lock the lines of %d messages to endpoint %s: %w", len(messageIDs), endpointID, err)
	}
	return nil
}

// ResumeLines gives every parked line of the enabled endpoint endpointID
// its next head, in tx, and returns them for the caller to give jobs
// (LineJobs). Enabling an endpoint calls it in the enabling transaction;
// for an endpoint without ordering it returns nothing.
func ResumeLines(ctx context.Context, tx Querier, endpointID uuid.UUID) ([]Head, error) {
	heads, err := queryHeads(ctx, tx, resumeLines, endpointID, nil)
	if err != nil {
		return nil, fmt.Errorf("resume the lines of endpoint %s: %w", endpointID, err)
	}
	return heads, nil
}

func queryHeads(ctx context.Context, db Querier, sql string, args ...any) ([]Head, error) {
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	var (
		heads   []Head
		h       Head
		trigger string
	)
	_, err = pgx.ForEachRow(rows, []any{&h.DeliveryID, &h.EndpointID, &h.Generation, &h.Batchable, &trigger}, func() error {
		h.Trigger = Trigger(trigger)
		heads = append(heads, h)
		return nil
	})
	return heads, err
}

// gateVerdict is what the gate says of a delivery about to be sent.
type gateVerdict int

const (
	// gateGo: send it; it is its line's head, or not in a line at all.
	gateGo gateVerdict = iota
	// gateWait: it is the head, but a lower version of its object has not
	// been fanned out yet; look again after OrderedWaitSnooze.
	gateWait
	// gateBehind: it waits behind its line's head and its job ends; it gets
	// another when it becomes the head.
	gateBehind
)

// gateOf says whether d, a delivery of an ordered endpoint, may be sent
// now, from what its load read in one statement: a lower version's fan-out
// commits its deliveries, the line's new head and the message's
// dispatched_at together, so the load saw either the lower version
// undispatched or d no longer the head.
func gateOf(d loaded) gateVerdict {
	switch {
	case d.lineWaiting && !d.lineHead:
		return gateBehind
	case d.lowerUndispatched:
		return gateWait
	}
	return gateGo
}

// park holds the line of d, the head of an ordered endpoint found disabled:
// d goes back to waiting and the line keeps no job until the endpoint is
// enabled (ResumeLines). Enabling may have committed after the park
// looked; so park looks again after its commit and resumes the line itself
// if the endpoint is enabled by then.
func (w *Worker) park(ctx context.Context, jobs JobInserter, d loaded) error {
	if _, err := w.db.Exec(ctx, parkLine, d.endpointID, d.objectID, d.objectVersion, d.id); err != nil {
		return fmt.Errorf("hold the line of delivery %s to disabled endpoint %s: %w", d.id, d.endpointID, err)
	}
	var enabled bool
	if err := w.db.QueryRow(ctx, endpointEnabled, d.endpointID).Scan(&enabled); err != nil || !enabled {
		return err
	}
	tx, err := w.db.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	heads, err := queryHeads(ctx, tx, resumeLines, d.endpointID, d.objectID)
	if err != nil {
		return fmt.Errorf("resume the line of delivery %s: %w", d.id, err)
	}
	if err := insertLineJobs(ctx, tx, jobs, heads); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// JobInserter inserts River jobs in a transaction; *river.Client[pgx.Tx] is
// one.
type JobInserter interface {
	InsertManyFastTx(ctx context.Context, tx pgx.Tx, params []river.InsertManyParams) (int, error)
}

// insertLineJobs gives heads their jobs in tx.
func insertLineJobs(ctx context.Context, tx pgx.Tx, jobs JobInserter, heads []Head) error {
	if len(heads) == 0 {
		return nil
	}
	if jobs == nil {
		return fmt.Errorf("give %d heads of their lines jobs: no River client in this context", len(heads))
	}
	if _, err := jobs.InsertManyFastTx(ctx, tx, LineJobs(heads)); err != nil {
		return fmt.Errorf("give %d heads of their lines jobs: %w", len(heads), err)
	}
	return nil
}

// jobsFrom returns the River client that runs the job of ctx, nil outside
// a job.
func jobsFrom(ctx context.Context) JobInserter {
	client, err := river.ClientFromContextSafely[pgx.Tx](ctx)
	if err != nil {
		return nil
	}
	return client
}
