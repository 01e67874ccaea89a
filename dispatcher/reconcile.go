package dispatcher

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/heraldhq/herald/delivery"
)

// DefaultReconcileInterval is how often, by default, the reconciler looks
// for pending deliveries whose job ended without settling them, and so the
// longest such a delivery waits for a new job after its old one ended (see
// Config.ReconcileInterval). A pass that finds nothing reads the few
// delivery jobs that were cancelled or discarded since the last one.
const DefaultReconcileInterval = time.Minute

// The reconciler's pass.
const (
	// reconcileOverlap is how long after its finalized_at a job that
	// ended may become visible: finalized_at is its dispatcher's clock when
	// the job ended, committed a moment later, so jobs do not become
	// visible in finalized_at order. It covers River's completer retrying a
	// commit for seconds and a dispatcher clock up to the receivers' skew
	// tolerance (5 minutes) behind the database's. A pass therefore records
	// as examined only what ended this long before it started, and the
	// next pass looks at the rest again, which changes nothing.
	reconcileOverlap = 10 * time.Minute
	// reconcileBatch is how many ended jobs one step of a pass reads.
	reconcileBatch = 500
	// maxLoggedRepairs bounds the delivery ids a log line lists.
	maxLoggedRepairs = 10
)

// reconcileArgs is the periodic River job of the reconciler; River's leader
// inserts one every ReconcileInterval, and any dispatcher works it.
type reconcileArgs struct{}

// Kind implements river.JobArgs.
func (reconcileArgs) Kind() string { return "herald.reconcile" }

// InsertOpts puts the job on the delivery queue, which every dispatcher
// works, and lets only one wait or run at a time: a pass that outlasts the
// interval, or waits behind a backlog of deliveries, is not joined by more.
func (reconcileArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{
		Queue: delivery.Queue,
		UniqueOpts: river.UniqueOpts{ByState: []rivertype.JobState{
			rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
			rivertype.JobStateRunning, rivertype.JobStateScheduled,
		}},
	}
}

// reconciler finds pending deliveries with no live job and gives each one.
//
// Every pending delivery got a job in the transaction that made it pending
// (the fan-out, a resend, a replay) or that recorded its last attempt, and
// that job carries it to the end unless the job itself ends first: River
// discards it after delivery.MaxJobAttempts errors, or it is cancelled. So
// rather than walk the pending deliveries, which no index finds (indexing
// status would cost every recorded attempt its HOT update, see
// migrations/0010_deliveries_hot_updates.sql), a pass walks the delivery
// jobs that ended that way since the last pass, in (finalized_at, id) order
// through River's index, and checks their deliveries: still pending and no
// live delivery job (river_job_live_delivery) means stranded. A job
// completes only when its delivery is settled or handed to another job in
// the same transaction, so completed jobs are not read.
//
// A stranded delivery gets an ordinary delivery.Args job in a transaction
// that first locks the delivery and then checks again: whoever else gives a
// delivery a job holds its row until that job is committed. A delivery
// that still waited for its first attempt in a batch job is taken over the
// way a batch job hands one off (next_attempt_at set), so no batch job
// sends it as well.
//
// A job deleted while it was live (DELETE FROM river_job, River's JobDelete
// of a scheduled job) leaves nothing to walk; Herald never does it, and
// River's cleaner deletes only ended jobs, long after their retention
// (cancelled 24 h, discarded 7 days) has let the reconciler see them.
type reconciler struct {
	river.WorkerDefaults[reconcileArgs]

	pool    *pgxpool.Pool
	logger  *slog.Logger
	timeout time.Duration
}

// Timeout implements river.Worker. A pass stops examining at half of it
// (budget) and saves its progress, so River never cancels one.
func (r *reconciler) Timeout(*river.Job[reconcileArgs]) time.Duration {
	return r.timeout
}

// Work runs one pass: it examines the delivery jobs that ended since the
// last pass, repairs what they stranded, and records how far it got.
func (r *reconciler) Work(ctx context.Context, _ *river.Job[reconcileArgs]) error {
	client, err := river.ClientFromContextSafely[pgx.Tx](ctx)
	if err != nil {
		return err
	}
	budget := time.Now().Add(r.timeout / 2)
	var cursor, now time.Time
	if err := r.pool.QueryRow(ctx, readCursor).Scan(&cursor, &now); err != nil {
		return fmt.Errorf("reconcile: read where the last pass got to: %w", err)
	}
	at, id := cursor, int64(0)
	var examined, repaired int
	reachedEnd := false
	for !reachedEnd && time.Now().Before(budget) {
		jobs, err := r.ended(ctx, at, id)
		if err != nil {
			return err
		}
		reachedEnd = len(jobs) < reconcileBatch
		if len(jobs) == 0 {
			break
		}
		n, err := r.repairStranded(ctx, client, jobs)
		if err != nil {
			return err
		}
		examined += len(jobs)
		repaired += n
		last := jobs[len(jobs)-1]
		at, id = last.finalizedAt, last.id
	}
	// Every job that ended before now−reconcileOverlap was visible when the
	// pass started; those before at have been walked.
	until := now.Add(-reconcileOverlap)
	if !reachedEnd && at.Before(until) {
		until = at
	}
	if _, err := r.pool.Exec(ctx, advanceCursor, until); err != nil {
		return fmt.Errorf("reconcile: record progress: %w", err)
	}
	r.logger.DebugContext(ctx, "reconciled deliveries with their jobs", "ended_jobs", examined, "repaired", repaired, "examined_until", until)
	return nil
}

// endedJob is a delivery job that ended without completing.
type endedJob struct {
	id          int64
	finalizedAt time.Time
	deliveries  []uuid.UUID
}

// ended returns up to reconcileBatch delivery jobs that ended without
// completing after (at, id), in that order.
func (r *reconciler) ended(ctx context.Context, at time.Time, id int64) ([]endedJob, error) {
	rows, err := r.pool.Query(ctx, endedDeliveryJobs, at, id, reconcileBatch)
	if err != nil {
		return nil, fmt.Errorf("reconcile: read ended delivery jobs: %w", err)
	}
	var (
		jobs []endedJob
		j    endedJob
		kind string
		args []byte
	)
	_, err = pgx.ForEachRow(rows, []any{&j.id, &j.finalizedAt, &kind, &args}, func() error {
		jobs = append(jobs, endedJob{id: j.id, finalizedAt: j.finalizedAt, deliveries: deliveriesOf(kind, args)})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reconcile: read ended delivery jobs: %w", err)
	}
	return jobs, nil
}

// deliveriesOf returns the deliveries a job of kind with args was for; none
// when the args are malformed (River cancelled such a job at once, and it
// names no delivery to repair).
func deliveriesOf(kind string, args []byte) []uuid.UUID {
	var ids []uuid.UUID
	switch kind {
	case delivery.Kind:
		var a delivery.Args
		if json.Unmarshal(args, &a) == nil {
			ids = []uuid.UUID{a.DeliveryID}
		}
	case delivery.BatchKind:
		var a delivery.BatchArgs
		if json.Unmarshal(args, &a) == nil {
			ids = a.DeliveryIDs
		}
	}
	out := ids[:0]
	for _, id := range ids {
		if id != uuid.Nil {
			out = append(out, id)
		}
	}
	return out
}

// repairStranded gives a job to each delivery of jobs that is pending with
// no live job, and returns how many it gave one. It looks first without
// locking: almost always the deliveries were settled or repaired since.
func (r *reconciler) repairStranded(ctx context.Context, client *river.Client[pgx.Tx], jobs []endedJob) (int, error) {
	var ids []uuid.UUID
	for _, j := range jobs {
		ids = append(ids, j.deliveries...)
	}
	suspects, err := stranded(ctx, r.pool, ids)
	if err != nil || len(suspects) == 0 {
		return 0, err
	}
	suspectIDs := make([]uuid.UUID, len(suspects))
	for i, s := range suspects {
		suspectIDs[i] = s.id
	}

	tx, err := r.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("reconcile: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	// The check runs again after the lock, in a statement of its own: its
	// snapshot then holds the jobs of whoever held a row before us.
	if _, err := tx.Exec(ctx, lockPending, suspectIDs); err != nil {
		return 0, fmt.Errorf("reconcile: lock %d stranded deliveries: %w", len(suspectIDs), err)
	}
	repairs, err := stranded(ctx, tx, suspectIDs)
	if err != nil || len(repairs) == 0 {
		return 0, err
	}
	params := make([]river.InsertManyParams, len(repairs))
	repaired := make([]uuid.UUID, len(repairs))
	for i, s := range repairs {
		params[i] = river.InsertManyParams{Args: delivery.Args{DeliveryID: s.id, EndpointID: s.endpointID, Trigger: delivery.TriggerScheduled, Generation: s.generation}}
		repaired[i] = s.id
	}
	if _, err := client.InsertManyFastTx(ctx, tx, params); err != nil {
		return 0, fmt.Errorf("reconcile: insert jobs for %d stranded deliveries: %w", len(repairs), err)
	}
	if _, err := tx.Exec(ctx, takeOver, repaired); err != nil {
		return 0, fmt.Errorf("reconcile: take over %d stranded deliveries: %w", len(repairs), err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("reconcile: commit jobs for %d stranded deliveries: %w", len(repairs), err)
	}
	r.logger.WarnContext(ctx, "gave pending deliveries whose job had ended a new job",
		"repaired", len(repaired), "deliveries", repaired[:min(len(repaired), maxLoggedRepairs)])
	return len(repaired), nil
}

// strandedDelivery is a pending delivery with no live job of its
// generation: a job of an earlier one (fenced out by a requeue) sends
// nothing when it wakes, so it does not count.
type strandedDelivery struct {
	id, endpointID uuid.UUID
	generation     int
}

// querier is a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// stranded returns those of the deliveries ids that are pending with no
// live job, in id order.
func stranded(ctx context.Context, db querier, ids []uuid.UUID) ([]strandedDelivery, error) {
	rows, err := db.Query(ctx, strandedDeliveries, ids)
	if err != nil {
		return nil, fmt.Errorf("reconcile: look for stranded deliveries: %w", err)
	}
	var (
		out []strandedDelivery
		s   strandedDelivery
	)
	_, err = pgx.ForEachRow(rows, []any{&s.id, &s.endpointID, &s.generation}, func() error {
		out = append(out, s)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reconcile: look for stranded deliveries: %w", err)
	}
	return out, nil
}
