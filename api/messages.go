package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/heraldhq/herald/deliverylog"
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
	// Channels are the channels the message was published on; empty for
	// none.
	Channels     []string   `json:"channels"`
	CreatedAt    time.Time  `json:"created_at"`
	DispatchedAt *time.Time `json:"dispatched_at"`
	// DeliveryCounts counts the message's deliveries by status.
	DeliveryCounts map[deliverystatus.Status]int `json:"delivery_counts"`
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
	ID             uuid.UUID             `json:"id"`
	MessageID      uuid.UUID             `json:"message_id"`
	EndpointID     uuid.UUID             `json:"endpoint_id"`
	Status         deliverystatus.Status `json:"status"`
	AttemptCount   int                   `json:"attempt_count"`
	FirstAttemptAt *time.Time            `json:"first_attempt_at"`
	LastAttemptAt  *time.Time            `json:"last_attempt_at"`
	NextAttemptAt  *time.Time            `json:"next_attempt_at"`
	CompletedAt    *time.Time            `json:"completed_at"`
	LastStatusCode *int                  `json:"last_status_code"`
	LastError      *string               `json:"last_error"`
	CreatedAt      time.Time             `json:"created_at"`
}

func (s *Server) listMessages(w http.ResponseWriter, r *http.Request) error {
	req, err := pageRequest(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	var f deliverylog.MessageFilter
	if f.Since, f.Until, err = timeRange(r, time.Time{}); err != nil {
		return err
	}
	if v := q.Get("event_type"); v != "" {
		if !validEventType.MatchString(v) {
			return invalidParam("event_type", "event_type must be "+eventTypeRule)
		}
		f.EventType = v
	}
	if v := q.Get("status"); v != "" {
		if f.Status, err = deliverystatus.Parse(v); err != nil {
			return invalidParam("status", err.Error()+": it keeps messages with at least one delivery in that status")
		}
	}
	if v := q.Get("endpoint_id"); v != "" {
		id, err := uuid.Parse(v)
		if err != nil {
			return invalidParam("endpoint_id", "endpoint_id must be an endpoint's id (a UUID)")
		}
		f.EndpointID = &id
	}
	msgs, err := deliverylog.ListMessages(r.Context(), s.pool, chi.URLParam(r, "tenantID"), f, req)
	if err != nil {
		return err
	}
	return writePage(w, page.Page[Message]{Items: mapSlice(msgs.Items, messageJSON), Next: msgs.Next})
}

func (s *Server) getMessage(w http.ResponseWriter, r *http.Request) error {
	m, err := s.message(r)
	if err != nil {
		return err
	}
	deliveries, err := deliverylog.ListDeliveries(r.Context(), s.pool, chi.URLParam(r, "tenantID"), m.ID)
	if err != nil {
		return err
	}
	m.Deliveries = mapSlice(deliveries, deliveryJSON)
	return writeJSON(w, http.StatusOK, m)
}

// message loads the message named in the path, within the path's tenant.
func (s *Server) message(r *http.Request) (Message, error) {
	id, err := uuidParam(r, "messageID", "message")
	if err != nil {
		return Message{}, err
	}
	m, err := deliverylog.GetMessage(r.Context(), s.pool, chi.URLParam(r, "tenantID"), id)
	if errors.Is(err, deliverylog.ErrNotFound) {
		return Message{}, notFound("message " + id.String())
	}
	if err != nil {
		return Message{}, err
	}
	return messageJSON(m), nil
}

func messageJSON(m deliverylog.Message) Message {
	return Message{
		ID: m.ID, TenantID: m.TenantID, EventType: m.EventType,
		Object:         ObjectRef{ID: m.ObjectID, Version: m.ObjectVersion},
		Payload:        m.Payload,
		IdempotencyKey: m.IdempotencyKey,
		Channels:       m.Channels,
		CreatedAt:      m.CreatedAt,
		DispatchedAt:   m.DispatchedAt,
		DeliveryCounts: m.DeliveryCounts,
	}
}

func deliveryJSON(d deliverylog.Delivery) Delivery {
	return Delivery{
		ID: d.ID, MessageID: d.MessageID, EndpointID: d.EndpointID,
		Status:         d.Status,
		AttemptCount:   d.AttemptCount,
		FirstAttemptAt: d.FirstAttemptAt,
		LastAttemptAt:  d.LastAttemptAt,
		NextAttemptAt:  d.NextAttemptAt,
		CompletedAt:    d.CompletedAt,
		LastStatusCode: d.LastStatusCode,
		LastError:      d.LastError,
		CreatedAt:      d.CreatedAt,
	}
}

// mapSlice converts every row of a read-model list into its JSON form.
func mapSlice[T, J any](rows []T, toJSON func(T) J) []J {
	out := make([]J, len(rows))
	for i, row := range rows {
		out[i] = toJSON(row)
	}
	return out
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
