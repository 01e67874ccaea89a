package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

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
	return s.listAttempts(w, r, listMessageAttempts, m.ID)
}

func (s *Server) listEndpointAttempts(w http.ResponseWriter, r *http.Request) error {
	id, err := s.endpointID(r)
	if err != nil {
		return err
	}
	return s.listAttempts(w, r, listEndpointAttempts, id)
}

// listAttempts pages through attempts, newest first, of the message or
// endpoint owner, optionally within since/until.
func (s *Server) listAttempts(w http.ResponseWriter, r *http.Request, query string, owner uuid.UUID) error {
	req, err := pageRequest(r)
	if err != nil {
		return err
	}
	since, until, err := timeRange(r, time.Time{})
	if err != nil {
		return err
	}
	afterID, err := afterUUID(req)
	if err != nil {
		return err
	}
	rows, err := s.pool.Query(r.Context(), query, owner, since, until, req.AfterTime(), afterID, req.Size()+1)
	if err != nil {
		return fmt.Errorf("list attempts: %w", err)
	}
	attempts, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Attempt])
	if err != nil {
		return fmt.Errorf("list attempts: %w", err)
	}
	return writePage(w, page.Trim(req, attempts, func(a Attempt) page.Cursor {
		return page.Cursor{CreatedAt: a.StartedAt, ID: a.ID.String()}
	}))
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
