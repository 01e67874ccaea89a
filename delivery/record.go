package delivery

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/deliverystatus"
)

// maxRecordTries bounds how often recording an attempt decides again
// because the delivery changed under it (another attempt of it was recorded
// meanwhile, or its endpoint was disabled).
const maxRecordTries = 3

// record stores attempt a of delivery d with its outcome and returns when
// the delivery's next attempt is due (zero when there is none). It is the
// one place where an attempt changes Herald's state: the delivery and the
// attempt row in one statement, recordAttempt, and what the outcome means
// for the endpoint (Health) in the same transaction. A non-nil retry is
// called in that transaction too when another attempt is due: the batch
// worker hands the delivery to a job of its own there.
func (w *Worker) record(ctx context.Context, d loaded, trigger Trigger, a attempt, retry retryFunc) (time.Time, error) {
	p := d.progress
	for range maxRecordTries {
		next, recorded, err := w.recordAs(ctx, d, p, trigger, a, retry)
		if err != nil || recorded {
			return next, err
		}
		err = w.db.QueryRow(ctx, reloadProgress, d.id).Scan(&p.status, &p.attemptCount, &p.firstAttempt)
		if errors.Is(err, pgx.ErrNoRows) {
			return time.Time{}, nil // deleted with its endpoint while the request ran
		}
		if err != nil {
			return time.Time{}, fmt.Errorf("record attempt of delivery %s: %w", d.id, err)
		}
	}
	return time.Time{}, fmt.Errorf("record attempt of delivery %s: the delivery changed %d times while recording; River retries the job", d.id, maxRecordTries)
}

// recordAs decides the outcome of attempt a for a delivery at progress p
// and records it, unless the delivery is no longer at p (recorded false).
func (w *Worker) recordAs(ctx context.Context, d loaded, p progress, trigger Trigger, a attempt, retry retryFunc) (next time.Time, recorded bool, err error) {
	number := p.attemptCount + 1
	first := a.startedAt
	if p.firstAttempt != nil {
		first = *p.firstAttempt
	}
	ended := a.startedAt.Add(a.duration)
	o := Decide(a.result, number, first, ended, w.policy)
	s := settle(p.status, o, ended)

	attemptID, err := uuid.NewV7()
	if err != nil {
		return time.Time{}, false, fmt.Errorf("attempt id: %w", err)
	}
	headers := a.headers
	if headers == nil {
		headers = map[string]string{}
	}
	tx, err := w.db.Begin(ctx)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("record attempt %d of delivery %s: %w", number, d.id, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	tag, err := tx.Exec(ctx, recordAttempt, pgx.NamedArgs{
		"delivery_id":        d.id,
		"seen_status":        p.status,
		"seen_attempt_count": p.attemptCount,
		"status":             s.status,
		"next_attempt_at":    s.next,
		"completed_at":       s.completed,
		"started_at":         a.startedAt,
		"duration_ms":        a.duration.Milliseconds(),
		"status_code":        nullIfZero(a.result.StatusCode),
		"problem":            nullIfEmpty(o.Problem),
		"attempt_id":         attemptID,
		"message_id":         d.messageID,
		"endpoint_id":        d.endpointID,
		"trigger":            string(trigger),
		"request_headers":    headers,
		"response_excerpt":   a.excerpt,
		"outcome":            string(o.Verdict),
	})
	if err != nil {
		return time.Time{}, false, fmt.Errorf("record attempt %d of delivery %s: %w", number, d.id, err)
	}
	if tag.RowsAffected() == 0 {
		return time.Time{}, false, nil
	}
	stopped, err := w.applyHealth(ctx, tx, d, o, s.status == deliverystatus.Failed, ended)
	if err != nil {
		return time.Time{}, false, err
	}
	if retry != nil && s.next != nil && !stopped {
		if err := retry(ctx, tx); err != nil {
			return time.Time{}, false, fmt.Errorf("schedule attempt %d of delivery %s: %w", number+1, d.id, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return time.Time{}, false, fmt.Errorf("record attempt %d of delivery %s: %w", number, d.id, err)
	}
	w.log(ctx, d, number, o)
	if s.next == nil || stopped {
		return time.Time{}, true, nil
	}
	return *s.next, true, nil
}

// applyHealth tells w's Health what attempt outcome o means for d's
// endpoint, in the transaction that recorded it; failed says the attempt
// settled the delivery as failed. stopped is true when the endpoint is
// disabled now: its pending deliveries, this one included, were cancelled
// and the job has nothing more to do.
func (w *Worker) applyHealth(ctx context.Context, tx pgx.Tx, d loaded, o Outcome, failed bool, ended time.Time) (stopped bool, err error) {
	switch o.Verdict {
	case Succeeded:
		err = w.health.Succeeded(ctx, tx, d.endpointID, ended)
	case EndpointGone:
		stopped, err = w.health.Disable(ctx, tx, d.endpointID, DisabledReason, ended)
	case Retry:
		stopped, err = w.health.Failed(ctx, tx, d.endpointID, ended, o.Problem)
	case Exhausted:
		// A delivery settled otherwise meanwhile (cancelled) was not
		// exhausted, though its attempt failed.
		if stopped, err = w.health.Failed(ctx, tx, d.endpointID, ended, o.Problem); err == nil && failed {
			err = w.health.Exhausted(ctx, tx, d.id)
		}
	}
	if err != nil {
		return false, fmt.Errorf("endpoint %s health after delivery %s: %w", d.endpointID, d.id, err)
	}
	return stopped, nil
}

// retryFunc is called in the transaction that records a failed attempt
// when another attempt is due (at the delivery's next_attempt_at).
type retryFunc func(ctx context.Context, tx pgx.Tx) error

// settlement is a delivery's state after an attempt.
type settlement struct {
	status    deliverystatus.Status
	next      *time.Time // the retry, nil when none
	completed *time.Time // nil keeps the recorded completion time
}

// settle says what an outcome does to a delivery that was in status
// current: a success always counts, but a failure leaves a delivery that
// something else settled meanwhile (its endpoint was disabled) as it is.
func settle(current deliverystatus.Status, o Outcome, ended time.Time) settlement {
	switch {
	case o.Verdict == Succeeded:
		return settlement{status: deliverystatus.Succeeded, completed: &ended}
	case current != deliverystatus.Pending:
		return settlement{status: current}
	case o.Verdict == Retry:
		return settlement{status: deliverystatus.Pending, next: &o.RetryAt}
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
