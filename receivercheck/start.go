package receivercheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/heraldhq/herald/outbox"
	"github.com/heraldhq/herald/replay"
)

// EventType is the type of a check's events: Herald's test events.
const EventType = replay.TestEventType

// MinInterval is the least time between two checks of one endpoint. A
// check sends ten requests; the limit keeps a button from becoming a way
// to flood an endpoint (the portal's and the API's test events share the
// purpose).
const MinInterval = time.Minute

// Check states.
const (
	StatusRunning   = "running"
	StatusCompleted = "completed"
)

// Check is one run of the receiver check against one endpoint.
type Check struct {
	ID         uuid.UUID `json:"id"`
	TenantID   string    `json:"tenant_id"`
	EndpointID uuid.UUID `json:"endpoint_id"`
	// Status is StatusRunning until every step has its answers.
	Status      string     `json:"status"`
	Steps       []Step     `json:"steps"`
	CreatedAt   time.Time  `json:"created_at"`
	CompletedAt *time.Time `json:"completed_at"`
}

// Failed reports whether a step saw an answer that was not 2xx.
func (c Check) Failed() bool {
	for _, s := range c.Steps {
		if s.Status == StepFailed {
			return true
		}
	}
	return false
}

// Errors of Start and Get.
var (
	// ErrNotFound: the endpoint, or the check, is not the tenant's.
	ErrNotFound = errors.New("not found")
	// ErrEndpointDisabled: a disabled endpoint is not sent checks.
	ErrEndpointDisabled = replay.ErrEndpointDisabled
	// ErrTooSoon is wrapped by a *TooSoonError.
	ErrTooSoon = errors.New("a receiver check of this endpoint ran less than a minute ago")
)

// TooSoonError is a check refused by MinInterval.
type TooSoonError struct {
	// RetryAfter is how long until a check may start.
	RetryAfter time.Duration
}

func (e *TooSoonError) Error() string {
	return fmt.Sprintf("%v; start the next one in %s", ErrTooSoon, e.RetryAfter.Round(time.Second))
}

func (e *TooSoonError) Unwrap() error { return ErrTooSoon }

// Inserter queues the check's job in the caller's transaction; a River
// client is one.
type Inserter interface {
	InsertTx(ctx context.Context, tx pgx.Tx, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
}

// Start publishes a check's events for endpointID, stores the check and
// queues its job, in tx. Its errors: ErrNotFound, ErrEndpointDisabled, a
// *TooSoonError, or the database's.
func Start(ctx context.Context, tx pgx.Tx, jobs Inserter, tenantID string, endpointID uuid.UUID) (Check, error) {
	var (
		enabled bool
		now     time.Time
	)
	err := tx.QueryRow(ctx, lockEndpoint, endpointID, tenantID).Scan(&enabled, &now)
	if errors.Is(err, pgx.ErrNoRows) {
		return Check{}, fmt.Errorf("receiver check of endpoint %s: %w", endpointID, ErrNotFound)
	}
	if err != nil {
		return Check{}, fmt.Errorf("receiver check of endpoint %s: %w", endpointID, err)
	}
	if !enabled {
		return Check{}, fmt.Errorf("receiver check of endpoint %s: %w", endpointID, ErrEndpointDisabled)
	}
	var last time.Time
	switch err := tx.QueryRow(ctx, latestCheck, endpointID).Scan(&last); {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return Check{}, fmt.Errorf("receiver check of endpoint %s: %w", endpointID, err)
	case now.Sub(last) < MinInterval:
		return Check{}, &TooSoonError{RetryAfter: MinInterval - now.Sub(last)}
	}

	c := Check{ID: uuid.Must(uuid.NewV7()), TenantID: tenantID, EndpointID: endpointID, Status: StatusRunning, CreatedAt: now}
	p := publisher{ctx: ctx, tx: tx, tenantID: tenantID, checkID: c.ID, now: now}
	object := "receiver-check-" + endpointID.String()
	duplicate := p.publish(object+"-duplicate", StepDuplicate, nil)
	concurrent := p.publish(object+"-concurrent", StepConcurrent, nil)
	var versions []Send
	for i := range ShuffledVersions {
		versions = append(versions, p.publish(object, StepShuffled, map[string]any{"sent_as": fmt.Sprintf("%d of %d", i+1, ShuffledVersions)}))
	}
	if p.err != nil {
		return Check{}, fmt.Errorf("receiver check of endpoint %s: %w", endpointID, p.err)
	}
	shuffled := make([]Send, 0, ShuffledVersions)
	for _, i := range ShuffledOrder {
		shuffled = append(shuffled, versions[i])
	}
	latest := versions[ShuffledVersions-1]
	old, err := oldEvent(ctx, tx, endpointID, now)
	if err != nil {
		return Check{}, fmt.Errorf("receiver check of endpoint %s: %w", endpointID, err)
	}
	c.Steps = []Step{
		{
			Name: StepDuplicate, Title: "The same event twice in a row", Status: StepPending,
			Sends: []Send{duplicate, duplicate},
			Verify: fmt.Sprintf("The side effect of %s happened once. Both copies should be answered 2xx: the second one is a copy you already have, not an error.",
				duplicate.WebhookID),
		},
		{
			Name: StepConcurrent, Title: "Two copies of one event at the same moment", Status: StepPending,
			Sends: []Send{concurrent, concurrent},
			Verify: fmt.Sprintf("The side effect of %s happened once, though both copies were inside your handler together. A dedupe that looks the key up before inserting it lets both through; insert the key with a UNIQUE constraint in the side effect's transaction.",
				concurrent.WebhookID),
		},
		{
			Name: StepShuffled, Title: fmt.Sprintf("%d versions of one object, out of order", ShuffledVersions), Status: StepPending,
			Sends: shuffled,
			Verify: fmt.Sprintf("Object %s ends at version %d, the latest, though version %d arrived last. Compare the payload's object.version with the version you stored; timestamps cannot order them.",
				object, latest.Version, shuffled[len(shuffled)-1].Version),
		},
		old.step(),
	}
	steps, err := json.Marshal(c.Steps)
	if err != nil {
		return Check{}, fmt.Errorf("receiver check of endpoint %s: %w", endpointID, err)
	}
	if _, err := tx.Exec(ctx, insertCheck, c.ID, tenantID, endpointID, duplicate.MessageID, steps, now); err != nil {
		return Check{}, fmt.Errorf("receiver check of endpoint %s: %w", endpointID, err)
	}
	if _, err := jobs.InsertTx(ctx, tx, Args{CheckID: c.ID}, nil); err != nil {
		return Check{}, fmt.Errorf("receiver check of endpoint %s: queue its job: %w", endpointID, err)
	}
	return c, nil
}

// publisher publishes a check's events, keeping the first error.
type publisher struct {
	ctx      context.Context
	tx       pgx.Tx
	tenantID string
	checkID  uuid.UUID
	now      time.Time
	err      error
}

func (p *publisher) publish(object, step string, extra map[string]any) Send {
	if p.err != nil {
		return Send{}
	}
	data := map[string]any{"receiver_check": p.checkID, "step": step,
		"message": "A test event from Herald's receiver check; nothing happened in the sender's system."}
	for k, v := range extra {
		data[k] = v
	}
	published, err := outbox.Publish(p.ctx, p.tx, outbox.Message{Tenant: p.tenantID, Type: EventType, ObjectID: object, Data: data})
	if err == nil {
		// Sent to this endpoint alone, by the check: never fanned out.
		err = replay.MarkDispatchedTx(p.ctx, p.tx, published.ID, p.now)
	}
	if err != nil {
		p.err = err
		return Send{}
	}
	return Send{MessageID: published.ID, WebhookID: "msg_" + published.ID.String(), ObjectID: object, Version: published.Version, PublishedAt: p.now}
}

// oldCandidate is what StepOldEvent will send, if anything.
type oldCandidate struct {
	send *Send
	// firstCheck is the endpoint's first check, when it is younger than
	// OldEventAge.
	firstCheck time.Time
}

func oldEvent(ctx context.Context, tx pgx.Tx, endpointID uuid.UUID, now time.Time) (oldCandidate, error) {
	var s Send
	err := tx.QueryRow(ctx, oldCheck, endpointID, now.Add(-OldEventAge)).Scan(&s.MessageID, &s.ObjectID, &s.Version, &s.PublishedAt)
	if err == nil {
		s.WebhookID = "msg_" + s.MessageID.String()
		return oldCandidate{send: &s}, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return oldCandidate{}, err
	}
	var first time.Time
	if err := tx.QueryRow(ctx, firstCheck, endpointID).Scan(&first); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return oldCandidate{}, err
	}
	return oldCandidate{firstCheck: first}, nil
}

func (o oldCandidate) step() Step {
	s := Step{Name: StepOldEvent, Title: "An old event replayed", Status: StepPending}
	if o.send == nil {
		s.Status, s.Sends = StepSkipped, []Send{}
		s.Verify = "Run the check again a day or more from now: it replays this check's first event, as a manual resend or a replay would days later."
		s.Note = "No check of this endpoint is a day old yet."
		if !o.firstCheck.IsZero() {
			s.Note = fmt.Sprintf("No check of this endpoint is a day old yet; the first one ran at %s, so a check from %s on replays its event.",
				o.firstCheck.UTC().Format(time.RFC3339), o.firstCheck.Add(OldEventAge).UTC().Format(time.RFC3339))
		}
		return s
	}
	s.Sends = []Send{*o.send}
	s.Verify = fmt.Sprintf("%s was first sent at %s; your dedupe key for it should still be there, so it is not applied again. Keep keys at least 30 days.",
		o.send.WebhookID, o.send.PublishedAt.UTC().Format(time.RFC3339))
	return s
}

// Get reads one check of the tenant's endpoint. Its errors: ErrNotFound or
// the database's.
func Get(ctx context.Context, db interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}, tenantID string, endpointID, checkID uuid.UUID) (Check, error) {
	var (
		c     Check
		steps []byte
	)
	err := db.QueryRow(ctx, selectCheck, checkID, tenantID, endpointID).Scan(&c.ID, &c.TenantID, &c.EndpointID, &c.Status, &steps, &c.CreatedAt, &c.CompletedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Check{}, fmt.Errorf("receiver check %s: %w", checkID, ErrNotFound)
	}
	if err != nil {
		return Check{}, fmt.Errorf("receiver check %s: %w", checkID, err)
	}
	if err := json.Unmarshal(steps, &c.Steps); err != nil {
		return Check{}, fmt.Errorf("receiver check %s: its steps: %w", checkID, err)
	}
	return c, nil
}
