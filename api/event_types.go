package api

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/heraldhq/herald/internal/page"
)

// EventType is an entry of the event-type catalogue.
type EventType struct {
	Name        string    `json:"name"`
	Description string    `json:"description"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// validEventType matches the names the outbox accepts as message types.
var validEventType = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,127}$`)

const eventTypeRule = "1 to 128 characters: lower-case letters, digits, \".\", \"_\" and \"-\", starting with a letter or digit, e.g. invoice.paid"

type createEventTypeRequest struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

type updateEventTypeRequest struct {
	Description *string `json:"description"`
}

func (s *Server) listEventTypes(w http.ResponseWriter, r *http.Request) error {
	req, err := pageRequest(r)
	if err != nil {
		return err
	}
	rows, err := s.pool.Query(r.Context(), listEventTypes, req.AfterTime(), req.AfterID(), req.Size()+1)
	if err != nil {
		return fmt.Errorf("list event types: %w", err)
	}
	types, err := pgx.CollectRows(rows, pgx.RowToStructByPos[EventType])
	if err != nil {
		return fmt.Errorf("list event types: %w", err)
	}
	return writePage(w, page.Trim(req, types, func(t EventType) page.Cursor {
		return page.Cursor{CreatedAt: t.CreatedAt, ID: t.Name}
	}))
}

func (s *Server) createEventType(w http.ResponseWriter, r *http.Request) error {
	var req createEventTypeRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	if !validEventType.MatchString(req.Name) {
		return invalid("name", "name must be "+eventTypeRule)
	}
	if p := checkText("description", req.Description, 2000); p != nil {
		return p
	}
	rows, err := s.pool.Query(r.Context(), insertEventType, req.Name, req.Description)
	if err != nil {
		return fmt.Errorf("create event type %s: %w", req.Name, err)
	}
	t, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByPos[EventType])
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" { // unique_violation
		return conflict(fmt.Sprintf("event type %q already exists; change its description with PATCH /v1/event-types/%s", req.Name, req.Name))
	}
	if err != nil {
		return fmt.Errorf("create event type %s: %w", req.Name, err)
	}
	return writeJSON(w, http.StatusCreated, t)
}

func (s *Server) getEventType(w http.ResponseWriter, r *http.Request) error {
	t, err := s.oneEventType(r, selectEventType)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, t)
}

func (s *Server) updateEventType(w http.ResponseWriter, r *http.Request) error {
	var req updateEventTypeRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	if req.Description == nil {
		return invalid("description", "send the new description; it is the only field that can change")
	}
	if p := checkText("description", *req.Description, 2000); p != nil {
		return p
	}
	t, err := s.oneEventType(r, updateEventType, *req.Description)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, t)
}

func (s *Server) deleteEventType(w http.ResponseWriter, r *http.Request) error {
	if _, err := s.oneEventType(r, deleteEventType); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// oneEventType runs a query on the event type named in the path that
// returns it, or reports it as not found.
func (s *Server) oneEventType(r *http.Request, query string, args ...any) (EventType, error) {
	name := chi.URLParam(r, "eventType")
	if !validEventType.MatchString(name) {
		return EventType{}, notFound("event type " + quote(name))
	}
	rows, err := s.pool.Query(r.Context(), query, append([]any{name}, args...)...)
	if err != nil {
		return EventType{}, fmt.Errorf("event type %s: %w", name, err)
	}
	t, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByPos[EventType])
	if errors.Is(err, pgx.ErrNoRows) {
		return EventType{}, notFound("event type " + quote(name))
	}
	if err != nil {
		return EventType{}, fmt.Errorf("event type %s: %w", name, err)
	}
	return t, nil
}
