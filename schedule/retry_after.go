package schedule

import (
	"math"
	"net/http"
	"strings"
	"time"
)

// ParseRetryAfter reads the value of a Retry-After response header (RFC 9110
// §10.2.3) and returns how long after now the receiver asked us to wait.
// Both forms are accepted:
//
//   - delay-seconds, a non-negative decimal integer ("120"); a value too
//     large for a time.Duration saturates at the largest Duration, so it is
//     still honoured up to [Policy.MaxRetryAfter];
//   - an HTTP-date ("Wed, 21 Oct 2026 07:28:00 GMT", also the obsolete
//     RFC 850 and asctime forms); a date at or before now gives 0.
//
// ok is false for an empty, negative, fractional or otherwise malformed
// value, with a wait of 0; the caller then retries on the schedule alone
// (a 0 passed to [Policy.NextAfter] means no Retry-After). Surrounding
// whitespace is ignored. ParseRetryAfter never panics.
func ParseRetryAfter(v string, now time.Time) (wait time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if isDigits(v) {
		return parseSeconds(v), true
	}
	date, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	if !date.After(now) {
		return 0, true
	}
	return date.Sub(now), true
}

// parseSeconds converts a string of decimal digits to seconds, saturating at
// the largest Duration instead of overflowing.
func parseSeconds(digits string) time.Duration {
	const maxSeconds = math.MaxInt64 / int64(time.Second)
	var seconds int64
	for _, c := range digits {
		seconds = seconds*10 + int64(c-'0')
		if seconds > maxSeconds {
			return math.MaxInt64
		}
	}
	return time.Duration(seconds) * time.Second
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
