package erasure

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/heraldhq/herald/delivery"
)

// Kind is the River job kind of Args.
const Kind = "herald.erasure"

// DefaultBatchSize is the most rows one statement of an erasure deletes:
// 2,000. They are found through the endpoint's or tenant's index and
// deleted through each partition's primary key, so a statement's time
// follows the batch, not the history (issue 16's target: none over 1 s).
const DefaultBatchSize = 2000

// foreignKeyViolation is the SQLSTATE of a row still referred to.
const foreignKeyViolation = "23503"

// runBudget is how long one run of an erasure job works before it hands
// its worker slot back (snoozing for no time), well within the
// dispatcher's job timeout and without delaying a graceful stop.
const runBudget = 10 * time.Second

// Args is the River job that works one erasure.
type Args struct {
	ErasureID uuid.UUID `json:"erasure_id"`
}

// Kind returns Kind.
func (Args) Kind() string { return Kind }

// InsertOpts runs erasures on the delivery queue, so every dispatcher that
// registers Worker works them, and makes one live job per erasure.
func (Args) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: delivery.Queue, MaxAttempts: 25, UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

// Worker works erasures. Register it with the dispatcher's River client.
type Worker struct {
	river.WorkerDefaults[Args]
	pool      *pgxpool.Pool
	batchSize int
	logger    *slog.Logger
}

// NewWorker returns a Worker on pool. batchSize is the most rows a
// statement deletes; zero means DefaultBatchSize. A nil logger means
// slog.Default().
func NewWorker(pool *pgxpool.Pool, batchSize int, logger *slog.Logger) *Worker {
	if batchSize <= 0 {
		batchSize = DefaultBatchSize
	}
	if logger == nil {
		logger = slog.Default()
	}
	return &Worker{pool: pool, batchSize: batchSize, logger: logger}
}

// Work steps through the erasure until it completes. A long one continues
// in several runs of the job.
func (w *Worker) Work(ctx context.Context, job *river.Job[Args]) error {
	deadline := time.Now().Add(runBudget)
	for {
		more, err := w.Step(ctx, job.Args.ErasureID)
		if err != nil {
			return fmt.Errorf("erasure %s: %w", job.Args.ErasureID, err)
		}
		if !more {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return river.JobSnooze(0)
		}
	}
}

// Step deletes the next batch of the erasure's history, or once none is
// left the endpoint's or tenant's row, and reports whether more remains.
// It keeps no cursor: each step deletes what the indexes still find, so a
// step may run again after any failure. Work calls it in a loop; tests call
// it to stop between batches.
//
// An endpoint is erased in this order: its attempts, its replays' records,
// its deliveries, then its row (with its secrets, replays, receiver checks
// and ordered lines). A tenant: each of its endpoints in turn, then its
// messages, object versions, publish and HTTP idempotency keys, then its
// row (with its rate limits). A row of history written after the sweep
// passed (a fan-out that read the endpoint before it was marked) makes the
// row's foreign keys refuse its deletion; the next step sweeps it.
func (w *Worker) Step(ctx context.Context, erasureID uuid.UUID) (more bool, err error) {
	var (
		tenantID   string
		endpointID *uuid.UUID
		status     Status
	)
	err = w.pool.QueryRow(ctx, selectJobErasure, erasureID).Scan(&tenantID, &endpointID, &status)
	if errors.Is(err, pgx.ErrNoRows) || status == StatusCompleted {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if endpointID != nil {
		gone, err := w.endpointStep(ctx, erasureID, *endpointID, true)
		if err != nil || !gone {
			return true, err
		}
		w.logger.InfoContext(ctx, "endpoint erased", "erasure_id", erasureID, "tenant_id", tenantID, "endpoint_id", *endpointID)
		return false, nil
	}

	var next uuid.UUID
	err = w.pool.QueryRow(ctx, nextEndpoint, tenantID).Scan(&next)
	if err == nil {
		_, err := w.endpointStep(ctx, erasureID, next, false)
		return true, err
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return false, err
	}
	for _, q := range []string{deleteMessages, deleteObjectVersions, deletePublishKeys, deleteIdempotencyRecords} {
		n, err := w.batch(ctx, erasureID, q, tenantID)
		if err != nil || n > 0 {
			return true, err
		}
	}
	gone, err := w.deleteRow(ctx, erasureID, deleteTenant, tenantID, true)
	if err != nil || !gone {
		return true, err
	}
	w.logger.InfoContext(ctx, "tenant erased", "erasure_id", erasureID, "tenant_id", tenantID)
	return false, nil
}

// endpointStep deletes the next batch of the endpoint's history, or its
// row when none is left, and reports whether the row is gone; complete
// completes the erasure in the row's transaction.
func (w *Worker) endpointStep(ctx context.Context, erasureID, endpointID uuid.UUID, complete bool) (gone bool, err error) {
	for _, q := range []string{deleteAttempts, deleteReplayDeliveries, deleteDeliveries} {
		n, err := w.batch(ctx, erasureID, q, endpointID)
		if err != nil || n > 0 {
			return false, err
		}
	}
	return w.deleteRow(ctx, erasureID, deleteEndpoint, endpointID, complete)
}

// batch runs one batch statement q for key and counts what it deleted in
// the erasure's progress, in one transaction that touches one history
// table: the retention's drops lock the history tables all at once, so a
// transaction that held one while asking for another could deadlock with
// them.
func (w *Worker) batch(ctx context.Context, erasureID uuid.UUID, q string, key any) (int64, error) {
	var n int64
	err := pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, q, key, w.batchSize)
		if err != nil {
			return err
		}
		if n = tag.RowsAffected(); n == 0 {
			return nil
		}
		_, err = tx.Exec(ctx, addProgress, erasureID, n)
		return err
	})
	return n, err
}

// deleteRow deletes the endpoint's or tenant's row with q and, when
// complete, completes the erasure. false: a row of history written since
// the sweep still refers to it.
func (w *Worker) deleteRow(ctx context.Context, erasureID uuid.UUID, q string, key any, complete bool) (bool, error) {
	err := pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, q, key); err != nil {
			return err
		}
		if !complete {
			return nil
		}
		_, err := tx.Exec(ctx, completeErasure, erasureID)
		return err
	})
	if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == foreignKeyViolation {
		return false, nil
	}
	return err == nil, err
}
