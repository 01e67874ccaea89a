package limits

import (
	"fmt"
	"math"
)

// Action is a request whose rate is limited per tenant and per credential.
type Action string

// The rate-limited actions. Their values name them in the API (a tenant's
// limits), in herald.tenants.rate_limits and in herald.tenant_rate_limits.
const (
	// Publish is POST /v1/tenants/{id}/messages.
	Publish Action = "publish"
	// Resend is a resend of one delivery, from the API or the portal.
	Resend Action = "resend"
	// Replay is the start of a replay, from the API or the portal.
	Replay Action = "replay"
	// TestEvent is a test event sent to one endpoint, from the API or the
	// portal.
	TestEvent Action = "test_event"
)

// Actions returns every rate-limited action, in the order the API lists
// them.
func Actions() []Action { return []Action{Publish, Resend, Replay, TestEvent} }

// ParseAction returns the action named s.
func ParseAction(s string) (Action, error) {
	for _, a := range Actions() {
		if string(a) == s {
			return a, nil
		}
	}
	return "", fmt.Errorf("%q is not a rate-limited action; use one of publish, resend, replay, test_event", s)
}

// Requests names the action's requests in a sentence: "publishes", "test
// events".
func (a Action) Requests() string {
	switch a {
	case Publish:
		return "publishes"
	case Resend:
		return "resends"
	case Replay:
		return "replays"
	case TestEvent:
		return "test events"
	}
	return string(a)
}

// Rate is a rate limit: Burst requests at once, refilled at PerSecond.
type Rate struct {
	// PerSecond is the pace the burst refills at, in requests per second.
	PerSecond float64 `json:"per_second"`
	// Burst is how many requests may be made at once after a pause.
	Burst int `json:"burst"`
}

// Bounds of a Rate set for a tenant (and of the defaults).
const (
	// MinPerSecond is the slowest rate: one request in about 11.6 days.
	MinPerSecond = 1e-6
	// MaxPerSecond is the fastest rate that can be set.
	MaxPerSecond = 1e6
	// MaxBurst is the largest burst that can be set.
	MaxBurst = 1_000_000
)

// Check reports what is wrong with r as a limit, in a phrase that follows
// the name of the field holding it.
func (r Rate) Check() error {
	if math.IsNaN(r.PerSecond) || r.PerSecond < MinPerSecond || r.PerSecond > MaxPerSecond {
		return fmt.Errorf("per_second is %v; give requests per second between %g and %g", r.PerSecond, MinPerSecond, float64(MaxPerSecond))
	}
	if r.Burst < 1 || r.Burst > MaxBurst {
		return fmt.Errorf("burst is %d; give a whole number of requests between 1 and %d", r.Burst, MaxBurst)
	}
	return nil
}

// String describes the rate for people: "100 a second, in bursts of up to
// 200".
func (r Rate) String() string {
	pace := fmt.Sprintf("%g a second", r.PerSecond)
	if r.PerSecond < 1 {
		pace = fmt.Sprintf("one every %g s", math.Round(1/r.PerSecond*1000)/1000)
	}
	return fmt.Sprintf("%s, in bursts of up to %d", pace, r.Burst)
}
