package api

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/limits"
)

// ProblemLimit names the limit that turned a request away with 429 Too Many
// Requests.
type ProblemLimit struct {
	// Action is what was limited: publish, resend, replay or test_event.
	Action limits.Action `json:"action"`
	// Scope is whose limit it is: "tenant" (shared by every api replica),
	// "api_key" or "portal_session" (the credential's share of its
	// tenant's limit, per api process).
	Scope string `json:"scope"`
	// PerSecond and Burst are the limit: Burst requests at once, refilled
	// at PerSecond.
	PerSecond float64 `json:"per_second"`
	Burst     int     `json:"burst"`
}

// rateLimited guards a route whose action is rate limited per tenant and
// per credential (limits.Limiter.Take); a request over either limit gets
// 429 with Retry-After before its body is read.
func (s *Server) rateLimited(a limits.Action) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p, tenantID := principal(r), chi.URLParam(r, "tenantID")
			refusal, err := s.limits.Take(r.Context(), tenantID, p.ID, a)
			if err != nil {
				writeProblem(w, r, s.asProblem(r, err))
				return
			}
			if refusal != nil {
				writeProblem(w, r, rateLimitProblem(w, p, tenantID, refusal))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// rateLimitProblem sets Retry-After and words refusal for p.
func rateLimitProblem(w http.ResponseWriter, p auth.Principal, tenantID string, refusal *limits.Refusal) *Problem {
	seconds := refusal.RetryAfter()
	w.Header().Set("Retry-After", strconv.Itoa(seconds))
	limit := &ProblemLimit{Action: refusal.Action, Scope: string(refusal.Scope), PerSecond: refusal.Rate.PerSecond, Burst: refusal.Rate.Burst}
	raise := fmt.Sprintf("ask your operator to raise the tenant's limits.%s", refusal.Action)
	if p.Operator() {
		raise = fmt.Sprintf(`raise the tenant's limit with PATCH /v1/tenants/%s {"limits": {%q: {"per_second": …, "burst": …}}}`, tenantID, refusal.Action)
	}
	var detail string
	if refusal.Scope == limits.ScopeTenant {
		detail = fmt.Sprintf("tenant %q has used up its limit on %s (%s, shared by every api replica); wait %d s (Retry-After) before the next, or %s",
			tenantID, refusal.Action.Requests(), refusal.Rate, seconds, raise)
	} else {
		who := "API key"
		limit.Scope = string(auth.KindAPIKey)
		if p.Kind == auth.KindPortalSession {
			who, limit.Scope = "portal session", string(auth.KindPortalSession)
		}
		detail = fmt.Sprintf("this %s has used up its own limit on %s for tenant %q (%s: its share of the tenant's limit, so that one credential cannot spend it all); wait %d s (Retry-After) before the next, or %s, which raises every credential's share",
			who, refusal.Action.Requests(), tenantID, refusal.Rate, seconds, raise)
	}
	pr := problem(http.StatusTooManyRequests, "rate-limited", detail)
	pr.Limit = limit
	return pr
}
