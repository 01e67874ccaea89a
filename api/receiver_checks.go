package api

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/receivercheck"
)

// receiverCheckResponse is a check with the checks its endpoint's owner
// runs on their side.
type receiverCheckResponse struct {
	receivercheck.Check
	OwnerChecks []string `json:"owner_checks"`
}

// createReceiverCheck is POST …/endpoints/{endpointID}/receiver-checks: it
// answers 202 with the check; a dispatcher sends its steps, and GET on the
// check follows them. A check within receivercheck.MinInterval of the
// endpoint's last one is 429 with Retry-After.
func (s *Server) createReceiverCheck(w http.ResponseWriter, r *http.Request) error {
	endpointID, err := s.endpointID(r)
	if err != nil {
		return err
	}
	var c receivercheck.Check
	err = pgx.BeginFunc(r.Context(), s.pool, func(tx pgx.Tx) error {
		c, err = receivercheck.Start(r.Context(), tx, s.jobs, chi.URLParam(r, "tenantID"), endpointID)
		return err
	})
	var tooSoon *receivercheck.TooSoonError
	if errors.As(err, &tooSoon) {
		seconds := int(math.Ceil(tooSoon.RetryAfter.Seconds()))
		w.Header().Set("Retry-After", strconv.Itoa(seconds))
		return problem(http.StatusTooManyRequests, "too-many-receiver-checks", fmt.Sprintf(
			"this endpoint's last receiver check started less than %s ago; start the next one in %d s (Retry-After), or read the last one", receivercheck.MinInterval, seconds))
	}
	if err != nil {
		return err
	}
	w.Header().Set("Location", r.URL.Path+"/"+c.ID.String())
	return writeJSON(w, http.StatusAccepted, receiverCheckResponse{c, receivercheck.OwnerChecks})
}

func (s *Server) getReceiverCheck(w http.ResponseWriter, r *http.Request) error {
	endpointID, err := s.endpointID(r)
	if err != nil {
		return err
	}
	id, err := uuidParam(r, "checkID", "receiver check")
	if err != nil {
		return err
	}
	c, err := receivercheck.Get(r.Context(), s.pool, chi.URLParam(r, "tenantID"), endpointID, id)
	if errors.Is(err, receivercheck.ErrNotFound) {
		return notFound("receiver check " + id.String())
	}
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, receiverCheckResponse{c, receivercheck.OwnerChecks})
}
