package delivery

import (
	"fmt"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
)

// Queue is the River queue delivery jobs run on.
const Queue = "deliveries"

// Kind is the River job kind of Args.
const Kind = "herald.delivery"

// MaxJobAttempts bounds how often River retries a delivery job that returned
// an error (the database was unreachable, say) or whose process died. It does
// not bound the delivery's HTTP attempts: a failed HTTP attempt is recorded
// and the job snoozes until the retry, which River does not count as an
// attempt, so the retry window of the schedule alone decides when a delivery
// is exhausted. Under JobRetryPolicy 100 attempts take at least 3.8 hours of
// continuous errors, so a brownout of an hour or two discards no job; the
// dispatcher's reconciler gives a delivery whose job was discarded anyway a
// new one.
const MaxJobAttempts = 100

// Trigger says why an attempt runs; it is recorded on the attempt.
type Trigger string

// The triggers.
const (
	// TriggerScheduled is the first send after publishing and every
	// automatic retry.
	TriggerScheduled Trigger = "scheduled"
	// TriggerManual is a resend asked for by a person.
	TriggerManual Trigger = "manual"
	// TriggerReplay is a resend that is part of an endpoint replay.
	TriggerReplay Trigger = "replay"
)

func (t Trigger) valid() bool {
	switch t {
	case TriggerScheduled, TriggerManual, TriggerReplay:
		return true
	}
	return false
}

// Args is the River job that sends one delivery. One job serves every
// automatic attempt of its delivery: after a failed attempt it snoozes until
// the retry. Whoever inserts another job for a delivery (a resend, a
// replay) requeues it in the same transaction: sets it pending and adds one
// to its generation, which fences out the jobs inserted before. A job for a
// delivery that is not pending, or of another generation, does nothing.
type Args struct {
	// DeliveryID is the herald.deliveries row to send. Required.
	DeliveryID uuid.UUID `json:"delivery_id"`
	// EndpointID is the delivery's endpoint. It is repeated here so that a
	// job whose endpoint is at its in-flight cap is held back before it
	// reads anything from the database. Required.
	EndpointID uuid.UUID `json:"endpoint_id"`
	// Trigger is recorded on every attempt the job makes. Empty means
	// TriggerScheduled.
	Trigger Trigger `json:"trigger,omitempty"`
	// Generation is the delivery's generation (deliveries.generation) the
	// job was inserted for. A job whose generation is no longer its
	// delivery's ends without sending, and cannot record an attempt: the
	// delivery was requeued, and the requeue's job works it now. Zero, or
	// absent in jobs inserted before generations existed, is the generation
	// of a delivery never requeued.
	Generation int `json:"generation,omitempty"`
	// Alone says that no other job of the delivery can have an attempt of
	// it in flight when this one runs, so the job does not look for one
	// (see EarlierAttemptSnooze): the fan-out's job for a lone new
	// delivery, a batch job's hand-off of a delivery it did not send, the
	// retry of one whose attempt it recorded. A requeue's job and the
	// reconciler's, and jobs inserted before this field existed, look.
	Alone bool `json:"alone,omitempty"`
}

// Kind returns Kind.
func (Args) Kind() string { return Kind }

// InsertOpts puts delivery jobs on Queue with MaxJobAttempts.
func (Args) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: Queue, MaxAttempts: MaxJobAttempts}
}

// check returns the job's trigger, or why the job can never run.
func (a Args) check() (Trigger, error) {
	if a.DeliveryID == uuid.Nil || a.EndpointID == uuid.Nil {
		return "", fmt.Errorf("delivery job without delivery_id (%s) or endpoint_id (%s); insert delivery.Args with both", a.DeliveryID, a.EndpointID)
	}
	if a.Trigger == "" {
		return TriggerScheduled, nil
	}
	if !a.Trigger.valid() {
		return "", fmt.Errorf("delivery %s: unknown trigger %q; want %q, %q or %q", a.DeliveryID, a.Trigger, TriggerScheduled, TriggerManual, TriggerReplay)
	}
	return a.Trigger, nil
}

// BatchKind is the River job kind of BatchArgs.
const BatchKind = "herald.delivery_batch"

// MaxBatch is the most deliveries one BatchArgs job carries.
const MaxBatch = 100

// BatchArgs is the River job that sends several pending deliveries to one
// endpoint, each its first attempt of a retry window: the fan-out's fast
// path for new deliveries, and a replay's for the deliveries it requeues. It
// costs River one job for the lot instead of one each, and takes as many of
// the endpoint's in-flight slots as are free. A delivery belongs to its
// batch job while it is at the job's generation, has not been attempted
// since it was created or requeued, and has no next_attempt_at; the job
// hands a delivery it does not finish (an attempt failed, or the endpoint
// has a rate limit) to an Args job of its own, which serves it from then on
// (see BatchWorker).
type BatchArgs struct {
	// EndpointID is the endpoint of every delivery. Required.
	EndpointID uuid.UUID `json:"endpoint_id"`
	// DeliveryIDs are the herald.deliveries rows to send, at most
	// MaxBatch, in the order to send them. Required.
	DeliveryIDs []uuid.UUID `json:"delivery_ids"`
	// Trigger is recorded on the attempts, as Args.Trigger. Empty means
	// TriggerScheduled (the fan-out's).
	Trigger Trigger `json:"trigger,omitempty"`
	// Generation is the generation of every delivery of the job, as
	// Args.Generation: 0 for the fan-out's new deliveries (and jobs
	// inserted before batches carried one), the requeue's for a replay's.
	Generation int `json:"generation,omitempty"`
	// Quiet says no earlier job of any of the deliveries can still have an
	// attempt of it in flight: a replay set it because each had settled,
	// when requeued, longer ago than a job of the dispatcher's may run
	// (replay.Worker's quiet period). The job then sends without looking
	// for one (Worker.checkAlone), a look through the delivery ids of every
	// running batch job: during a replay of 100,000, hundreds of them at
	// once, 0.15 to 0.5 s a look. False (and in jobs inserted before the
	// field) means look.
	Quiet bool `json:"quiet,omitempty"`
}

// Kind returns BatchKind.
func (BatchArgs) Kind() string { return BatchKind }

// InsertOpts puts batch jobs on Queue with MaxJobAttempts.
func (BatchArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: Queue, MaxAttempts: MaxJobAttempts}
}

// check returns the trigger of the job's attempts, or why the job can
// never run.
func (a BatchArgs) check() (Trigger, error) {
	if a.EndpointID == uuid.Nil || len(a.DeliveryIDs) == 0 || len(a.DeliveryIDs) > MaxBatch {
		return "", fmt.Errorf("delivery batch job with endpoint_id %s and %d delivery_ids; insert delivery.BatchArgs with an endpoint and 1 to %d deliveries",
			a.EndpointID, len(a.DeliveryIDs), MaxBatch)
	}
	if a.Trigger == "" {
		return TriggerScheduled, nil
	}
	if !a.Trigger.valid() {
		return "", fmt.Errorf("delivery batch to endpoint %s: unknown trigger %q; want %q, %q or %q", a.EndpointID, a.Trigger, TriggerScheduled, TriggerManual, TriggerReplay)
	}
	return a.Trigger, nil
}
