package delivery

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/heraldhq/herald/internal/sanitize"
	"github.com/heraldhq/herald/schedule"
)

// Result is what one attempt observed: a response's status code and
// Retry-After header, or the error that stopped the request.
type Result struct {
	// StatusCode is the response's HTTP status, or 0 when no response
	// arrived (Err is then set).
	StatusCode int
	// RetryAfter is the response's Retry-After header value, "" when absent.
	RetryAfter string
	// Location is the response's Location header, reported for redirects.
	Location string
	// Err is why no response arrived ("timed out after 15s", a refused
	// connection, a TLS failure), worded for a person, or the *Fault on
	// Herald's side that stopped the attempt before anything was sent.
	// Nil when StatusCode is set.
	Err error
}

// answered reports whether an answer came: a status, or a fault on
// Herald's side, which sent nothing and so says nothing of the endpoint.
// An attempt that timed out or could not connect was not answered (see
// health.BreakerThreshold).
func (r Result) answered() bool {
	return r.StatusCode != 0 || r.fault() != nil
}

// Verdict is what an attempt's result means for its delivery.
type Verdict string

// The verdicts. Each but Deferred is also the attempts.outcome value
// recorded for the attempt that led to it.
const (
	// Succeeded: the endpoint answered 2xx; the delivery is done.
	Succeeded Verdict = "succeeded"
	// Retry: the attempt failed and another is scheduled at Outcome.RetryAt.
	Retry Verdict = "retry"
	// Exhausted: the attempt failed and the retry window is spent (or the
	// receiver's Retry-After reaches past it); the delivery has failed.
	Exhausted Verdict = "exhausted"
	// EndpointGone: the endpoint answered 410 Gone, which Standard Webhooks
	// defines as "stop sending": the endpoint is disabled, this delivery
	// fails and the endpoint's other pending deliveries are cancelled.
	EndpointGone Verdict = "endpoint_gone"
	// Deferred: a fault on Herald's side (a *Fault) stopped the attempt
	// before anything was sent. It is not the endpoint's attempt: nothing
	// is recorded, the endpoint's health and the delivery's attempt count
	// and retry window stay as they were, and the job tries again after a
	// deferral (FirstDeferral).
	Deferred Verdict = "deferred"
)

// Outcome is the decision taken after one attempt.
type Outcome struct {
	Verdict Verdict
	// RetryAt is when the next attempt runs; set only for Retry. (When a
	// Deferred attempt runs again depends on how many were deferred in a
	// row, which the job keeps; see FirstDeferral.)
	RetryAt time.Time
	// Problem says in a sentence what went wrong ("HTTP 503 Service
	// Unavailable", "timed out after 15s"); empty for Succeeded. It is
	// storable text of at most MaxErrorStored bytes (see package sanitize).
	Problem string
}

// DisabledReason is what an endpoint's disabled_reason says after it
// answered 410.
const DisabledReason = "410 Gone"

// Decide turns the result of attempt number attempt of the delivery's
// retry window (1 for its first attempt since it was created, resent or
// replayed) into an outcome. firstAttempt is when that first attempt
// started, now is when this one ended; the retry window is measured from
// firstAttempt.
//
//   - a *Fault (Herald could not read the secrets or sign, its resolver
//     did not answer, its clock is off): Deferred, whatever the attempt's
//     number and time.
//   - 2xx: Succeeded.
//   - 410: EndpointGone.
//   - 429, 502, 503, 504: Retry no earlier than the response's Retry-After
//     (clamped by policy.MaxRetryAfter) nor the schedule's own draw.
//   - any other status (3xx included: redirects are not followed), a
//     timeout or a network error: Retry on the schedule.
//   - Exhausted instead of Retry once the window is spent.
//
// Decide is pure apart from the policy's random source.
func Decide(res Result, attempt int, firstAttempt, now time.Time, policy schedule.Policy) Outcome {
	status := res.StatusCode
	switch {
	case res.fault() != nil:
		return Outcome{Verdict: Deferred, Problem: describe(res)}
	case res.succeeded():
		return Outcome{Verdict: Succeeded}
	case res.Err == nil && status == http.StatusGone:
		return Outcome{Verdict: EndpointGone, Problem: describe(res)}
	}

	// Attempt n failed, so the next attempt is retry n (see package schedule).
	var retryAfter time.Duration
	if res.Err == nil && throttles(status) {
		retryAfter, _ = schedule.ParseRetryAfter(res.RetryAfter, now)
	}
	at, ok := policy.NextAfter(attempt, firstAttempt, now, retryAfter)
	if !ok {
		return Outcome{Verdict: Exhausted, Problem: describe(res)}
	}
	return Outcome{Verdict: Retry, RetryAt: at, Problem: describe(res)}
}

// succeeded reports whether the endpoint answered 2xx: Decide's Succeeded,
// whatever the attempt's number and time.
func (res Result) succeeded() bool {
	return res.Err == nil && res.StatusCode >= 200 && res.StatusCode <= 299
}

// fault returns the *Fault that stopped the attempt, nil when there is
// none: Decide's Deferred.
func (res Result) fault() *Fault {
	var f *Fault
	if errors.As(res.Err, &f) {
		return f
	}
	return nil
}

// throttles reports whether status is one whose Retry-After Herald honours.
func throttles(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// describe words a failed result for attempts.error and deliveries.last_error,
// storable and at most MaxErrorStored bytes: an error's text quotes what the
// network sent (a certificate's names, a resolver's answer), which may hold
// bytes Postgres refuses (see package sanitize).
func describe(res Result) string {
	if res.Err != nil {
		return sanitize.Text(res.Err.Error(), MaxErrorStored)
	}
	text := fmt.Sprintf("HTTP %d %s", res.StatusCode, http.StatusText(res.StatusCode))
	if res.StatusCode >= 300 && res.StatusCode <= 399 {
		text += " (redirects are not followed; set the endpoint's URL to the final address"
		if res.Location != "" {
			text += ", " + res.Location
		}
		text += ")"
	}
	return sanitize.Text(text, MaxErrorStored)
}
