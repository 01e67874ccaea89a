package client

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/google/uuid"
)

// Delivery states, as the API names them.
const (
	StatusPending   = "pending"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
	StatusSkipped   = "skipped"
)

// Message is a published event with the state of its deliveries.
type Message struct {
	ID        uuid.UUID `json:"id"`
	TenantID  string    `json:"tenant_id"`
	EventType string    `json:"event_type"`
	Object    struct {
		ID      string `json:"id"`
		Version int64  `json:"version"`
	} `json:"object"`
	// Payload is the exact JSON body sent to endpoints.
	Payload        json.RawMessage `json:"payload"`
	IdempotencyKey *string         `json:"idempotency_key,omitempty"`
	CreatedAt      time.Time       `json:"created_at"`
	DispatchedAt   *time.Time      `json:"dispatched_at"`
	// DeliveryCounts counts its deliveries by status (StatusPending, …); a
	// status no delivery has is absent.
	DeliveryCounts map[string]int `json:"delivery_counts"`
	// Deliveries is filled by GetMessage only.
	Deliveries []Delivery `json:"deliveries,omitempty"`
}

// Delivery is one message's delivery to one endpoint.
type Delivery struct {
	ID             uuid.UUID  `json:"id"`
	MessageID      uuid.UUID  `json:"message_id"`
	EndpointID     uuid.UUID  `json:"endpoint_id"`
	Status         string     `json:"status"`
	AttemptCount   int        `json:"attempt_count"`
	FirstAttemptAt *time.Time `json:"first_attempt_at"`
	LastAttemptAt  *time.Time `json:"last_attempt_at"`
	NextAttemptAt  *time.Time `json:"next_attempt_at"`
	CompletedAt    *time.Time `json:"completed_at"`
	LastStatusCode *int       `json:"last_status_code"`
	LastError      *string    `json:"last_error"`
	CreatedAt      time.Time  `json:"created_at"`
}

// NewMessage is what Publish sends.
type NewMessage struct {
	EventType string `json:"event_type"`
	ObjectID  string `json:"object_id"`
	// Data is the event's payload, a JSON object.
	Data json.RawMessage `json:"data"`
	// IdempotencyKey, when set, makes a repeated publish return the first
	// message instead of adding a second. It is sent as the
	// Idempotency-Key header.
	IdempotencyKey string `json:"-"`
}

// Publish publishes an event through the outbox (API keys only).
func (c *Client) Publish(ctx context.Context, tenantID string, m NewMessage) (Message, error) {
	var header http.Header
	if m.IdempotencyKey != "" {
		header = http.Header{"Idempotency-Key": {m.IdempotencyKey}}
	}
	var out Message
	return out, c.send(ctx, "POST", "/tenants/"+segment(tenantID)+"/messages", nil, header, m, &out)
}

// MessageFilter selects messages. The zero value keeps them all.
type MessageFilter struct {
	EventType  string
	Status     string
	EndpointID uuid.UUID
	// Since and Until bound the publication time; zero means unbounded.
	Since, Until time.Time
}

// ListMessages lists a tenant's messages, newest first.
func (c *Client) ListMessages(ctx context.Context, tenantID string, f MessageFilter, opts ListOptions) (Page[Message], error) {
	q := opts.query()
	set := func(name, v string) {
		if v != "" {
			q.Set(name, v)
		}
	}
	set("event_type", f.EventType)
	set("status", f.Status)
	if f.EndpointID != uuid.Nil {
		q.Set("endpoint_id", f.EndpointID.String())
	}
	if !f.Since.IsZero() {
		q.Set("since", f.Since.UTC().Format(time.RFC3339Nano))
	}
	if !f.Until.IsZero() {
		q.Set("until", f.Until.UTC().Format(time.RFC3339Nano))
	}
	var p Page[Message]
	return p, c.do(ctx, "GET", "/tenants/"+segment(tenantID)+"/messages", q, nil, &p)
}

// GetMessage reads one message with its deliveries.
func (c *Client) GetMessage(ctx context.Context, tenantID string, id uuid.UUID) (Message, error) {
	var out Message
	return out, c.do(ctx, "GET", "/tenants/"+segment(tenantID)+"/messages/"+id.String(), nil, nil, &out)
}

// Resent is the delivery a resend queued.
type Resent struct {
	DeliveryID     uuid.UUID `json:"delivery_id"`
	MessageID      uuid.UUID `json:"message_id"`
	EndpointID     uuid.UUID `json:"endpoint_id"`
	PreviousStatus string    `json:"previous_status,omitempty"`
}

// Resend sends a message to one endpoint again now, with the same
// webhook-id.
func (c *Client) Resend(ctx context.Context, tenantID string, messageID, endpointID uuid.UUID) (Resent, error) {
	var out Resent
	path := "/tenants/" + segment(tenantID) + "/messages/" + messageID.String() + "/endpoints/" + endpointID.String() + "/resend"
	return out, c.do(ctx, "POST", path, nil, nil, &out)
}

// Replay states.
const (
	ReplayRunning   = "running"
	ReplayCompleted = "completed"
)

// Replay is a background re-send of an endpoint's deliveries since a time.
type Replay struct {
	ID         uuid.UUID `json:"id"`
	TenantID   string    `json:"tenant_id"`
	EndpointID uuid.UUID `json:"endpoint_id"`
	Since      time.Time `json:"since"`
	Until      time.Time `json:"until"`
	OnlyFailed bool      `json:"only_failed"`
	// Status is ReplayRunning or ReplayCompleted.
	Status string `json:"status"`
	// Total is how many deliveries it replays; Enqueued of them are
	// queued, Done of them are no longer pending.
	Total       int        `json:"total"`
	Enqueued    int        `json:"enqueued"`
	Done        int        `json:"done"`
	CreatedAt   time.Time  `json:"created_at"`
	CompletedAt *time.Time `json:"completed_at"`
}

// NewReplay is what StartReplay sends.
type NewReplay struct {
	Since time.Time `json:"since"`
	// Until, when not zero, ends the range (exclusive); zero means now.
	Until      time.Time `json:"-"`
	OnlyFailed bool      `json:"only_failed"`
}

// StartReplay replays an endpoint's deliveries of messages published since
// a time, as a background job.
func (c *Client) StartReplay(ctx context.Context, tenantID string, endpointID uuid.UUID, r NewReplay) (Replay, error) {
	body := map[string]any{"since": r.Since.UTC(), "only_failed": r.OnlyFailed}
	if !r.Until.IsZero() {
		body["until"] = r.Until.UTC()
	}
	var out Replay
	return out, c.do(ctx, "POST", endpointPath(tenantID, endpointID)+"/replays", nil, body, &out)
}

// GetReplay reads a replay's progress.
func (c *Client) GetReplay(ctx context.Context, tenantID string, endpointID, replayID uuid.UUID) (Replay, error) {
	var out Replay
	return out, c.do(ctx, "GET", endpointPath(tenantID, endpointID)+"/replays/"+replayID.String(), nil, nil, &out)
}
