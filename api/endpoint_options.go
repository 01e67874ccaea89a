package api

import (
	"fmt"
	"slices"
	"time"

	"github.com/heraldhq/herald/filter"
	"github.com/heraldhq/herald/store"
)

// filterProblem is the 422 of a filter that does not parse: the store's
// sentence, and the character where the filter goes wrong as position, so
// that a form can point at it.
func filterProblem(verr *store.ValidationError, syntax *filter.SyntaxError) *Problem {
	p := invalid(verr.Field, verr.Field+" "+verr.Problem)
	p.Position = syntax.Position
	return p
}

// sortedChannels is channels as herald.messages stores them: distinct, in
// order; empty, not nil, for none.
func sortedChannels(channels []string) []string {
	out := slices.Clone(channels)
	slices.Sort(out)
	return append([]string{}, slices.Compact(out)...)
}

// EndpointHeader is a custom header of an endpoint as the API takes and
// shows it: a secret one's value is shown as store.MaskedHeaderValue.
type EndpointHeader struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	// Secret stores the value encrypted and never shows it again. In an
	// update, a secret header without a value keeps the value it had.
	Secret bool `json:"secret"`
}

// RetryPolicy is an endpoint's own retry policy as the API takes and shows
// it, in whole seconds; an absent or zero field means the dispatcher's.
type RetryPolicy struct {
	WindowSeconds int64 `json:"window_seconds,omitempty"`
	BaseSeconds   int64 `json:"base_seconds,omitempty"`
	CapSeconds    int64 `json:"cap_seconds,omitempty"`
}

func headersView(headers []store.EndpointHeader) []EndpointHeader {
	out := make([]EndpointHeader, len(headers))
	for i, h := range headers {
		out[i] = EndpointHeader{Name: h.Name, Value: h.Value, Secret: h.Secret}
	}
	return out
}

func storeHeaders(headers []EndpointHeader) []store.EndpointHeader {
	out := make([]store.EndpointHeader, len(headers))
	for i, h := range headers {
		out[i] = store.EndpointHeader{Name: h.Name, Value: h.Value, Secret: h.Secret}
	}
	return out
}

// timeoutView is an endpoint's timeout in seconds; nil for the
// dispatcher's.
func timeoutView(d time.Duration) *int64 {
	if d <= 0 {
		return nil
	}
	s := int64(d / time.Second)
	return &s
}

// retryPolicyView is an endpoint's retry policy; nil when it has none of
// its own.
func retryPolicyView(p store.RetryPolicy) *RetryPolicy {
	if p == (store.RetryPolicy{}) {
		return nil
	}
	return &RetryPolicy{WindowSeconds: int64(p.Window / time.Second), BaseSeconds: int64(p.Base / time.Second), CapSeconds: int64(p.Cap / time.Second)}
}

// maxPolicySeconds bounds the seconds the API converts to durations, far
// above any bound the store accepts, so that the conversion cannot
// overflow and the store's refusal names the real bound.
const maxPolicySeconds = 100 * 365 * 24 * 3600

// policySeconds converts a field of seconds, refusing negative and absurd ones.
func policySeconds(field string, n int64) (time.Duration, error) {
	if n < 0 || n > maxPolicySeconds {
		return 0, invalid(field, fmt.Sprintf("%s is %d; give a positive number of seconds, or 0 (or leave it out) for the dispatcher's default", field, n))
	}
	return time.Duration(n) * time.Second, nil
}

func storeRetryPolicy(p RetryPolicy) (store.RetryPolicy, error) {
	var (
		out store.RetryPolicy
		err error
	)
	if out.Window, err = policySeconds("retry_policy", p.WindowSeconds); err != nil {
		return out, err
	}
	if out.Base, err = policySeconds("retry_policy", p.BaseSeconds); err != nil {
		return out, err
	}
	out.Cap, err = policySeconds("retry_policy", p.CapSeconds)
	return out, err
}
