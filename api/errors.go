package api

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/heraldhq/herald/erasure"
	"github.com/heraldhq/herald/filter"
	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/outbox"
	"github.com/heraldhq/herald/receivercheck"
	"github.com/heraldhq/herald/replay"
	"github.com/heraldhq/herald/store"
)

// domainProblem maps the errors of the packages the API drives to problems.
// It returns nil for errors it does not know.
func (s *Server) domainProblem(err error) *Problem {
	var (
		verr    *store.ValidationError
		oerr    *outbox.ValidationError
		limit   *store.EndpointLimitError
		horizon *replay.BeforeHorizonError
		syntax  *filter.SyntaxError
	)
	switch {
	case errors.As(err, &verr) && errors.As(err, &syntax):
		return filterProblem(verr, syntax)
	case errors.As(err, &limit):
		return endpointLimitProblem(limit)
	case errors.As(err, &oerr):
		return publishProblem(oerr)
	case errors.As(err, &verr) && verr.Err != nil:
		// The URL policy's own error is already a whole sentence.
		return invalid(verr.Field, verr.Problem)
	case errors.As(err, &verr):
		return invalid(verr.Field, verr.Field+" "+verr.Problem)
	case errors.Is(err, store.ErrBeingErased):
		return conflict(err.Error() + "; its id is free again once the erasure completes (GET /v1/erasures/{erasureID}, the Location its DELETE answered with)")
	case errors.Is(err, erasure.ErrNotFound):
		return notFound("the tenant, endpoint or erasure")
	case errors.Is(err, store.ErrAlreadyExists):
		return conflict("it already exists: " + err.Error())
	case errors.Is(err, store.ErrNotFound):
		return notFound("the tenant or endpoint")
	case errors.Is(err, secretbox.ErrWrongKey), errors.Is(err, secretbox.ErrCorrupt):
		return problem(http.StatusInternalServerError, "secret-key-mismatch",
			"this endpoint's signing secret was encrypted under a different HERALD_SECRET_KEY than the server has now; the operator must restore the key it was written with, or the endpoint must be deleted and created again")
	case errors.Is(err, auth.ErrTenantNotFound):
		return notFound("the tenant")
	case errors.Is(err, replay.ErrEndpointDisabled):
		return conflict("the endpoint is disabled; enable it (POST …/endpoints/{endpointID}/enable) and try again")
	case errors.Is(err, receivercheck.ErrNotFound):
		return notFound("the endpoint")
	case errors.Is(err, replay.ErrNotFound):
		return notFound("the message or endpoint")
	case errors.Is(err, replay.ErrReplayNotFound):
		return notFound("the replay")
	case errors.As(err, &horizon):
		return beforeHorizonProblem(horizon)
	case errors.Is(err, replay.ErrInvalidRange):
		return invalid("until", "until must be later than since (until defaults to now)")
	}
	return nil
}

// beforeHorizonProblem refuses a replay that reaches past the tenant's
// retention and names the earliest time it may start from, rounded up to
// the second.
func beforeHorizonProblem(e *replay.BeforeHorizonError) *Problem {
	earliest := e.Earliest.UTC().Truncate(time.Second)
	if earliest.Before(e.Earliest) {
		earliest = earliest.Add(time.Second)
	}
	p := invalid("since", fmt.Sprintf("since %s is before the retention horizon: this tenant's history is kept %d seconds (%s), so the earliest replayable time is %s; give a since at or after it",
		e.Since.UTC().Format(time.RFC3339Nano), int64(e.Retention/time.Second), e.Retention, earliest.Format(time.RFC3339)))
	p.EarliestReplayableAt = &earliest
	return p
}
