package delivery

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/deliverystatus"
	"github.com/heraldhq/herald/internal/historyid"
	"github.com/heraldhq/herald/internal/unnest"
	"github.com/heraldhq/herald/schedule"
)

// maxRecordTries bounds how often recording an attempt decides again
// because the delivery changed under it (another attempt of it was recorded
// meanwhile, or its endpoint was disabled).
const maxRecordTries = 3

// recording is an attempt waiting to be recorded.
type recording struct {
	// d is the delivery the attempt's outcome is decided on: as it was
	// loaded, or with its progress read again after it changed.
	d       loaded
	trigger Trigger
	a       attempt
	// retry, when not nil, is called in the transaction that records the
	// attempt if another attempt is due.
	retry retryFunc
	// jobs inserts the job of the next version of an ordered delivery's
	// line when the attempt settles it: the River client of the job that
	// made the attempt.
	jobs JobInserter
}

// retryFunc is called in the transaction that records a failed attempt
// when another attempt is due (at the delivery's next_attempt_at).
type retryFunc func(ctx context.Context, tx pgx.Tx) error

// record stores the attempts rs with their outcomes and returns, for each,
// when its delivery's next attempt is due (zero when there is none).
//
// Successes share transactions with the successes other workers record at
// the same time (w.successes): one statement and one commit for up to
// maxRoundTrip of them, where recording them one by one costs a
// transaction each. Failed attempts, and successes whose delivery changed
// since it was loaded (or whose shared transaction failed), are recorded
// in a transaction each. Both go through apply.
func (w *Worker) record(ctx context.Context, rs ...recording) ([]time.Time, error) {
	next := make([]time.Time, len(rs))
	done := make([]bool, len(rs))
	var (
		wins      []int
		successes []recording
	)
	for i, r := range rs {
		if r.a.result.succeeded() {
			wins = append(wins, i)
			successes = append(successes, r)
		}
	}
	if len(wins) > 0 {
		together, err := w.successes.DoAll(ctx, successes)
		if err != nil {
			w.logger.WarnContext(ctx, "recording successes together failed; recording alone",
				"endpoint", rs[wins[0]].d.endpointID, "successes", len(wins), "error", err)
		}
		for j, res := range together {
			done[wins[j]], next[wins[j]] = res.recorded, res.next
		}
	}
	for i, r := range rs {
		if done[i] {
			continue
		}
		n, err := w.recordAlone(ctx, r)
		if err != nil {
			return nil, err
		}
		next[i] = n
	}
	return next, nil
}

// recordAlone records r in a transaction of its own and returns when its
// delivery's next attempt is due. When the delivery changed meanwhile it
// reads the delivery's progress again and decides again, up to
// maxRecordTries times. A delivery requeued meanwhile is the requeue's
// job's: the attempt is not recorded, and no next attempt is due for this
// job.
func (w *Worker) recordAlone(ctx context.Context, r recording) (time.Time, error) {
	generation := r.d.generation
	for range maxRecordTries {
		res, err := w.apply(ctx, []recording{r})
		if err != nil {
			return time.Time{}, err
		}
		if res[0].recorded {
			return res[0].next, nil
		}
		err = w.db.QueryRow(ctx, reloadProgress, r.d.id).Scan(&r.d.status, &r.d.attemptCount, &r.d.attemptsBeforeRequeue, &r.d.firstAttempt, &r.d.generation)
		if errors.Is(err, pgx.ErrNoRows) {
			return time.Time{}, nil // deleted with its endpoint while the request ran
		}
		if err != nil {
			return time.Time{}, fmt.Errorf("record attempt of delivery %s: %w", r.d.id, err)
		}
		if r.d.generation != generation {
			w.logger.InfoContext(ctx, "delivery requeued while its attempt ran; the attempt is not recorded and the requeue's job carries on",
				"delivery", r.d.id, "endpoint", r.d.endpointID, "generation", generation, "requeued_as", r.d.generation)
			return time.Time{}, nil
		}
	}
	return time.Time{}, fmt.Errorf("record attempt of delivery %s: the delivery changed %d times while recording; River retries the job", r.d.id, maxRecordTries)
}

// applied is what apply did with one attempt.
type applied struct {
	// recorded is false when nothing was written: the delivery changed
	// since the outcome was decided (or is gone), or it came twice.
	recorded bool
	// next is when the delivery's next attempt is due; zero when none is.
	next time.Time
}

// decision is an attempt's outcome and what it does to its delivery.
type decision struct {
	number  int // the attempt's number: 1 for a delivery's first ever
	ended   time.Time
	outcome Outcome
	settled settlement
}

// apply decides the outcome of every attempt of rs and records them in one
// transaction. It is the one place where an attempt changes Herald's
// state: one statement (see insertAttempts) writes each delivery's new
// state and its attempt row; in the same transaction the worker's Health
// learns what the outcomes mean for their endpoints (see tellHealth), and
// an attempt's retry is called when another attempt is due.
//
// An attempt whose delivery is no longer at the progress it was decided on
// (another attempt was recorded, the delivery was settled or requeued) is
// not recorded, nor is a second attempt of one delivery in rs: the caller
// decides again, after this transaction.
func (w *Worker) apply(ctx context.Context, rs []recording) ([]applied, error) {
	// Rows are locked in id order, so concurrent transactions cannot
	// deadlock.
	order := make([]int, len(rs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int { return compareUUID(rs[i].d.id, rs[j].d.id) })
	order = slices.CompactFunc(order, func(i, j int) bool { return rs[i].d.id == rs[j].d.id })

	decisions := make([]decision, len(rs))
	rows := make([]recordRow, 0, len(order))
	for _, i := range order {
		row, err := w.decide(rs[i], &decisions[i])
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	what := fmt.Sprintf("%d attempts", len(rows))
	if len(rs) == 1 {
		what = fmt.Sprintf("attempt %d of delivery %s", decisions[0].number, rs[0].d.id)
	}

	var ( // ordered deliveries the attempts settle, with their lines
		settling  []uuid.UUID
		endpoints []uuid.UUID
		objects   []string
	)
	for _, i := range order {
		if rs[i].d.ordered && decisions[i].settled.status != deliverystatus.Pending {
			settling = append(settling, rs[i].d.id)
			endpoints = append(endpoints, rs[i].d.endpointID)
			objects = append(objects, rs[i].d.objectID)
		}
	}

	tx, err := w.db.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("record %s: %w", what, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if len(settling) > 0 {
		// Lines before deliveries, as every writer of lines locks them.
		if _, err := tx.Exec(ctx, lockSettlingLines, settling, endpoints, objects); err != nil {
			return nil, fmt.Errorf("record %s: lock the lines of %d ordered deliveries: %w", what, len(settling), err)
		}
	}
	recorded, err := insertAttempts(ctx, tx, rows)
	if err != nil {
		return nil, fmt.Errorf("record %s: %w", what, err)
	}
	order = slices.DeleteFunc(order, func(i int) bool { return !recorded[rs[i].d.id] })
	if len(order) == 0 {
		return make([]applied, len(rs)), nil
	}
	stopped, err := w.tellHealth(ctx, tx, rs, order, decisions)
	if err != nil {
		return nil, err
	}
	for _, i := range order {
		if rs[i].retry != nil && decisions[i].settled.next != nil && !stopped[i] {
			if err := rs[i].retry(ctx, tx); err != nil {
				return nil, fmt.Errorf("schedule attempt %d of delivery %s: %w", decisions[i].number+1, rs[i].d.id, err)
			}
		}
	}
	if err := w.advanceLines(ctx, tx, rs, order, settling); err != nil {
		return nil, fmt.Errorf("record %s: %w", what, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("record %s: %w", what, err)
	}

	out := make([]applied, len(rs))
	var grew []uuid.UUID
	for _, i := range order {
		out[i].recorded = true
		if next := decisions[i].settled.next; next != nil && !stopped[i] {
			out[i].next = *next
		}
		w.log(ctx, rs[i].d, decisions[i].number, decisions[i].outcome)
		w.traceAttempt(rs[i], decisions[i])
		w.metrics.observe(decisions[i].outcome.Verdict, rs[i].a.duration)
		if w.inflight.observe(rs[i].d.endpointID, rs[i].a.result.answered()) && !slices.Contains(grew, rs[i].d.endpointID) {
			grew = append(grew, rs[i].d.endpointID)
		}
	}
	w.wakeHeld(ctx, grew)
	return out, nil
}

// advanceLines takes those of the ordered deliveries settling that were
// recorded (rs[order]) out of their lines, in tx, and gives each line's
// next version a job.
func (w *Worker) advanceLines(ctx context.Context, tx pgx.Tx, rs []recording, order []int, settling []uuid.UUID) error {
	if len(settling) == 0 {
		return nil
	}
	var (
		settled   []uuid.UUID
		endpoints []uuid.UUID
		objects   []string
		jobs      JobInserter
	)
	for _, i := range order {
		if slices.Contains(settling, rs[i].d.id) {
			settled = append(settled, rs[i].d.id)
			endpoints = append(endpoints, rs[i].d.endpointID)
			objects = append(objects, rs[i].d.objectID)
			jobs = cmp.Or(jobs, rs[i].jobs)
		}
	}
	if len(settled) == 0 {
		return nil
	}
	heads, err := queryHeads(ctx, tx, settleLines, settled, endpoints, objects)
	if err != nil {
		return fmt.Errorf("advance the lines of %d ordered deliveries: %w", len(settled), err)
	}
	return insertLineJobs(ctx, tx, jobs, heads)
}

// decide decides the outcome of r's attempt into dec and returns the row
// that records it.
func (w *Worker) decide(r recording, dec *decision) (recordRow, error) {
	p := r.d.progress
	first := r.a.startedAt
	if p.firstAttempt != nil {
		first = *p.firstAttempt
	}
	dec.number = p.attemptCount + 1
	dec.ended = r.a.startedAt.Add(r.a.duration)
	// The schedule starts again at every requeue, as the window does.
	o := r.d.options
	policy := w.bounds.Policy(w.policy, o.window, o.base, o.retryCap)
	if r.d.ordered && w.headLimit > 0 {
		policy.Window = min(cmp.Or(policy.Window, schedule.DefaultWindow), w.headLimit)
	}
	dec.outcome = Decide(r.a.result, dec.number-p.attemptsBeforeRequeue, first, dec.ended, policy)
	dec.settled = settle(p.status, dec.outcome, dec.ended, r.d.ordered)

	// The attempt lives in its delivery's partitions (package historyid).
	attemptID, err := historyid.Child(r.d.id)
	if err != nil {
		return recordRow{}, fmt.Errorf("attempt id: %w", err)
	}
	headers := r.a.headers
	if headers == nil {
		headers = map[string]string{} // the column is NOT NULL
	}
	headersJSON, err := json.Marshal(headers)
	if err != nil {
		return recordRow{}, fmt.Errorf("attempt headers: %w", err)
	}
	return recordRow{
		deliveryID:       r.d.id,
		seenStatus:       p.status,
		seenAttemptCount: p.attemptCount,
		seenGeneration:   p.generation,
		status:           dec.settled.status,
		nextAttemptAt:    dec.settled.next,
		completedAt:      dec.settled.completed,
		attemptID:        attemptID,
		messageID:        r.d.messageID,
		endpointID:       r.d.endpointID,
		trigger:          r.trigger,
		startedAt:        r.a.startedAt,
		durationMS:       r.a.duration.Milliseconds(),
		requestHeaders:   string(headersJSON),
		statusCode:       nullIfZero(r.a.result.StatusCode),
		problem:          nullIfEmpty(dec.outcome.Problem),
		responseExcerpt:  r.a.excerpt,
		outcome:          dec.outcome.Verdict,
	}, nil
}

// recordRow is one row of recordAttempts' input: a delivery as its
// attempt's outcome was decided on, its new state and the attempt.
type recordRow struct {
	deliveryID       uuid.UUID
	seenStatus       deliverystatus.Status
	seenAttemptCount int
	seenGeneration   int
	status           deliverystatus.Status
	nextAttemptAt    *time.Time // nil: no retry
	completedAt      *time.Time // nil keeps the recorded completion time
	attemptID        uuid.UUID
	messageID        uuid.UUID
	endpointID       uuid.UUID
	trigger          Trigger
	startedAt        time.Time
	durationMS       int64
	requestHeaders   string // a JSON object
	statusCode       *int
	problem          *string
	responseExcerpt  string
	outcome          Verdict
}

// recordColumns are the columns of recordAttempts' and recordAttempt's
// input, in their order.
var recordColumns = []unnest.Column[recordRow]{
	unnest.Col(func(r recordRow) uuid.UUID { return r.deliveryID }),
	unnest.Col(func(r recordRow) string { return string(r.seenStatus) }),
	unnest.Col(func(r recordRow) int { return r.seenAttemptCount }),
	unnest.Col(func(r recordRow) string { return string(r.status) }),
	unnest.Col(func(r recordRow) *time.Time { return r.nextAttemptAt }),
	unnest.Col(func(r recordRow) *time.Time { return r.completedAt }),
	unnest.Col(func(r recordRow) uuid.UUID { return r.attemptID }),
	unnest.Col(func(r recordRow) uuid.UUID { return r.messageID }),
	unnest.Col(func(r recordRow) uuid.UUID { return r.endpointID }),
	unnest.Col(func(r recordRow) string { return string(r.trigger) }),
	unnest.Col(func(r recordRow) time.Time { return r.startedAt }),
	unnest.Col(func(r recordRow) int64 { return r.durationMS }),
	unnest.Col(func(r recordRow) string { return r.requestHeaders }),
	unnest.Col(func(r recordRow) *int { return r.statusCode }),
	unnest.Col(func(r recordRow) *string { return r.problem }),
	unnest.Col(func(r recordRow) string { return r.responseExcerpt }),
	unnest.Col(func(r recordRow) string { return string(r.outcome) }),
	unnest.Col(func(r recordRow) int { return r.seenGeneration }),
}

// insertAttempts records rows in one round trip and returns the
// deliveries it recorded. One row goes in recordAttempt; more go in
// recordAttempts, planned under lookUpByIndex and planOnce, which end with
// it: Health
// publishes operational events in the same transaction, and a publish
// reads herald.outbox_wakeups, a one-row table with nothing to look up by.
// Under lookUpByIndex its scan costs the planner 10^10, so Postgres
// JIT-compiles it, and a publish took 100 to 500 ms instead of 1 ms.
func insertAttempts(ctx context.Context, tx pgx.Tx, rows []recordRow) (map[uuid.UUID]bool, error) {
	var (
		batch    pgx.Batch
		recorded = make(map[uuid.UUID]bool, len(rows))
		collect  = func(result pgx.Rows) error {
			var id uuid.UUID
			_, err := pgx.ForEachRow(result, []any{&id}, func() error {
				recorded[id] = true
				return nil
			})
			return err
		}
	)
	if len(rows) == 1 {
		batch.Queue(recordAttempt, unnest.Values(rows[0], recordColumns...)...).Query(collect)
	} else {
		queueRecordings(&batch, rows).Query(collect)
	}
	if err := tx.SendBatch(ctx, &batch).Close(); err != nil {
		return nil, err
	}
	return recorded, nil
}

// queueRecordings queues on batch recordAttempts for rows with the planner
// settings it runs under, and their end; insertAttempts and Warm (for no
// rows, whose span is uuid.Nil to uuid.Nil) share it.
func queueRecordings(batch *pgx.Batch, rows []recordRow) *pgx.QueuedQuery {
	least, greatest := uuid.Nil, uuid.Nil
	if len(rows) > 0 {
		byID := func(a, b recordRow) int { return compareUUID(a.deliveryID, b.deliveryID) }
		least, greatest = slices.MinFunc(rows, byID).deliveryID, slices.MaxFunc(rows, byID).deliveryID
	}
	batch.Queue(lookUpByIndex)
	batch.Queue(planOnce)
	recorded := batch.Queue(recordAttempts, append(unnest.Arrays(rows, recordColumns...), least, greatest)...)
	batch.Queue(lookUpAsUsual)
	batch.Queue(planAsUsual)
	return recorded
}

// tellHealth tells w's Health, in the transaction that recorded them, what
// the attempts rs[order] mean for their endpoints, and reports for each
// whether its endpoint is disabled now (stopped): its pending deliveries,
// the attempt's own included, were cancelled and its job has nothing more
// to do.
//
// Each endpoint learns of its latest success once, endpoints in id order
// (Health may lock their rows); then each failure is told on its own, in
// the order of rs[order], since one may disable the endpoint.
func (w *Worker) tellHealth(ctx context.Context, tx pgx.Tx, rs []recording, order []int, decisions []decision) (stopped []bool, err error) {
	latest := make(map[uuid.UUID]time.Time)
	for _, i := range order {
		if ended := decisions[i].ended; decisions[i].outcome.Verdict == Succeeded && ended.After(latest[rs[i].d.endpointID]) {
			latest[rs[i].d.endpointID] = ended
		}
	}
	endpoints := make([]uuid.UUID, 0, len(latest))
	for id := range latest {
		endpoints = append(endpoints, id)
	}
	slices.SortFunc(endpoints, compareUUID)
	for _, id := range endpoints {
		if err := w.health.Succeeded(ctx, tx, id, latest[id]); err != nil {
			return nil, fmt.Errorf("endpoint %s health after its successes: %w", id, err)
		}
	}

	stopped = make([]bool, len(rs))
	for _, i := range order {
		d, dec := rs[i].d, decisions[i]
		if dec.outcome.Verdict == Succeeded {
			continue
		}
		if stopped[i], err = w.failed(ctx, tx, d, dec.outcome, dec.settled.status == deliverystatus.Failed, !rs[i].a.result.answered(), dec.ended); err != nil {
			return nil, fmt.Errorf("endpoint %s health after delivery %s: %w", d.endpointID, d.id, err)
		}
		// Disabling holds an ordered endpoint's lines rather than
		// cancelling them: the head's job goes on, finds the endpoint
		// disabled and parks its line.
		stopped[i] = stopped[i] && !d.ordered
	}
	return stopped, nil
}

// failed tells w's Health of the failed attempt of d with outcome o;
// settledFailed says the attempt settled the delivery as failed, and
// unreachable that it got no answer. It reports whether the endpoint is
// disabled now.
func (w *Worker) failed(ctx context.Context, tx pgx.Tx, d loaded, o Outcome, settledFailed, unreachable bool, ended time.Time) (disabled bool, err error) {
	switch o.Verdict {
	case EndpointGone:
		return w.health.Disable(ctx, tx, d.endpointID, DisabledReason, ended)
	case Exhausted:
		// A delivery settled otherwise meanwhile (cancelled) was not
		// exhausted, though its attempt failed.
		if disabled, err = w.health.Failed(ctx, tx, d.endpointID, ended, o.Problem, unreachable); err == nil && settledFailed {
			err = w.health.Exhausted(ctx, tx, d.id)
		}
		return disabled, err
	default: // Retry
		return w.health.Failed(ctx, tx, d.endpointID, ended, o.Problem, unreachable)
	}
}

// settlement is a delivery's state after an attempt.
type settlement struct {
	status    deliverystatus.Status
	next      *time.Time // the retry, nil when none
	completed *time.Time // nil keeps the recorded completion time
}

// settle says what an outcome does to a delivery that was in status
// current: a success always counts, but a failure leaves a delivery that
// something else settled meanwhile (its endpoint was disabled) as it is.
// A 410 Gone leaves the head of an ordered line (ordered) pending, due at
// once: its endpoint is disabled, and its job parks the line, which holds
// until the endpoint is enabled.
func settle(current deliverystatus.Status, o Outcome, ended time.Time, ordered bool) settlement {
	switch {
	case o.Verdict == Succeeded:
		return settlement{status: deliverystatus.Succeeded, completed: &ended}
	case current != deliverystatus.Pending:
		return settlement{status: current}
	case o.Verdict == Retry:
		return settlement{status: deliverystatus.Pending, next: &o.RetryAt}
	case o.Verdict == EndpointGone && ordered:
		return settlement{status: deliverystatus.Pending, next: &ended}
	default: // Exhausted, EndpointGone
		return settlement{status: deliverystatus.Failed, completed: &ended}
	}
}

func (w *Worker) log(ctx context.Context, d loaded, number int, o Outcome) {
	attrs := []any{"delivery", d.id, "message", d.messageID, "endpoint", d.endpointID, "attempt", number}
	switch o.Verdict {
	case Succeeded:
		w.logger.DebugContext(ctx, "delivered", attrs...)
	case Retry:
		w.logger.InfoContext(ctx, "attempt failed; retrying", append(attrs, "problem", o.Problem, "retry_at", o.RetryAt)...)
	case Exhausted:
		w.logger.WarnContext(ctx, "delivery failed: retry window spent", append(attrs, "problem", o.Problem)...)
	case EndpointGone:
		w.logger.WarnContext(ctx, "endpoint answered 410 Gone; disabled it and cancelled its pending deliveries", attrs...)
	}
}

func nullIfZero(n int) *int {
	if n == 0 {
		return nil
	}
	return &n
}

func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func compareUUID(a, b uuid.UUID) int {
	return slices.Compare(a[:], b[:])
}
