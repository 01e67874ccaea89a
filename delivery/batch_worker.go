package delivery

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// BatchWorker is the River worker of BatchArgs: it makes the first attempt
// of up to MaxBatch new deliveries to one endpoint, sending several at once
// within the endpoint's in-flight cap, and records them together, a chunk
// of batchChunk deliveries at a time.
//
// It is a fast path for healthy endpoints, not a second way of retrying:
// at the first attempt that fails it starts no more, records each failed
// attempt together with a job of the delivery's own (an Args job scheduled
// for the retry), and hands every delivery it did not send to an Args job
// due at once. Those jobs then take them on exactly as if the fan-out had
// made one job per delivery, so a failing endpoint's deliveries are held
// back, retried and given up on the usual way. It does the same for an
// endpoint with a rate limit, which Args jobs keep to, and after sending for
// half the HTTP timeout, so the job ends within its timeout.
//
// A delivery belongs to its batch job while it has never been attempted and
// has no next_attempt_at: a job run again after its process died sends only
// those, and handing one off sets next_attempt_at in the transaction that
// inserts its own job.
type BatchWorker struct {
	river.WorkerDefaults[BatchArgs]

	w *Worker
}

// BatchWorker returns the worker of BatchArgs jobs. It shares w's
// configuration, connection batching, secrets and in-flight counts.
func (w *Worker) BatchWorker() *BatchWorker {
	return &BatchWorker{w: w}
}

// Timeout implements river.Worker; it returns the Worker's JobTimeout.
func (b *BatchWorker) Timeout(*river.Job[BatchArgs]) time.Duration {
	return b.w.JobTimeout()
}

// batchChunk is how many of its deliveries a batch job loads, sends and
// records at a time. River's costs are paid once per job, whatever its
// size; what a job holds in memory while it sends and while its successes
// wait to be recorded is one chunk, so the process holds at most Workers
// chunks of message bodies however large the jobs are.
const batchChunk = 20

// chunkEnd says how a batch job goes on after one chunk.
type chunkEnd int

const (
	// chunkDone: go on with the next chunk.
	chunkDone chunkEnd = iota
	// chunkStopped: an attempt failed, time ran out or the endpoint keeps
	// a rate limit; the deliveries after the chunk go to jobs of their own.
	chunkStopped
	// chunkHeldBack: the endpoint stayed at its in-flight cap; the job
	// snoozes and, run again, sends what is still its own.
	chunkHeldBack
)

// Work makes the first attempts of the job's deliveries that are still its
// own, batchChunk at a time.
func (b *BatchWorker) Work(ctx context.Context, job *river.Job[BatchArgs]) error {
	w := b.w
	if err := job.Args.check(); err != nil {
		return river.JobCancel(err)
	}
	endpoint := job.Args.EndpointID
	if !w.roomFor(ctx, job.JobRow, endpoint) {
		return w.holdBack(ctx, job.JobRow, endpoint)
	}
	run := batchRun{job: job.JobRow, endpoint: endpoint, until: time.Now().Add(w.timeout / 2)}
	ids := job.Args.DeliveryIDs
	for start := 0; start < len(ids); start += batchChunk {
		end := min(start+batchChunk, len(ids))
		next, err := b.workChunk(ctx, &run, ids[start:end])
		if err != nil {
			return err
		}
		switch next {
		case chunkStopped:
			return w.handOff(ctx, endpoint, ids[end:])
		case chunkHeldBack:
			return w.holdBack(ctx, job.JobRow, endpoint)
		}
	}
	return nil
}

// batchRun is what the chunks of one batch job share.
type batchRun struct {
	job      *rivertype.JobRow
	endpoint uuid.UUID
	// until is when the job stops starting attempts: half the HTTP timeout
	// after it began, so that it ends within its own timeout.
	until    time.Time
	admitted bool
}

// workChunk makes the first attempts of the deliveries ids that are still
// the job's own and records them.
func (b *BatchWorker) workChunk(ctx context.Context, run *batchRun, ids []uuid.UUID) (chunkEnd, error) {
	w := b.w
	found, err := w.loads.doAll(ctx, ids)
	if err != nil {
		return 0, fmt.Errorf("load %d deliveries to endpoint %s: %w", len(ids), run.endpoint, err)
	}
	var todo []loaded
	for _, d := range found {
		if d != nil && d.status == statusPending && d.attemptCount == 0 && d.nextAttemptAt.IsZero() {
			todo = append(todo, *d)
		}
	}
	switch {
	case len(todo) == 0:
		return chunkDone, nil
	case !todo[0].endpointEnabled:
		if _, err := w.db.Exec(ctx, cancelDeliveries, idsOf(todo), w.now()); err != nil {
			return 0, fmt.Errorf("cancel %d deliveries of disabled endpoint %s: %w", len(todo), run.endpoint, err)
		}
		return chunkDone, nil
	case todo[0].rateLimit > 0:
		return chunkStopped, w.handOff(ctx, run.endpoint, idsOf(todo))
	}

	// As for one delivery, the slots are held for the requests alone. Room
	// that another job took since the last chunk (or since roomFor) is
	// waited for once, as a new job would.
	releaseAll, lanes := w.inflight.acquireUpTo(run.endpoint, len(todo))
	if lanes == 0 && w.inflight.waitForRoom(ctx, run.endpoint, busyPatience) {
		releaseAll, lanes = w.inflight.acquireUpTo(run.endpoint, len(todo))
	}
	if lanes == 0 {
		return chunkHeldBack, nil
	}
	release := sync.OnceFunc(releaseAll)
	defer release()
	if !run.admitted {
		if err := admitted(ctx, run.job); err != nil {
			return 0, err
		}
		run.admitted = true
	}
	attempts := w.sendUntilFailure(ctx, todo, lanes, run.until)
	release()
	if err := ctx.Err(); err != nil {
		// As for one delivery: River runs the job again, and what was
		// sent is sent again, deduplicated by webhook-id.
		return 0, fmt.Errorf("deliveries to endpoint %s interrupted: %w", run.endpoint, err)
	}

	var (
		wins   []success
		failed []int
		unsent []uuid.UUID
	)
	for i, a := range attempts {
		switch {
		case a == nil:
			unsent = append(unsent, todo[i].id)
		case a.result.succeeded():
			wins = append(wins, success{d: todo[i], trigger: TriggerScheduled, a: *a})
		default:
			failed = append(failed, i)
		}
	}
	recorded, err := w.successes.doAll(ctx, wins)
	if err != nil {
		w.logger.WarnContext(ctx, "recording successes together failed; recording alone", "endpoint", run.endpoint, "error", err)
		recorded = make([]bool, len(wins))
	}
	for i, s := range wins {
		if recorded[i] {
			continue
		}
		if _, err := w.record(ctx, s.d, s.trigger, s.a, nil); err != nil {
			return 0, err
		}
	}
	for _, i := range failed {
		if _, err := w.record(ctx, todo[i], TriggerScheduled, *attempts[i], retryAlone(todo[i])); err != nil {
			return 0, err
		}
	}
	if len(failed) > 0 || len(unsent) > 0 {
		return chunkStopped, w.handOff(ctx, run.endpoint, unsent)
	}
	return chunkDone, nil
}

// sendUntilFailure sends todo in order, lanes at a time, and returns each
// delivery's attempt: nil for one it did not send because an attempt
// failed, ctx ended or until passed.
func (w *Worker) sendUntilFailure(ctx context.Context, todo []loaded, lanes int, until time.Time) []*attempt {
	var (
		attempts = make([]*attempt, len(todo))
		next     atomic.Int64
		stop     atomic.Bool
		wg       sync.WaitGroup
	)
	for range min(lanes, len(todo)) {
		wg.Go(func() {
			for !stop.Load() && ctx.Err() == nil && time.Now().Before(until) {
				i := int(next.Add(1)) - 1
				if i >= len(todo) {
					return
				}
				a := w.send(ctx, todo[i])
				attempts[i] = &a
				if !a.result.succeeded() {
					stop.Store(true)
				}
			}
		})
	}
	wg.Wait()
	return attempts
}

// retryAlone returns the retryFunc that gives delivery d a job of its own
// for its retry. The job is available at once and snoozes until the
// delivery's next_attempt_at, as after any failed attempt: a job scheduled
// for later would wait for River's scheduler, up to 5 s more, which would
// blur the jitter of the short first retries.
func retryAlone(d loaded) retryFunc {
	return func(ctx context.Context, tx pgx.Tx) error {
		client, err := river.ClientFromContextSafely[pgx.Tx](ctx)
		if err != nil {
			return err
		}
		_, err = client.InsertTx(ctx, tx, Args{DeliveryID: d.id, EndpointID: d.endpointID, Trigger: TriggerScheduled}, nil)
		return err
	}
}

// handOff gives each of the deliveries ids to endpoint that is still its
// batch job's a job of its own, due at once.
func (w *Worker) handOff(ctx context.Context, endpoint uuid.UUID, ids []uuid.UUID) error {
	if len(ids) == 0 {
		return nil
	}
	client, err := river.ClientFromContextSafely[pgx.Tx](ctx)
	if err != nil {
		return fmt.Errorf("hand off %d deliveries: %w", len(ids), err)
	}
	tx, err := w.db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("hand off %d deliveries: %w", len(ids), err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	rows, err := tx.Query(ctx, handOff, ids, w.now())
	if err != nil {
		return fmt.Errorf("hand off %d deliveries: %w", len(ids), err)
	}
	mine, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return fmt.Errorf("hand off %d deliveries: %w", len(ids), err)
	}
	if len(mine) == 0 {
		return nil
	}
	jobs := make([]river.InsertManyParams, len(mine))
	for i, id := range mine {
		jobs[i] = river.InsertManyParams{Args: Args{DeliveryID: id, EndpointID: endpoint, Trigger: TriggerScheduled}}
	}
	if _, err := client.InsertManyFastTx(ctx, tx, jobs); err != nil {
		return fmt.Errorf("hand off %d deliveries: %w", len(mine), err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("hand off %d deliveries: %w", len(mine), err)
	}
	return nil
}

func idsOf(ds []loaded) []uuid.UUID {
	ids := make([]uuid.UUID, len(ds))
	for i, d := range ds {
		ids[i] = d.id
	}
	return ids
}
