package store

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/filter"
	"github.com/heraldhq/herald/outbox"
	"github.com/heraldhq/herald/schedule"
)

// MaxEndpointChannels is the most channels an endpoint subscribes to: 100,
// as migrations/0034_channels_and_filters.sql documents.
const MaxEndpointChannels = 100

// checkFilter refuses a filter that package filter does not parse, naming
// the character where it went wrong: a *ValidationError for the field
// "filter" whose Err is the *filter.SyntaxError, so that callers can show
// the position. The empty filter is no filter.
func checkFilter(src string) error {
	if src == "" {
		return nil
	}
	if err := checkText("filter", src, filter.MaxLength); err != nil {
		return err
	}
	if _, err := filter.Parse(src); err != nil {
		var syntax *filter.SyntaxError
		if errors.As(err, &syntax) {
			return &ValidationError{Field: "filter", Problem: "does not parse " + syntax.Error() + "; see the filter language in the README", Err: syntax}
		}
		return &ValidationError{Field: "filter", Problem: err.Error(), Err: err}
	}
	return nil
}

// normalizeChannels checks each channel name (outbox.ValidateChannel) and
// drops repeats, keeping the caller's order. The result is never nil: an
// empty list means every message, with or without channels.
func normalizeChannels(channels []string) ([]string, error) {
	if len(channels) > MaxEndpointChannels {
		return nil, invalid("channels", "has %d entries; an endpoint subscribes to at most %d (an empty list receives every message)", len(channels), MaxEndpointChannels)
	}
	out := make([]string, 0, len(channels))
	seen := make(map[string]bool, len(channels))
	for i, c := range channels {
		if err := outbox.ValidateChannel(c); err != nil {
			return nil, invalid("channels", "entry %d: %v", i, err)
		}
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out, nil
}

// RetryPolicy is an endpoint's own retry policy (see schedule.Policy); a
// zero field means the dispatcher's.
type RetryPolicy struct {
	// Window is how long after the first attempt retries continue.
	Window time.Duration
	// Base is the upper bound of the first retry's delay.
	Base time.Duration
	// Cap is the largest upper bound of any retry's delay.
	Cap time.Duration
}

// checkPolicy refuses a timeout or retry policy outside the operator's
// bounds (Config.PolicyBounds). Durations are kept to the millisecond.
func (s *Store) checkPolicy(timeout time.Duration, p RetryPolicy) error {
	b := s.bounds
	if timeout != 0 && (timeout < schedule.MinEndpointTimeout || timeout > b.MaxTimeout) {
		return invalid("timeout_seconds", "is %s; give %s to %s, or leave it out for the dispatcher's default", timeout, schedule.MinEndpointTimeout, b.MaxTimeout)
	}
	switch {
	case p.Window < 0 || p.Base < 0 || p.Cap < 0:
		return invalid("retry_policy", "has a negative duration; give positive seconds, or leave a field out for the dispatcher's default")
	case p.Window != 0 && (p.Window < time.Second || p.Window > b.MaxWindow):
		return invalid("retry_policy", "window is %s; give 1 s to %s (the operator's bound)", p.Window, b.MaxWindow)
	case p.Base != 0 && (p.Base < b.MinBase || p.Base > b.MaxCap):
		return invalid("retry_policy", "base is %s; give %s to %s (the operator's bounds)", p.Base, b.MinBase, b.MaxCap)
	case p.Cap != 0 && (p.Cap < b.MinBase || p.Cap > b.MaxCap):
		return invalid("retry_policy", "cap is %s; give %s to %s (the operator's bounds)", p.Cap, b.MinBase, b.MaxCap)
	case p.Base != 0 && p.Cap != 0 && p.Cap < p.Base:
		return invalid("retry_policy", "cap (%s) is below base (%s); the cap bounds every delay, so give a cap of at least the base", p.Cap, p.Base)
	}
	return nil
}

// storedOptions are the timeout and retry columns of an endpoint
// (migrations/0039_endpoint_headers_and_policy.sql): milliseconds, NULL
// for the dispatcher's default.
type storedOptions struct {
	timeoutMS               *int32
	windowMS, baseMS, capMS *int64
}

func newStoredOptions(timeout time.Duration, p RetryPolicy) storedOptions {
	var o storedOptions
	if timeout > 0 {
		ms := int32(timeout.Milliseconds())
		o.timeoutMS = &ms
	}
	o.windowMS, o.baseMS, o.capMS = millis(p.Window), millis(p.Base), millis(p.Cap)
	return o
}

func millis(d time.Duration) *int64 {
	if d <= 0 {
		return nil
	}
	ms := d.Milliseconds()
	return &ms
}

func fromMillis(ms *int64) time.Duration {
	if ms == nil {
		return 0
	}
	return time.Duration(*ms) * time.Millisecond
}

func (o storedOptions) policy() (time.Duration, RetryPolicy) {
	var timeout time.Duration
	if o.timeoutMS != nil {
		timeout = time.Duration(*o.timeoutMS) * time.Millisecond
	}
	return timeout, RetryPolicy{Window: fromMillis(o.windowMS), Base: fromMillis(o.baseMS), Cap: fromMillis(o.capMS)}
}

// updatedOptions checks u's timeout and retry policy against the bounds
// and returns their columns (zero for those u leaves alone).
func (s *Store) updatedOptions(u EndpointUpdate) (storedOptions, error) {
	var (
		timeout time.Duration
		p       RetryPolicy
	)
	if u.Timeout != nil {
		timeout = *u.Timeout
	}
	if u.RetryPolicy != nil {
		p = *u.RetryPolicy
	}
	if err := s.checkPolicy(timeout, p); err != nil {
		return storedOptions{}, err
	}
	return newStoredOptions(timeout, p), nil
}

// updatedHeaders checks an update's headers and returns the new headers
// column of endpointID: a secret header without a value keeps the value
// stored under its name.
func (s *Store) updatedHeaders(ctx context.Context, db dbtx, endpointID uuid.UUID, headers []EndpointHeader) ([]byte, error) {
	var kept map[string][]byte
	for _, h := range headers {
		if h.Secret && h.Value == "" {
			var err error
			if kept, err = s.keptSecrets(ctx, db, endpointID); err != nil {
				return nil, err
			}
			break
		}
	}
	keep := func(name string) bool { return kept[strings.ToLower(name)] != nil }
	if err := checkHeaders(headers, keep); err != nil {
		return nil, err
	}
	return s.sealHeaders(endpointID, headers, kept)
}
