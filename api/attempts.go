package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/heraldhq/herald/deliverylog"
	"github.com/heraldhq/herald/internal/page"
)

// Attempt is one HTTP request Herald made for a delivery.
type Attempt struct {
	ID             uuid.UUID       `json:"id"`
	DeliveryID     uuid.UUID       `json:"delivery_id"`
	MessageID      uuid.UUID       `json:"message_id"`
	EndpointID     uuid.UUID       `json:"endpoint_id"`
	AttemptNumber  int             `json:"attempt_number"`
	Trigger        string          `json:"trigger"`
	StartedAt      time.Time       `json:"started_at"`
	DurationMS     int             `json:"duration_ms"`
	RequestHeaders json.RawMessage `json:"request_headers"`
	StatusCode     *int            `json:"status_code"`
	Error          *string         `json:"error"`
	Response       string          `json:"response_excerpt"`
	Outcome        string          `json:"outcome"`
}

func (s *Server) listMessageAttempts(w http.ResponseWriter, r *http.Request) error {
	m, err := s.message(r)
	if err != nil {
		return err
	}
	return s.listAttempts(w, r, deliverylog.ListMessageAttempts, m.ID)
}

func (s *Server) listEndpointAttempts(w http.ResponseWriter, r *http.Request) error {
	id, err := s.endpointID(r)
	if err != nil {
		return err
	}
	return s.listAttempts(w, r, deliverylog.ListEndpointAttempts, id)
}

// attemptLister is a read-model list of the attempts of a message or an
// endpoint.
type attemptLister func(ctx context.Context, db deliverylog.DB, tenantID string, owner uuid.UUID, f deliverylog.AttemptFilter, req page.Request) (page.Page[deliverylog.Attempt], error)

// listAttempts pages through attempts, newest first, of the message or
// endpoint owner, optionally within since/until.
func (s *Server) listAttempts(w http.ResponseWriter, r *http.Request, list attemptLister, owner uuid.UUID) error {
	req, err := pageRequest(r)
	if err != nil {
		return err
	}
	var f deliverylog.AttemptFilter
	if f.Since, f.Until, err = timeRange(r, time.Time{}); err != nil {
		return err
	}
	attempts, err := list(r.Context(), s.pool, chi.URLParam(r, "tenantID"), owner, f, req)
	if err != nil {
		return err
	}
	return writePage(w, page.Page[Attempt]{Items: mapSlice(attempts.Items, attemptJSON), Next: attempts.Next})
}

func attemptJSON(a deliverylog.Attempt) Attempt {
	return Attempt{
		ID: a.ID, DeliveryID: a.DeliveryID, MessageID: a.MessageID, EndpointID: a.EndpointID,
		AttemptNumber:  a.AttemptNumber,
		Trigger:        a.Trigger,
		StartedAt:      a.StartedAt,
		DurationMS:     a.DurationMS,
		RequestHeaders: a.RequestHeaders,
		StatusCode:     a.StatusCode,
		Error:          a.Error,
		Response:       a.ResponseExcerpt,
		Outcome:        a.Outcome,
	}
}

// endpointID reads the endpoint id from the path and checks that the
// endpoint belongs to the path's tenant.
func (s *Server) endpointID(r *http.Request) (uuid.UUID, error) {
	id, err := uuidParam(r, "endpointID", "endpoint")
	if err != nil {
		return uuid.UUID{}, err
	}
	var ok bool
	if err := s.pool.QueryRow(r.Context(), endpointOfTenant, id, chi.URLParam(r, "tenantID")).Scan(&ok); err != nil {
		return uuid.UUID{}, fmt.Errorf("endpoint %s: %w", id, err)
	}
	if !ok {
		return uuid.UUID{}, notFound("endpoint " + id.String())
	}
	return id, nil
}
