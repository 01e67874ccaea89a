package delivery

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/rivertype"
)

// Health is told the result of every attempt, inside the transaction that
// records it, so an endpoint's health changes exactly when its attempts are
// recorded. *health.Tracker implements it: it keeps the endpoint's failing
// spell, disables endpoints that fail too long or answer 410, and publishes
// operational events.
type Health interface {
	// Succeeded ends the endpoint's failing spell.
	Succeeded(ctx context.Context, tx pgx.Tx, endpointID uuid.UUID, at time.Time) error
	// Failed counts a failure; disabled reports that it disabled the
	// endpoint, cancelling its pending deliveries.
	Failed(ctx context.Context, tx pgx.Tx, endpointID uuid.UUID, at time.Time, problem string) (disabled bool, err error)
	// Disable disables the endpoint at once and cancels its pending
	// deliveries.
	Disable(ctx context.Context, tx pgx.Tx, endpointID uuid.UUID, reason string, at time.Time) (disabled bool, err error)
	// Exhausted reports a delivery whose retry window is spent.
	Exhausted(ctx context.Context, tx pgx.Tx, deliveryID uuid.UUID) error
}

// RateLimiter holds deliveries to their endpoint's messages-per-second
// limit. Admit returns nil when the job may send now, or the river.JobSnooze
// error that puts it to sleep until its slot. *ratelimit.Limiter implements
// it.
type RateLimiter interface {
	Admit(ctx context.Context, job *rivertype.JobRow, endpointID uuid.UUID, perSecond float64) error
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
