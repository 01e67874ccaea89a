package portal

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/heraldhq/herald/limits"
	"github.com/heraldhq/herald/store"
)

// limited runs h only when the session and its tenant are within their
// limits for action a (limits.Limiter.Take, the limiter the API uses);
// otherwise it answers 429 with Retry-After and a page saying how long to
// wait.
func (p *Portal) limited(a limits.Action, h func(w http.ResponseWriter, r *http.Request, s *session) error) func(w http.ResponseWriter, r *http.Request, s *session) error {
	return func(w http.ResponseWriter, r *http.Request, s *session) error {
		refusal, err := p.limits.Take(r.Context(), s.TenantID, s.id, a)
		if err != nil {
			return err
		}
		if refusal == nil {
			return h(w, r, s)
		}
		seconds := refusal.RetryAfter()
		w.Header().Set("Retry-After", strconv.Itoa(seconds))
		whose := "Your account may make " + refusal.Action.Requests() + " at " + refusal.Rate.String() + ", and has used them up."
		if refusal.Scope == limits.ScopeCredential {
			whose = "This browser session may make " + refusal.Action.Requests() + " at " + refusal.Rate.String() + ", its share of your account's limit, and has used them up."
		}
		return &pageError{status: http.StatusTooManyRequests, heading: "Too many " + refusal.Action.Requests(),
			message: fmt.Sprintf("%s Wait %d seconds, then try again.", whose, seconds)}
	}
}

// atCap turns the store's refusal of an endpoint beyond its tenant's cap
// into the form's message.
func atCap(err error, data *endpointFormPage) bool {
	var limit *store.EndpointLimitError
	if !errors.As(err, &limit) {
		return false
	}
	data.Error = fmt.Sprintf("Your account has reached its limit of %d endpoints, so this one was not added. Delete an endpoint you no longer use, or ask the team that runs this service to raise the limit.", limit.Max)
	return true
}
