package receivercheck

import (
	"time"

	"github.com/google/uuid"
)

// The steps of a check, in the order they run.
const (
	StepDuplicate  = "duplicate"
	StepConcurrent = "concurrent"
	StepShuffled   = "shuffled"
	StepOldEvent   = "old_event"
)

// States of a step.
const (
	StepPending   = "pending"
	StepSucceeded = "succeeded" // every copy was answered 2xx
	StepFailed    = "failed"    // a copy got another answer, or none
	StepSkipped   = "skipped"   // nothing to send; Note says why
)

// ShuffledVersions is how many versions of one object StepShuffled sends.
const ShuffledVersions = 5

// ShuffledOrder is the order StepShuffled sends its versions in, as
// indexes into them (0 is the oldest). The latest is sent fourth and an
// older one after it, so a receiver that keeps whatever arrived last ends
// on a stale version; a fixed order makes runs comparable.
var ShuffledOrder = [ShuffledVersions]int{1, 3, 0, 4, 2}

// OldEventAge is how old a check's first event must be before a later
// check replays it: a receiver's dedupe keys must outlive manual resends
// and replays, which come days later.
const OldEventAge = 24 * time.Hour

// Step is one situation sent to the endpoint and how it answered.
type Step struct {
	// Name is one of StepDuplicate, StepConcurrent, StepShuffled,
	// StepOldEvent.
	Name string `json:"name"`
	// Title says what was sent, for people.
	Title string `json:"title"`
	// Status is StepPending, StepSucceeded, StepFailed or StepSkipped.
	Status string `json:"status"`
	// Verify is what the endpoint's owner should check on their side.
	Verify string `json:"verify"`
	// Note explains a skipped step, or adds what the answers imply.
	Note string `json:"note,omitempty"`
	// Sends are the requests, in the order they were sent (for
	// StepConcurrent, at once).
	Sends []Send `json:"sends"`
}

// Send is one request of a step.
type Send struct {
	MessageID uuid.UUID `json:"message_id"`
	// WebhookID is the webhook-id header: the receiver's dedupe key.
	WebhookID string `json:"webhook_id"`
	ObjectID  string `json:"object_id"`
	Version   int64  `json:"version"`
	// PublishedAt is when the event was published (for StepOldEvent, its
	// first check's time).
	PublishedAt time.Time `json:"published_at"`
	// SentAt is nil until the request was made.
	SentAt     *time.Time `json:"sent_at,omitempty"`
	DurationMS int64      `json:"duration_ms"`
	// StatusCode is the answer's status; 0 when none came.
	StatusCode int `json:"status_code,omitempty"`
	// Response is the start of the answer's body.
	Response string `json:"response,omitempty"`
	// Error is why no answer came.
	Error string `json:"error,omitempty"`
}

// OwnerChecks are the pre-launch checks Herald cannot send, which the
// endpoint's owner runs on their side.
var OwnerChecks = []string{
	"Stop your worker after the event is stored and before its side effect commits, start it again, and see the event applied exactly once.",
	"Rotate the signing secret with a grace period and see requests verify with the old secret and the new one while both sign.",
	"Make sure your job that prunes dedupe keys keeps them at least 30 days, longer than Herald's retries and its manual resends.",
	"Make one event fail on purpose and see it set aside as a dead letter while the events behind it are still applied.",
}

// maxExcerpt bounds the response excerpt kept per request.
const maxExcerpt = 300
