package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/deliverystatus"
	"github.com/heraldhq/herald/internal/page"
)

// Message is a published event as the API shows it.
type Message struct {
	ID             uuid.UUID       `json:"id"`
	TenantID       string          `json:"tenant_id"`
	EventType      string          `json:"event_type"`
	Object         ObjectRef       `json:"object"`
	Payload        json.RawMessage `json:"payload"`
	IdempotencyKey *string         `json:"idempotency_key,omitempty"`
	CreatedAt      time.Time       `json:"created_at"`
	DispatchedAt   *time.Time      `json:"dispatched_at"`
	// DeliveryCounts counts the message's deliveries by status.
	DeliveryCounts map[string]int `json:"delivery_counts"`
	// Deliveries is filled only when one message is fetched.
	Deliveries []Delivery `json:"deliveries,omitempty"`
}

// ObjectRef is the object a message is about and the version it carries.
type ObjectRef struct {
	ID      string `json:"id"`
	Version int64  `json:"version"`
}

// Delivery is one (message, endpoint) pair and how it is going.
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

func (s *Server) listMessages(w http.ResponseWriter, r *http.Request) error {
	req, err := pageRequest(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	since, until, err := timeRange(r, time.Time{})
	if err != nil {
		return err
	}
	var eventType, status *string
	var endpointID *uuid.UUID
	if v := q.Get("event_type"); v != "" {
		if !validEventType.MatchString(v) {
			return invalidParam("event_type", "event_type must be "+eventTypeRule)
		}
		eventType = &v
	}
	if v := q.Get("status"); v != "" {
		if _, err := deliverystatus.Parse(v); err != nil {
			return invalidParam("status", err.Error()+": it keeps messages with at least one delivery in that status")
		}
		status = &v
	}
	if v := q.Get("endpoint_id"); v != "" {
		id, err := uuid.Parse(v)
		if err != nil {
			return invalidParam("endpoint_id", "endpoint_id must be an endpoint's id (a UUID)")
		}
		endpointID = &id
	}
	afterID, err := afterUUID(req)
	if err != nil {
		return err
	}
	rows, err := s.pool.Query(r.Context(), listMessages, chi.URLParam(r, "tenantID"),
		eventType, status, endpointID, since, until, req.AfterTime(), afterID, req.Size()+1)
	if err != nil {
		return fmt.Errorf("list messages: %w", err)
	}
	msgs, err := pgx.CollectRows(rows, scanMessage)
	if err != nil {
		return fmt.Errorf("list messages: %w", err)
	}
	return writePage(w, page.Trim(req, msgs, func(m Message) page.Cursor {
		return page.Cursor{CreatedAt: m.CreatedAt, ID: m.ID.String()}
	}))
}

func (s *Server) getMessage(w http.ResponseWriter, r *http.Request) error {
	m, err := s.message(r)
	if err != nil {
		return err
	}
	rows, err := s.pool.Query(r.Context(), listMessageDeliveries, m.ID)
	if err != nil {
		return fmt.Errorf("message %s deliveries: %w", m.ID, err)
	}
	m.Deliveries, err = pgx.CollectRows(rows, pgx.RowToStructByPos[Delivery])
	if err != nil {
		return fmt.Errorf("message %s deliveries: %w", m.ID, err)
	}
	return writeJSON(w, http.StatusOK, m)
}

// message loads the message named in the path, within the path's tenant.
func (s *Server) message(r *http.Request) (Message, error) {
	id, err := uuidParam(r, "messageID", "message")
	if err != nil {
		return Message{}, err
	}
	rows, err := s.pool.Query(r.Context(), selectMessage, chi.URLParam(r, "tenantID"), id)
	if err != nil {
		return Message{}, fmt.Errorf("message %s: %w", id, err)
	}
	m, err := pgx.CollectExactlyOneRow(rows, scanMessage)
	if errors.Is(err, pgx.ErrNoRows) {
		return Message{}, notFound("message " + id.String())
	}
	if err != nil {
		return Message{}, fmt.Errorf("message %s: %w", id, err)
	}
	return m, nil
}

func scanMessage(row pgx.CollectableRow) (Message, error) {
	var m Message
	var body string
	err := row.Scan(&m.ID, &m.TenantID, &m.EventType, &m.Object.ID, &m.Object.Version, &body,
		&m.IdempotencyKey, &m.CreatedAt, &m.DispatchedAt, &m.DeliveryCounts)
	m.Payload = json.RawMessage(body)
	return m, err
}

func afterUUID(req page.Request) (*uuid.UUID, error) {
	if req.After == nil {
		return nil, nil
	}
	id, err := uuid.Parse(req.After.ID)
	if err != nil {
		return nil, page.ErrInvalidCursor
	}
	return &id, nil
}

// timeRange reads the since and until query parameters (RFC 3339). A
// missing since is defaultSince (the zero time means unbounded); a missing
// until is unbounded. The returned pointers are nil when unbounded.
func timeRange(r *http.Request, defaultSince time.Time) (since, until *time.Time, err error) {
	q := r.URL.Query()
	parse := func(name string) (*time.Time, error) {
		v := q.Get(name)
		if v == "" {
			return nil, nil
		}
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return nil, invalidParam(name, name+" must be an RFC 3339 time such as 2026-12-01T00:00:00Z, got "+quote(v))
		}
		return &t, nil
	}
	if since, err = parse("since"); err != nil {
		return nil, nil, err
	}
	if until, err = parse("until"); err != nil {
		return nil, nil, err
	}
	if since == nil && !defaultSince.IsZero() {
		since = &defaultSince
	}
	if since != nil && until != nil && !since.Before(*until) {
		return nil, nil, invalidParam("until", "until must be later than since")
	}
	return since, until, nil
}
