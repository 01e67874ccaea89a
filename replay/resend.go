package replay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/internal/deliverystatus"
	"github.com/heraldhq/herald/internal/historyid"
)

// Inserter queues River jobs in a transaction; *river.Client[pgx.Tx] is one.
type Inserter interface {
	InsertTx(ctx context.Context, tx pgx.Tx, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
	InsertManyTx(ctx context.Context, tx pgx.Tx, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error)
}

// ErrEndpointDisabled means the endpoint does not receive deliveries until
// it is enabled again.
var ErrEndpointDisabled = errors.New("the endpoint is disabled")

// ErrNotFound means the message or the endpoint does not exist, or they
// belong to different tenants.
var ErrNotFound = errors.New("message or endpoint not found")

// Resent describes the delivery a resend queued.
type Resent struct {
	DeliveryID uuid.UUID
	// PreviousStatus is the delivery's status before the resend: pending
	// when it was waiting for a retry or being sent; empty when the message
	// had never been delivered to the endpoint.
	PreviousStatus deliverystatus.Status
}

// ResendTx queues one new attempt of message to endpoint in tx, due now,
// recorded with the trigger "manual" and the message's webhook-id. A
// message that was never delivered to the endpoint (it did not subscribe,
// or did not exist yet) gets its first delivery. The delivery gets a full
// retry window and schedule again should the attempt fail.
//
// A pending delivery is resent too: its next attempt, maybe hours away, is
// brought forward to now. The resend moves the delivery to its next
// generation, so the job that was waiting for the retry ends without
// sending when it wakes. An attempt in flight at that moment completes but
// is not recorded; the resend's job waits for it to end before sending
// (delivery.EarlierAttemptSnooze), and the receiver dedupes the two by
// webhook-id.
//
// On an endpoint with ordering "object" the delivery joins its object's
// line in version order instead of jumping it: it is sent now only if it
// is the line's head or the line is empty, and otherwise when its turn
// comes (a version below the head waits for the head to settle, since the
// head may have a request in flight).
//
// It returns ErrNotFound when either does not exist or they belong to
// different tenants, and ErrEndpointDisabled for a disabled endpoint.
func ResendTx(ctx context.Context, tx pgx.Tx, jobs Inserter, messageID, endpointID uuid.UUID) (Resent, error) {
	fail := func(err error) (Resent, error) {
		return Resent{}, fmt.Errorf("resend message %s to endpoint %s: %w", messageID, endpointID, err)
	}
	var (
		tenantID string
		enabled  bool
		ordered  bool
	)
	err := tx.QueryRow(ctx, selectResendTarget, messageID, endpointID).Scan(&tenantID, &enabled, &ordered)
	if errors.Is(err, pgx.ErrNoRows) {
		return fail(ErrNotFound)
	}
	if err != nil {
		return fail(err)
	}
	if !enabled {
		return fail(ErrEndpointDisabled)
	}
	// A new delivery lives in its message's partitions (package historyid).
	newID, err := historyid.Child(messageID)
	if err != nil {
		return fail(err)
	}
	if ordered {
		if err := delivery.LockLines(ctx, tx, endpointID, []uuid.UUID{messageID}); err != nil {
			return fail(err)
		}
	}
	var r Resent
	err = tx.QueryRow(ctx, lockDelivery, messageID, endpointID).Scan(&r.PreviousStatus)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fail(err)
	}
	var generation int
	err = tx.QueryRow(ctx, requeueDelivery, newID, messageID, endpointID, tenantID).Scan(&r.DeliveryID, &generation)
	if errors.Is(err, pgx.ErrNoRows) {
		// A concurrent first resend inserted the pair and has committed;
		// this statement, run again, sees and requeues its delivery.
		err = tx.QueryRow(ctx, requeueDelivery, newID, messageID, endpointID, tenantID).Scan(&r.DeliveryID, &generation)
	}
	if err != nil {
		return fail(err)
	}
	if r.PreviousStatus == "" && generation > 0 {
		// A concurrent first resend of a never-delivered message committed
		// its delivery, pending, after the lock found none.
		r.PreviousStatus = deliverystatus.Pending
	}
	if ordered {
		if err := joinLine(ctx, tx, jobs, []uuid.UUID{r.DeliveryID}, delivery.TriggerManual); err != nil {
			return fail(err)
		}
		return r, nil
	}
	args := delivery.Args{DeliveryID: r.DeliveryID, EndpointID: endpointID, Trigger: delivery.TriggerManual, Generation: generation}
	if _, err := jobs.InsertTx(ctx, tx, args, nil); err != nil {
		return fail(fmt.Errorf("queue delivery job: %w", err))
	}
	return r, nil
}

// joinLine puts the requeued deliveries ids of an ordered endpoint in their
// lines, in version order, and gives a job to those that are the head of
// their line now; the others wait for their turn (see delivery.JoinLines).
func joinLine(ctx context.Context, tx pgx.Tx, jobs Inserter, ids []uuid.UUID, trigger delivery.Trigger) error {
	heads, err := delivery.JoinLines(ctx, tx, ids, trigger, false)
	if err != nil {
		return err
	}
	if params := delivery.LineJobs(heads); len(params) > 0 {
		if _, err := jobs.InsertManyTx(ctx, tx, params); err != nil {
			return fmt.Errorf("queue %d delivery jobs: %w", len(params), err)
		}
	}
	return nil
}

// MarkDispatchedTx marks a message as already fanned out, so the dispatcher
// leaves it alone; a message meant for one endpoint only (a test event) is
// published, marked and then resent to that endpoint in one transaction.
func MarkDispatchedTx(ctx context.Context, tx pgx.Tx, messageID uuid.UUID, at time.Time) error {
	if _, err := tx.Exec(ctx, markDispatched, messageID, at); err != nil {
		return fmt.Errorf("mark message %s dispatched: %w", messageID, err)
	}
	return nil
}

// ResumeTx gives the parked lines of the endpoint endpointID, which tx has
// just enabled (store.EnableEndpointTx), their next heads' jobs: disabling
// an endpoint with ordering "object" holds its lines, and enabling resumes
// them in version order where they stopped. It returns how many lines it
// resumed; none for an endpoint without ordering.
func ResumeTx(ctx context.Context, tx pgx.Tx, jobs Inserter, endpointID uuid.UUID) (int, error) {
	heads, err := delivery.ResumeLines(ctx, tx, endpointID)
	if err != nil {
		return 0, err
	}
	if params := delivery.LineJobs(heads); len(params) > 0 {
		if _, err := jobs.InsertManyTx(ctx, tx, params); err != nil {
			return 0, fmt.Errorf("resume the lines of endpoint %s: queue %d delivery jobs: %w", endpointID, len(params), err)
		}
	}
	return len(heads), nil
}
