package delivery

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/heraldhq/herald/internal/deliverystatus"
)

// BatchWorker is the River worker of BatchArgs: it makes the first attempt
// of up to MaxBatch new deliveries to one endpoint, sending several at once
// within the endpoint's in-flight cap, and records them together.
//
// It is a fast path for healthy endpoints, not a second way of retrying:
// at the first attempt that fails it starts no more, records each failed
// attempt together with a job of the delivery's own (an Args job scheduled
// for the retry), and hands every delivery it did not send to an Args job
// due at once. Those jobs then take them on exactly as if the fan-out had
// made one job per delivery, so a failing endpoint's deliveries are held
// back, retried and given up on the usual way. It does the same for an
// endpoint with a rate limit, which Args jobs keep to, and after sending for
// half the HTTP timeout, so the job ends within its timeout. A fault on
// Herald's side (a Fault) is not a failed attempt: the job starts no more
// attempts, records none for the deliveries it stopped, keeps every
// delivery it did not send and snoozes for a deferral, as an Args job
// would.
//
// A delivery belongs to its batch job while it is at the job's
// generation, has not been attempted in it and has no next_attempt_at
// (ownedByBatch): a job run again after its process died sends only those,
// handing one off sets next_attempt_at in the transaction that inserts its
// own job, and a requeue, inserting a job of its own, moves the generation
// on.
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

// Work makes the first attempts of the job's deliveries that are still its
// own.
func (b *BatchWorker) Work(ctx context.Context, job *river.Job[BatchArgs]) (err error) {
	w := b.w
	endpoint := job.Args.EndpointID
	defer func() { w.jobFailed(ctx, err, "endpoint", endpoint, "deliveries", len(job.Args.DeliveryIDs)) }()
	trigger, err := job.Args.check()
	if err != nil {
		return river.JobCancel(err)
	}
	generation := job.Args.Generation
	if fault := w.clockFault(); fault != nil {
		return w.deferJob(ctx, job.JobRow, fault, "endpoint", endpoint, "deliveries", len(job.Args.DeliveryIDs))
	}
	if err := w.checkRoom(ctx, job.JobRow, endpoint); err != nil {
		return err
	}
	found, err := w.loads.DoAll(ctx, job.Args.DeliveryIDs)
	if err != nil {
		return fmt.Errorf("load %d deliveries to endpoint %s: %w", len(job.Args.DeliveryIDs), endpoint, err)
	}
	var todo []loaded
	for _, d := range found {
		if d != nil && d.ownedByBatch(generation) {
			todo = append(todo, *d)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	w.inflight.learn(endpoint, todo[0].tenantID, todo[0].tenantMaxInflight, todo[0].unanswered)
	if generation > 0 && !job.Args.Quiet {
		if err := w.checkAlone(ctx, job.JobRow, todo...); err != nil {
			return err
		}
	}
	if todo[0].ordered {
		if todo, err = b.admitHeads(ctx, todo, trigger, generation); err != nil || len(todo) == 0 {
			return err
		}
	}
	switch {
	case !todo[0].endpointEnabled:
		if _, err := w.db.Exec(ctx, cancelDeliveries, idsOf(todo), w.now(), generation); err != nil {
			return fmt.Errorf("cancel %d deliveries of disabled endpoint %s: %w", len(todo), endpoint, err)
		}
		return nil
	case todo[0].rateLimit > 0:
		return w.handOff(ctx, todo, trigger, generation)
	}

	release, lanes, waited, err := w.takeSlots(ctx, job.JobRow, todo[0], len(todo))
	if err != nil {
		return err
	}
	defer release()
	if waited {
		// Those requeued while the job waited are the requeue's jobs'.
		if todo, err = w.stillQueued(ctx, todo, generation); err != nil || len(todo) == 0 {
			return err
		}
	}
	attempts := w.sendUntilFailure(ctx, todo, lanes)
	release()
	if err := ctx.Err(); err != nil {
		// As for one delivery: River runs the job again, and what was
		// sent is sent again, deduplicated by webhook-id.
		return fmt.Errorf("deliveries to endpoint %s interrupted: %w", endpoint, err)
	}

	var (
		sent   []recording
		unsent []loaded
		fault  *Fault
	)
	for i, a := range attempts {
		if a == nil {
			unsent = append(unsent, todo[i])
			continue
		}
		if f := a.result.fault(); f != nil {
			fault = cmp.Or(fault, f)
			unsent = append(unsent, todo[i])
			continue
		}
		r := recording{d: todo[i], trigger: trigger, a: *a, jobs: jobsFrom(ctx)}
		if !a.result.succeeded() {
			// Its retry goes to a job of the delivery's own, inserted in
			// the transaction that records the attempt.
			r.retry = retryAlone(todo[i], trigger)
		}
		sent = append(sent, r)
	}
	if _, err := w.record(ctx, sent...); err != nil {
		return err
	}
	if fault != nil {
		// The unsent deliveries stay this job's: it runs them again.
		return w.deferJob(ctx, job.JobRow, fault, "endpoint", endpoint, "deliveries", len(unsent))
	}
	if len(unsent) > 0 {
		return w.handOff(ctx, unsent, trigger, generation)
	}
	return nil
}

// admitHeads returns those of the heads todo of an ordered endpoint's lines
// that may be sent now (see gateOf). The others' turn has not come: those
// behind their line's head are dropped, and those waiting for a lower
// version's fan-out are handed off to jobs of their own, which wait for
// it. When the endpoint is disabled it parks every line and returns none.
func (b *BatchWorker) admitHeads(ctx context.Context, todo []loaded, trigger Trigger, generation int) ([]loaded, error) {
	w := b.w
	if !todo[0].endpointEnabled {
		for _, d := range todo {
			if err := w.park(ctx, jobsFrom(ctx), d); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}
	var admitted, waiting []loaded
	for _, d := range todo {
		switch gateOf(d) {
		case gateGo:
			admitted = append(admitted, d)
		case gateWait:
			waiting = append(waiting, d)
		}
	}
	if len(waiting) > 0 {
		if err := w.handOff(ctx, waiting, trigger, generation); err != nil {
			return nil, err
		}
	}
	return admitted, nil
}

// ownedByBatch reports whether d still belongs to the batch job of
// generation it was created or requeued with: pending, not requeued since,
// not attempted since, not handed off.
func (d *loaded) ownedByBatch(generation int) bool {
	return d.status == deliverystatus.Pending && d.generation == generation &&
		d.attemptCount == d.attemptsBeforeRequeue && d.nextAttemptAt.IsZero()
}

// sendUntilFailure sends todo in order, lanes at a time, and returns each
// delivery's attempt: nil for one it did not send because an attempt
// failed, ctx ended or half the HTTP timeout has passed.
func (w *Worker) sendUntilFailure(ctx context.Context, todo []loaded, lanes int) []*attempt {
	var (
		attempts = make([]*attempt, len(todo))
		next     atomic.Int64
		stop     atomic.Bool
		wg       sync.WaitGroup
		until    = time.Now().Add(w.timeout / 2)
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
func retryAlone(d loaded, trigger Trigger) retryFunc {
	return func(ctx context.Context, tx pgx.Tx) error {
		client, err := river.ClientFromContextSafely[pgx.Tx](ctx)
		if err != nil {
			return err
		}
		_, err = client.InsertTx(ctx, tx, Args{DeliveryID: d.id, EndpointID: d.endpointID, Trigger: trigger, Generation: d.generation, Alone: true}, nil)
		return err
	}
}

// handOff gives each delivery of ds that is still its batch job's (of
// generation) a job of its own, due at once, whose attempts carry trigger.
func (w *Worker) handOff(ctx context.Context, ds []loaded, trigger Trigger, generation int) error {
	client, err := river.ClientFromContextSafely[pgx.Tx](ctx)
	if err != nil {
		return fmt.Errorf("hand off %d deliveries: %w", len(ds), err)
	}
	tx, err := w.db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("hand off %d deliveries: %w", len(ds), err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	rows, err := tx.Query(ctx, handOff, idsOf(ds), w.now(), generation)
	if err != nil {
		return fmt.Errorf("hand off %d deliveries: %w", len(ds), err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return fmt.Errorf("hand off %d deliveries: %w", len(ds), err)
	}
	if len(ids) == 0 {
		return nil
	}
	jobs := make([]river.InsertManyParams, len(ids))
	for i, id := range ids {
		jobs[i] = river.InsertManyParams{Args: Args{DeliveryID: id, EndpointID: ds[0].endpointID, Trigger: trigger, Generation: generation, Alone: true}}
	}
	if _, err := client.InsertManyFastTx(ctx, tx, jobs); err != nil {
		return fmt.Errorf("hand off %d deliveries: %w", len(ids), err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("hand off %d deliveries: %w", len(ids), err)
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
