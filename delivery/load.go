package delivery

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/deliverystatus"
)

// progress is the part of a delivery an attempt's outcome depends on.
type progress struct {
	status deliverystatus.Status
	// attemptCount counts every attempt the delivery made; the next one is
	// number attemptCount+1.
	attemptCount int
	// attemptsBeforeRequeue is what attemptCount was when the delivery was
	// last requeued: the schedule counts only the attempts after it.
	attemptsBeforeRequeue int
	// firstAttempt is when the current retry window started: the first
	// attempt since the delivery was created or requeued.
	firstAttempt *time.Time
	// generation is the delivery's generation (see Args.Generation): an
	// attempt is recorded only while it is still the job's.
	generation int
}

// loaded is what one attempt needs to know of its delivery.
type loaded struct {
	progress
	id            uuid.UUID
	nextAttemptAt time.Time // zero when not set
	messageID     uuid.UUID
	body          []byte
	// traceparent is the context of the span that published the message
	// (see outbox.Publish); empty when it was published without one.
	traceparent   string
	tenantID      string
	objectID      string
	objectVersion int64
	endpointID    uuid.UUID
	url           string
	// ordered says the endpoint's ordering is "object": d is sent only as
	// the head of its line (see ordered.go).
	ordered         bool
	endpointEnabled bool
	// rateLimit is the endpoint's messages per second; 0 means no limit.
	rateLimit float64
	// tenantMaxInflight is the tenant's own in-flight cap; 0 means
	// Config.MaxInflightPerTenant.
	tenantMaxInflight int
	// unanswered is the endpoint's unreachable_streak: its latest attempts
	// in a row that got no answer (see health.BreakerThreshold).
	unanswered int
	// secrets names the endpoint's secrets active when the delivery was
	// loaded (their ids), and secretsExpire is when the first of them
	// expires (zero: none does); see secretCache.
	secrets       string
	secretsExpire time.Time
	// credentials is the revision of the endpoint's credentials, 0 when it
	// has none (see endpointClients).
	credentials int64
	// options are the endpoint's own headers, timeout and retry policy.
	options endpointOptions
	// lineHead, lineWaiting and lowerUndispatched are, for a delivery to
	// an ordered endpoint, whether it is its line's head, whether it waits
	// in the line, and whether a lower version of its object is not
	// fanned out yet (see gateOf); false for the others.
	lineHead, lineWaiting, lowerUndispatched bool
}

// load reads what an attempt of delivery id needs. Concurrent loads share
// one query (see internal/batcher). A delivery that does not exist is an error
// wrapping pgx.ErrNoRows.
func (w *Worker) load(ctx context.Context, id uuid.UUID) (loaded, error) {
	found, err := w.loads.Do(ctx, id)
	if err != nil {
		return loaded{}, fmt.Errorf("load delivery %s: %w", id, err)
	}
	if found == nil {
		return loaded{}, fmt.Errorf("load delivery %s: %w", id, pgx.ErrNoRows)
	}
	return *found, nil
}

// queueLoad queues on batch loadDeliveries for ids with the planner
// settings it runs under; loadMany and Warm share it, so that Warm plans
// what loading runs.
func queueLoad(batch *pgx.Batch, ids []uuid.UUID, now time.Time) *pgx.QueuedQuery {
	batch.Queue(lookUpByIndex)
	batch.Queue(planOnce)
	batch.Queue(inOneProcess)
	return batch.Queue(loadDeliveries, ids, now)
}

// loadMany reads the deliveries ids, in order; nil for one that does not
// exist.
func (w *Worker) loadMany(ctx context.Context, ids []uuid.UUID) ([]*loaded, error) {
	// One round trip: the statements of a batch run in one implicit
	// transaction, to which set_config(…, true) applies.
	var (
		batch pgx.Batch
		byID  = make(map[uuid.UUID]*loaded, len(ids))
	)
	queueLoad(&batch, ids, w.now()).Query(func(rows pgx.Rows) error {
		var (
			d                       loaded
			next, expire            *time.Time
			body                    string
			traceparent             *string
			headers                 []byte
			timeoutMS               *int32
			windowMS, baseMS, capMS *int64
		)
		_, err := pgx.ForEachRow(rows, []any{&d.id, &d.status, &d.attemptCount, &d.attemptsBeforeRequeue, &d.firstAttempt, &d.generation, &next,
			&d.messageID, &body, &traceparent, &d.tenantID, &d.objectID, &d.objectVersion,
			&d.endpointID, &d.url, &d.endpointEnabled, &d.rateLimit, &d.ordered, &d.secrets, &expire, &d.credentials,
			&d.tenantMaxInflight, &d.unanswered,
			&headers, &timeoutMS, &windowMS, &baseMS, &capMS,
			&d.lineHead, &d.lineWaiting, &d.lowerUndispatched}, func() error {
			one := d
			one.options = endpointOptions{headers: headers}
			one.options.setDurations(timeoutMS, windowMS, baseMS, capMS)
			one.nextAttemptAt, one.secretsExpire = time.Time{}, time.Time{}
			if next != nil {
				one.nextAttemptAt = *next
			}
			if expire != nil {
				one.secretsExpire = *expire
			}
			one.body = []byte(body)
			one.traceparent = ""
			if traceparent != nil {
				one.traceparent = *traceparent
			}
			byID[one.id] = &one
			return nil
		})
		return err
	})
	if err := w.db.SendBatch(ctx, &batch).Close(); err != nil {
		return nil, err
	}
	out := make([]*loaded, len(ids))
	for i, id := range ids {
		out[i] = byID[id]
	}
	return out, nil
}
