package portal

import (
	"errors"
	"fmt"
	"math"
	"net/http"

	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/receivercheck"
)

// receiverCheckReload is how often a running check's page reloads itself,
// in seconds: a check's steps take a few seconds each.
const receiverCheckReload = 2

// startReceiverCheck starts a receiver check of the endpoint and shows its
// page.
func (p *Portal) startReceiverCheck(w http.ResponseWriter, r *http.Request, s *session) error {
	ctx := r.Context()
	e, err := p.loadEndpoint(ctx, r, s)
	if err != nil {
		return err
	}
	var c receivercheck.Check
	err = pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		c, err = receivercheck.Start(ctx, tx, p.jobs, s.TenantID, e.ID)
		return err
	})
	var tooSoon *receivercheck.TooSoonError
	switch {
	case errors.As(err, &tooSoon):
		return &pageError{status: http.StatusTooManyRequests, heading: "A check ran a moment ago",
			message: fmt.Sprintf("One receiver check a minute per endpoint: start the next one in %d seconds.", int(math.Ceil(tooSoon.RetryAfter.Seconds())))}
	case errors.Is(err, receivercheck.ErrEndpointDisabled):
		return errEndpointDisabled
	case err != nil:
		return err
	}
	http.Redirect(w, r, fmt.Sprintf("%s/endpoints/%s/receiver-checks/%s", Path, e.ID, c.ID), http.StatusSeeOther)
	return nil
}

// receiverCheckDetail shows a check's steps, the endpoint's answers and
// what to verify; it reloads itself while the check runs.
func (p *Portal) receiverCheckDetail(w http.ResponseWriter, r *http.Request, s *session) error {
	ctx := r.Context()
	e, err := p.loadEndpoint(ctx, r, s)
	if err != nil {
		return err
	}
	id, err := parseID(r, "checkID")
	if err != nil {
		return err
	}
	c, err := receivercheck.Get(ctx, p.pool, s.TenantID, e.ID, id)
	if errors.Is(err, receivercheck.ErrNotFound) {
		return errNotFound
	}
	if err != nil {
		return err
	}
	pg := s.page("Receiver check", "endpoints", struct {
		Check       receivercheck.Check
		Endpoint    endpointView
		OwnerChecks []string
	}{c, e, receivercheck.OwnerChecks})
	if c.Status != receivercheck.StatusCompleted {
		pg.Reload = receiverCheckReload
	}
	p.render(w, r, http.StatusOK, "receiver_check", pg)
	return nil
}
