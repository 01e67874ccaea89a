package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/heraldhq/herald/internal/page"
)

// Problem is an RFC 9457 problem detail, the body of every error response.
type Problem struct {
	// Type identifies the kind of problem, e.g. "urn:herald:problem:validation".
	Type string `json:"type"`
	// Title is a short summary of the kind of problem.
	Title string `json:"title"`
	// Status repeats the HTTP status code.
	Status int `json:"status"`
	// Detail is a sentence a person can act on.
	Detail string `json:"detail"`
	// Field names the request field or query parameter at fault, for
	// validation problems.
	Field string `json:"field,omitempty"`
	// Position is the character (counting from 1) where a filter that
	// does not parse goes wrong, for validation problems of the field
	// "filter".
	Position int `json:"position,omitempty"`
	// Limit names the limit that turned the request away, for 429s of
	// rate limits.
	Limit *ProblemLimit `json:"limit,omitempty"`
	// EarliestReplayableAt is the earliest time a replay may start from,
	// for a replay refused because its since is before the tenant's
	// retention horizon.
	EarliestReplayableAt *time.Time `json:"earliest_replayable_at,omitempty"`
	// Errors lists every bad event of a rejected batch publish.
	Errors []ItemProblem `json:"errors,omitempty"`
	// RequestID matches the X-Request-Id header and the server's logs.
	RequestID string `json:"request_id,omitempty"`
}

func (p *Problem) Error() string {
	if p.Field != "" {
		return fmt.Sprintf("%d %s: %s", p.Status, p.Field, p.Detail)
	}
	return fmt.Sprintf("%d %s", p.Status, p.Detail)
}

func problem(status int, kind, detail string) *Problem {
	return &Problem{Type: "urn:herald:problem:" + kind, Title: http.StatusText(status), Status: status, Detail: detail}
}

func badRequest(detail string) *Problem { return problem(http.StatusBadRequest, "bad-request", detail) }

func invalid(field, detail string) *Problem {
	p := problem(http.StatusUnprocessableEntity, "validation", detail)
	p.Field = field
	return p
}

func invalidParam(field, detail string) *Problem {
	p := problem(http.StatusBadRequest, "invalid-parameter", detail)
	p.Field = field
	return p
}

func notFound(what string) *Problem {
	return problem(http.StatusNotFound, "not-found", what+" was not found; check the id and that your key may see it")
}

func conflict(detail string) *Problem { return problem(http.StatusConflict, "conflict", detail) }

func forbidden(detail string) *Problem { return problem(http.StatusForbidden, "forbidden", detail) }

// writeProblem sends p as application/problem+json.
func writeProblem(w http.ResponseWriter, r *http.Request, p *Problem) {
	p.RequestID = requestIDFrom(r.Context())
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

// asProblem turns an error from a handler into the problem sent to the
// client. Errors it does not recognise are the server's fault: the client
// gets a 500 that names the request id, and the log gets the error.
func (s *Server) asProblem(r *http.Request, err error) *Problem {
	var p *Problem
	if errors.As(err, &p) {
		return p
	}
	var pe *page.ParamError
	if errors.As(err, &pe) {
		return invalidParam(pe.Param, pe.Message)
	}
	if errors.Is(err, page.ErrInvalidCursor) {
		return invalidParam("after", "after must be the next cursor of a previous page of this list, exactly as returned")
	}
	if p := s.domainProblem(err); p != nil {
		if p.Status >= 500 {
			s.logger.ErrorContext(r.Context(), "request failed", "request_id", requestIDFrom(r.Context()), "error", err)
		}
		return p
	}
	if r.Context().Err() != nil {
		// The client went away; what we answer no longer matters, but it is
		// not a server fault either.
		return problem(499, "cancelled", "the request was cancelled by the client")
	}
	s.logger.ErrorContext(r.Context(), "request failed", "request_id", requestIDFrom(r.Context()), "error", err)
	return problem(http.StatusInternalServerError, "internal", "the server failed to handle this request; retry later, and quote the request id if it keeps failing")
}
