package store

import (
	"errors"
	"math"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/heraldhq/herald/outbox"
)

// Limits on text fields, in characters.
const (
	maxTenantNameLength  = 256
	maxURLLength         = 2048
	maxDescriptionLength = 1024
	maxReasonLength      = 1024
	maxEventTypes        = 256
)

// tenantIDPattern is the CHECK constraint on herald.tenants.id.
var tenantIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_:-]{0,127}$`)

func validTenantID(id string) bool {
	return tenantIDPattern.MatchString(id)
}

func checkTenantID(field, id string) error {
	if id == "" {
		return invalid(field, "is empty; give the tenant's id, for example cus_123")
	}
	if !validTenantID(id) {
		return invalid(field, "is malformed; use 1 to 128 letters, digits, \"_\", \":\" and \"-\", starting with a letter or digit, for example cus_123")
	}
	return nil
}

// checkText refuses what Postgres cannot store in text (invalid UTF-8, NUL)
// and text longer than max characters.
func checkText(field, value string, max int) error {
	switch {
	case !utf8.ValidString(value):
		return invalid(field, "is not valid UTF-8")
	case strings.IndexByte(value, 0) >= 0:
		return invalid(field, "contains a NUL byte")
	case utf8.RuneCountInString(value) > max:
		return invalid(field, "is %d characters long; at most %d are allowed", utf8.RuneCountInString(value), max)
	}
	return nil
}

// checkURL applies the store's own rules, then the operator's policy.
func (s *Store) checkURL(raw string) error {
	if err := checkText("url", raw, maxURLLength); err != nil {
		return err
	}
	const example = "https://example.com/webhooks"
	if raw == "" {
		return invalid("url", "is empty; give the absolute URL webhooks are sent to, for example %s", example)
	}
	if strings.TrimSpace(raw) != raw {
		return invalid("url", "has white space around it; remove it")
	}
	u, err := url.Parse(raw)
	if err != nil {
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			err = urlErr.Err
		}
		return invalid("url", "is not a valid URL (%v); give an absolute URL such as %s", err, example)
	}
	switch strings.ToLower(u.Scheme) {
	case "https", "http":
	case "":
		return invalid("url", "has no scheme; start it with https:// (or http://)")
	default:
		return invalid("url", "has scheme %q; use https (or http)", u.Scheme)
	}
	if u.Hostname() == "" {
		return invalid("url", "has no host; write it like %s", example)
	}
	if s.urlPolicy != nil {
		if err := s.urlPolicy(raw); err != nil {
			return &ValidationError{Field: "url", Problem: err.Error(), Err: err}
		}
	}
	return nil
}

// normalizeEventTypes checks each type and drops repeats, keeping the
// caller's order. The result is never nil: an empty list means every type.
func normalizeEventTypes(types []string) ([]string, error) {
	if len(types) > maxEventTypes {
		return nil, invalid("event_types", "has %d entries; at most %d are allowed (an empty list subscribes to every type)", len(types), maxEventTypes)
	}
	out := make([]string, 0, len(types))
	seen := make(map[string]bool, len(types))
	for i, t := range types {
		if err := outbox.ValidateType(t); err != nil {
			return nil, invalid("event_types", "entry %d %v", i, err)
		}
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out, nil
}

func checkRateLimit(perSecond float64) error {
	if math.IsNaN(perSecond) || math.IsInf(perSecond, 0) || perSecond < 0 {
		return invalid("rate_limit", "is %v; give messages per second above 0, or 0 for no limit", perSecond)
	}
	return nil
}
