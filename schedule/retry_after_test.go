package schedule

import (
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()

	now := time.Date(2026, 10, 21, 7, 28, 0, 0, time.UTC)
	tests := []struct {
		name   string
		value  string
		want   time.Duration
		wantOK bool
	}{
		{"seconds", "120", 2 * time.Minute, true},
		{"zero seconds", "0", 0, true},
		{"seconds with whitespace", "  30 ", 30 * time.Second, true},
		{"leading zeros", "0007", 7 * time.Second, true},
		{"largest seconds that fit", "9223372036", 9223372036 * time.Second, true},
		{"huge seconds saturate", "9223372037", math.MaxInt64, true},
		{"seconds beyond int64 saturate", "99999999999999999999999999", math.MaxInt64, true},
		{"IMF-fixdate", "Wed, 21 Oct 2026 07:30:00 GMT", 2 * time.Minute, true},
		{"RFC 850 date", "Wednesday, 21-Oct-26 07:29:00 GMT", time.Minute, true},
		{"asctime date", "Wed Oct 21 07:28:45 2026", 45 * time.Second, true},
		{"date in the past", "Wed, 21 Oct 2026 07:00:00 GMT", 0, true},
		{"date equal to now", "Wed, 21 Oct 2026 07:28:00 GMT", 0, true},
		{"empty", "", 0, false},
		{"blank", "   ", 0, false},
		{"negative seconds", "-5", 0, false},
		{"plus sign", "+5", 0, false},
		{"fraction", "1.5", 0, false},
		{"unit suffix", "5s", 0, false},
		{"garbage", "soon, please", 0, false},
		{"date without zone", "Wed, 21 Oct 2026 07:30:00", 0, false},
		{"non-ASCII digits", "١٢", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := ParseRetryAfter(tt.value, now)
			require.Equal(t, tt.wantOK, ok, "ok for %q", tt.value)
			require.Equal(t, tt.want, got, "wait for %q", tt.value)
		})
	}
}

func TestParseRetryAfterFeedsNextAfter(t *testing.T) {
	t.Parallel()

	p := Policy{Base: time.Second, Cap: time.Second, Rand: seeded(3)}

	wait, ok := ParseRetryAfter("99999999999", t0)
	require.True(t, ok)
	at, ok := p.NextAfter(4, t0, t0, wait)
	require.True(t, ok)
	require.Equal(t, t0.Add(time.Hour), at, "a huge Retry-After is clamped to MaxRetryAfter (1 h by default)")

	wait, ok = ParseRetryAfter(t0.Add(90*time.Second).Format(http.TimeFormat), t0)
	require.True(t, ok)
	at, ok = p.NextAfter(4, t0, t0, wait)
	require.True(t, ok)
	require.Equal(t, t0.Add(90*time.Second), at)
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, seed := range []string{"120", "0", "-1", "1.5", "Wed, 21 Oct 2026 07:30:00 GMT", "Wed Oct 21 07:28:45 2026", "99999999999999999999", ""} {
		f.Add(seed)
	}
	now := time.Date(2026, 10, 21, 7, 28, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		wait, ok := ParseRetryAfter(v, now)
		if !ok && wait != 0 {
			t.Fatalf("ParseRetryAfter(%q) = %s, false; a rejected value must give 0", v, wait)
		}
		if wait < 0 {
			t.Fatalf("ParseRetryAfter(%q) = %s; a wait is never negative", v, wait)
		}
	})
}
