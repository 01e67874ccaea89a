package deliverylog

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/page"
)

// AttemptSummary is one HTTP request Herald made for a delivery, without
// the request headers and response excerpt that only a page about the
// attempt shows.
type AttemptSummary struct {
	ID         uuid.UUID
	DeliveryID uuid.UUID
	MessageID  uuid.UUID
	EndpointID uuid.UUID
	// AttemptNumber counts the delivery's attempts from 1.
	AttemptNumber int
	// Trigger says why the attempt ran: "scheduled" (the first send and
	// automatic retries), "manual" (a resend) or "replay".
	Trigger    string
	StartedAt  time.Time
	DurationMS int
	// StatusCode is the response's status; nil when no response came.
	StatusCode *int
	// Error says why the attempt failed without a response, or what was
	// wrong with it; nil when nothing was.
	Error *string
	// Outcome is the verdict the attempt led to (a delivery.Verdict):
	// succeeded, retry, exhausted or endpoint_gone.
	Outcome string
}

// Attempt is one HTTP request Herald made for a delivery, with what was
// sent and received.
type Attempt struct {
	AttemptSummary
	// RequestHeaders are the headers sent, a JSON object of strings.
	RequestHeaders json.RawMessage
	// ResponseExcerpt is the start of the response body.
	ResponseExcerpt string
}

// AttemptFilter selects attempts by when they started. The zero value keeps
// them all.
type AttemptFilter struct {
	// Since and Until keep attempts started in [Since, Until). Nil leaves
	// that end open.
	Since, Until *time.Time
}

// ListMessageAttempts returns a page of the attempts made for tenantID's
// message messageID that pass f, newest first.
func ListMessageAttempts(ctx context.Context, db DB, tenantID string, messageID uuid.UUID, f AttemptFilter, req page.Request) (page.Page[Attempt], error) {
	return listAttempts(ctx, db, listMessageAttempts, tenantID, messageID, f, req)
}

// ListEndpointAttempts returns a page of the attempts made to tenantID's
// endpoint endpointID that pass f, newest first.
func ListEndpointAttempts(ctx context.Context, db DB, tenantID string, endpointID uuid.UUID, f AttemptFilter, req page.Request) (page.Page[Attempt], error) {
	return listAttempts(ctx, db, listEndpointAttempts, tenantID, endpointID, f, req)
}

// ListAttemptsByDelivery returns every attempt made for tenantID's message
// messageID, ordered by delivery and then by attempt number.
func ListAttemptsByDelivery(ctx context.Context, db DB, tenantID string, messageID uuid.UUID) ([]AttemptSummary, error) {
	rows, err := db.Query(ctx, listAttemptsByDelivery, tenantID, messageID)
	if err != nil {
		return nil, fmt.Errorf("attempts of message %s: %w", messageID, err)
	}
	attempts, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (AttemptSummary, error) {
		var a AttemptSummary
		err := row.Scan(a.fields()...)
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("attempts of message %s: %w", messageID, err)
	}
	return attempts, nil
}

// AttemptDetail is an attempt with what a page about it shows beside it:
// the endpoint's URL and the message's event type.
type AttemptDetail struct {
	Attempt
	EndpointURL string
	EventType   string
}

// GetAttempt returns tenantID's attempt id, or an error wrapping
// ErrNotFound.
func GetAttempt(ctx context.Context, db DB, tenantID string, id uuid.UUID) (AttemptDetail, error) {
	return one(ctx, db, "attempt", selectAttempt, tenantID, id, func(row pgx.CollectableRow) (AttemptDetail, error) {
		var a AttemptDetail
		err := row.Scan(append(a.fields(), &a.RequestHeaders, &a.ResponseExcerpt, &a.EndpointURL, &a.EventType)...)
		return a, err
	})
}

// listAttempts runs query, a list of the attempts of owner (a message or an
// endpoint).
func listAttempts(ctx context.Context, db DB, query, tenantID string, owner uuid.UUID, f AttemptFilter, req page.Request) (page.Page[Attempt], error) {
	afterTime, afterID, err := after(req)
	if err != nil {
		return page.Page[Attempt]{}, err
	}
	rows, err := db.Query(ctx, query, tenantID, owner, f.Since, f.Until, afterTime, afterID, req.Size()+1)
	if err != nil {
		return page.Page[Attempt]{}, fmt.Errorf("list attempts of %s: %w", owner, err)
	}
	attempts, err := pgx.CollectRows(rows, scanAttempt)
	if err != nil {
		return page.Page[Attempt]{}, fmt.Errorf("list attempts of %s: %w", owner, err)
	}
	return page.Trim(req, attempts, Attempt.cursor), nil
}

func (a AttemptSummary) cursor() page.Cursor {
	return page.Cursor{CreatedAt: a.StartedAt, ID: a.ID.String()}
}

func (a *AttemptSummary) fields() []any {
	return []any{&a.ID, &a.DeliveryID, &a.MessageID, &a.EndpointID, &a.AttemptNumber, &a.Trigger,
		&a.StartedAt, &a.DurationMS, &a.StatusCode, &a.Error, &a.Outcome}
}

func scanAttempt(row pgx.CollectableRow) (Attempt, error) {
	var a Attempt
	err := row.Scan(append(a.fields(), &a.RequestHeaders, &a.ResponseExcerpt)...)
	return a, err
}
