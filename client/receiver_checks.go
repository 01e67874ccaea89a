package client

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// Receiver check states, of a check and of its steps.
const (
	CheckRunning   = "running"
	CheckCompleted = "completed"

	StepPending   = "pending"
	StepSucceeded = "succeeded"
	StepFailed    = "failed"
	StepSkipped   = "skipped"
)

// ReceiverCheck is a run of the pre-launch checks against one endpoint:
// signed test events sent as deliveries are, and how the endpoint
// answered.
type ReceiverCheck struct {
	ID         uuid.UUID `json:"id"`
	TenantID   string    `json:"tenant_id"`
	EndpointID uuid.UUID `json:"endpoint_id"`
	// Status is CheckRunning until every step has its answers.
	Status      string              `json:"status"`
	Steps       []ReceiverCheckStep `json:"steps"`
	CreatedAt   time.Time           `json:"created_at"`
	CompletedAt *time.Time          `json:"completed_at"`
	// OwnerChecks are the checks Herald cannot send, to run on the
	// receiver's side.
	OwnerChecks []string `json:"owner_checks"`
}

// ReceiverCheckStep is one situation sent and its answers.
type ReceiverCheckStep struct {
	// Name is duplicate, concurrent, shuffled or old_event.
	Name  string `json:"name"`
	Title string `json:"title"`
	// Status is StepPending, StepSucceeded (every request answered 2xx),
	// StepFailed or StepSkipped (Note says why).
	Status string `json:"status"`
	// Verify is what to check on the receiver's side.
	Verify string              `json:"verify"`
	Note   string              `json:"note,omitempty"`
	Sends  []ReceiverCheckSend `json:"sends"`
}

// ReceiverCheckSend is one request of a step.
type ReceiverCheckSend struct {
	MessageID   uuid.UUID  `json:"message_id"`
	WebhookID   string     `json:"webhook_id"`
	ObjectID    string     `json:"object_id"`
	Version     int64      `json:"version"`
	PublishedAt time.Time  `json:"published_at"`
	SentAt      *time.Time `json:"sent_at,omitempty"`
	DurationMS  int64      `json:"duration_ms"`
	// StatusCode is 0 when no answer came; Error says why.
	StatusCode int    `json:"status_code,omitempty"`
	Response   string `json:"response,omitempty"`
	Error      string `json:"error,omitempty"`
}

// StartReceiverCheck starts a receiver check of an endpoint; dispatchers
// send its steps. One check a minute per endpoint (429 otherwise).
func (c *Client) StartReceiverCheck(ctx context.Context, tenantID string, endpointID uuid.UUID) (ReceiverCheck, error) {
	var out ReceiverCheck
	return out, c.do(ctx, "POST", endpointPath(tenantID, endpointID)+"/receiver-checks", nil, nil, &out)
}

// GetReceiverCheck reads a receiver check's steps and answers.
func (c *Client) GetReceiverCheck(ctx context.Context, tenantID string, endpointID, checkID uuid.UUID) (ReceiverCheck, error) {
	var out ReceiverCheck
	return out, c.do(ctx, "GET", endpointPath(tenantID, endpointID)+"/receiver-checks/"+checkID.String(), nil, nil, &out)
}
