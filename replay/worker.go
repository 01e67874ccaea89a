package replay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/riverqueue/river"

	"github.com/heraldhq/herald/delivery"
)

// Kind is the River job kind of Args.
const Kind = "herald.replay"

// DefaultBatchSize is how many deliveries one replay transaction handles.
const DefaultBatchSize = 500

// runBudget is how long one run of a replay job works before it hands its
// worker slot back (snoozing for no time), well within the dispatcher's job
// timeout and without delaying a graceful stop.
const runBudget = 10 * time.Second

// Args is the River job that walks one replay.
type Args struct {
	ReplayID uuid.UUID `json:"replay_id"`
}

// Kind returns Kind.
func (Args) Kind() string { return Kind }

// InsertOpts runs replays on the delivery queue, so every dispatcher that
// registers Worker works them, and makes one job per replay.
func (Args) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: delivery.Queue, MaxAttempts: 25, UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

// DB is what the replay functions need from a pool or a transaction.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Begin(ctx context.Context) (pgx.Tx, error)
}

// DefaultQuietAfter is Worker's quiet period when none is given: the
// dispatcher's default for how long a job may run before River takes it
// for dead (dispatcher.DefaultRescueStuckJobsAfter).
const DefaultQuietAfter = 3 * time.Minute

// Worker walks replays. Register it with the dispatcher's River client.
type Worker struct {
	river.WorkerDefaults[Args]
	db        DB
	batchSize int
	// quietAfter is how long a delivery must have been left alone (not
	// updated, nor completed) for its replay's batch job to be Quiet
	// (delivery.BatchArgs): an attempt is in flight only while its job
	// runs, and a job that loaded the delivery before it settled has
	// ended by then, or is taken for dead.
	quietAfter time.Duration
	logger     *slog.Logger
}

// NewWorker returns a Worker on db. batchSize is how many deliveries a
// transaction handles; zero means DefaultBatchSize. quietAfter must be at
// least the longest a delivery job may run (the dispatcher's
// RescueStuckJobsAfter); zero means DefaultQuietAfter. A nil logger means
// slog.Default().
func NewWorker(db DB, batchSize int, quietAfter time.Duration, logger *slog.Logger) *Worker {
	if batchSize <= 0 {
		batchSize = DefaultBatchSize
	}
	if quietAfter <= 0 {
		quietAfter = DefaultQuietAfter
	}
	if logger == nil {
		logger = slog.Default()
	}
	return &Worker{db: db, batchSize: batchSize, quietAfter: quietAfter, logger: logger}
}

// Work queues the replay's deliveries batch by batch until none is left,
// then watches them drain (WatchDrain). Each batch commits on its own, so
// a job that stops halfway (its process died, say) resumes after the last
// committed batch when River runs it again. A long replay continues in
// several runs of the job.
func (w *Worker) Work(ctx context.Context, job *river.Job[Args]) error {
	jobs, err := river.ClientFromContextSafely[pgx.Tx](ctx)
	if err != nil {
		return fmt.Errorf("replay %s: %w", job.Args.ReplayID, err)
	}
	deadline := time.Now().Add(runBudget)
	for {
		more, err := w.step(ctx, jobs, job.Args.ReplayID)
		if err != nil {
			return fmt.Errorf("replay %s: %w", job.Args.ReplayID, err)
		}
		if !more {
			return w.WatchDrain(ctx, job.Args.ReplayID)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return river.JobSnooze(0)
		}
	}
}

// Drain watches: a completed replay is looked at again after a tenth of
// the time since its walk completed, between minDrainWatch and
// maxDrainWatch, so that a replay draining now is marked within about a
// second and one whose endpoint keeps failing for days costs a few
// counts an hour.
const (
	minDrainWatch = time.Second
	maxDrainWatch = 5 * time.Minute
)

// WatchDrain marks a completed replay drained (drained_at) once none of
// its deliveries is pending, and until then returns a snooze of the job
// to look again. Work calls it after the walk; tests call it directly.
// Reading the progress of a drained replay no longer counts its pending
// deliveries, a count that reads every index entry the replay left in
// deliveries_pending until vacuum removes them; the watch's own counts,
// made as the deliveries settle, each read only the entries left since
// the last.
func (w *Worker) WatchDrain(ctx context.Context, replayID uuid.UUID) error {
	var (
		completedAt time.Time
		pending     int
	)
	err := w.db.QueryRow(ctx, selectDrain, replayID).Scan(&completedAt, &pending)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil // gone with its endpoint, not completed, or drained
	case err != nil:
		return fmt.Errorf("replay %s: watch its drain: %w", replayID, err)
	case pending == 0:
		return nil // marked drained by the same statement
	}
	return river.JobSnooze(min(max(time.Since(completedAt)/10, minDrainWatch), maxDrainWatch))
}

// Step handles the next batch of a replay with jobs queueing deliveries,
// and reports whether more remain. Work calls it in a loop; tests call it
// to stop between batches.
func (w *Worker) Step(ctx context.Context, jobs Inserter, replayID uuid.UUID) (more bool, err error) {
	return w.step(ctx, jobs, replayID)
}

// walked is a row of nextBatch.
type walked struct {
	id        uuid.UUID
	createdAt time.Time
	selected  bool
	quiet     bool
}

// requeuedDelivery is a row of requeueBatch.
type requeuedDelivery struct {
	ID         uuid.UUID
	Generation int
}

func (w *Worker) step(ctx context.Context, jobs Inserter, replayID uuid.UUID) (bool, error) {
	tx, err := w.db.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()

	var (
		endpointID   uuid.UUID
		since, until time.Time
		onlyFailed   bool
		status       string
		cursorAt     *time.Time
		cursorID     *uuid.UUID
		ordered      bool
	)
	err = tx.QueryRow(ctx, lockReplay, replayID).Scan(&endpointID, &since, &until, &onlyFailed, &status, &cursorAt, &cursorID, &ordered)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil // deleted with its endpoint
	}
	if err != nil {
		return false, err
	}
	if status != StatusRunning {
		return false, nil
	}

	// With no cursor yet the walk starts after (since - 1µs, the greatest
	// id), which is at since: timestamps have microsecond precision.
	after, afterID := since.Add(-time.Microsecond), uuid.Max
	if cursorAt != nil && cursorID != nil {
		after, afterID = *cursorAt, *cursorID
	}
	rows, err := tx.Query(ctx, nextBatch, endpointID, after, afterID, until, w.batchSize, onlyFailed, w.quietAfter.Seconds())
	if err != nil {
		return false, err
	}
	var (
		batch     []uuid.UUID
		messages  []uuid.UUID // of batch
		quiet     = map[uuid.UUID]bool{}
		last      walked
		walkedAny bool
		row       walked
		messageID uuid.UUID
	)
	if _, err := pgx.ForEachRow(rows, []any{&row.id, &messageID, &row.createdAt, &row.selected, &row.quiet}, func() error {
		walkedAny, last = true, row
		if row.selected {
			batch = append(batch, row.id)
			messages = append(messages, messageID)
			quiet[row.id] = row.quiet
		}
		return nil
	}); err != nil {
		return false, err
	}
	if !walkedAny {
		if _, err := tx.Exec(ctx, completeReplay, replayID); err != nil {
			return false, err
		}
		w.logger.InfoContext(ctx, "replay completed", "replay_id", replayID, "endpoint_id", endpointID)
		return false, tx.Commit(ctx)
	}

	if _, err := tx.Exec(ctx, recordReplayDeliveries, replayID, batch); err != nil {
		return false, err
	}
	if ordered {
		// An ordered endpoint's lines are locked before their deliveries.
		if err := delivery.LockLines(ctx, tx, endpointID, messages); err != nil {
			return false, err
		}
	}
	// Only deliveries that are not pending are queued; a pending one is
	// already on its way and is counted without a second job.
	requeued, err := tx.Query(ctx, requeueBatch, batch)
	if err != nil {
		return false, err
	}
	queued, err := pgx.CollectRows(requeued, pgx.RowToStructByPos[requeuedDelivery])
	if err != nil {
		return false, err
	}
	if ordered {
		ids := make([]uuid.UUID, len(queued))
		for i, q := range queued {
			ids[i] = q.ID
		}
		if err := joinLine(ctx, tx, jobs, ids, delivery.TriggerReplay); err != nil {
			return false, err
		}
	} else if params := batchJobs(endpointID, queued, quiet); len(params) > 0 {
		if _, err := jobs.InsertManyTx(ctx, tx, params); err != nil {
			return false, fmt.Errorf("queue %d delivery batch jobs: %w", len(params), err)
		}
	}
	if _, err := tx.Exec(ctx, advanceReplay, replayID, len(batch), last.createdAt, last.id); err != nil {
		return false, err
	}
	return true, tx.Commit(ctx)
}

// batchJobs puts the requeued deliveries in delivery batch jobs, at most
// delivery.MaxBatch each, one generation a job, in the order they come. A
// batch job sends its deliveries with as many of the endpoint's in-flight
// slots as are free and records them together; a job per delivery left
// all but the endpoint's cap of them snoozing in turn, and a replay of
// 2,000 to one healthy endpoint took 16 s (about 125 a second). A job is
// Quiet when all its deliveries are quiet (see Worker's quietAfter).
func batchJobs(endpointID uuid.UUID, queued []requeuedDelivery, quiet map[uuid.UUID]bool) []river.InsertManyParams {
	var (
		params []river.InsertManyParams
		open   = map[int]int{} // generation → index in params of its unfilled job
	)
	for _, d := range queued {
		i, ok := open[d.Generation]
		if !ok || len(params[i].Args.(delivery.BatchArgs).DeliveryIDs) == delivery.MaxBatch {
			params = append(params, river.InsertManyParams{Args: delivery.BatchArgs{
				EndpointID: endpointID, Trigger: delivery.TriggerReplay, Generation: d.Generation, Quiet: true,
			}})
			i = len(params) - 1
			open[d.Generation] = i
		}
		args := params[i].Args.(delivery.BatchArgs)
		args.DeliveryIDs = append(args.DeliveryIDs, d.ID)
		args.Quiet = args.Quiet && quiet[d.ID]
		params[i].Args = args
	}
	return params
}
