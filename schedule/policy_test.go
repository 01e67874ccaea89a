package schedule

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 10, 23, 12, 0, 0, 0, time.UTC)

func seeded(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0))
}

func TestDefault(t *testing.T) {
	t.Parallel()

	p := Default()
	require.Equal(t, 5*time.Second, p.Base)
	require.Equal(t, 10*time.Hour, p.Cap)
	require.Equal(t, 72*time.Hour, p.Window)
	require.Equal(t, time.Hour, p.MaxRetryAfter)
	require.Nil(t, p.Rand, "the default must use the concurrency-safe global source")
}

func TestPolicyCeiling(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		policy  Policy
		attempt int
		want    time.Duration
	}{
		{"first retry waits up to base", Policy{Base: time.Second, Cap: time.Hour}, 1, time.Second},
		{"second retry doubles", Policy{Base: time.Second, Cap: time.Hour}, 2, 2 * time.Second},
		{"tenth retry", Policy{Base: time.Second, Cap: time.Hour}, 10, 512 * time.Second},
		{"capped", Policy{Base: time.Second, Cap: time.Hour}, 13, time.Hour},
		{"zero attempt is the first retry", Policy{Base: time.Second, Cap: time.Hour}, 0, time.Second},
		{"negative attempt is the first retry", Policy{Base: time.Second, Cap: time.Hour}, -7, time.Second},
		{"shift of 63 does not overflow", Policy{Base: time.Nanosecond, Cap: math.MaxInt64}, 64, math.MaxInt64},
		{"largest exact power", Policy{Base: time.Nanosecond, Cap: math.MaxInt64}, 63, 1 << 62},
		{"huge attempt does not overflow", Policy{Base: time.Second, Cap: time.Hour}, math.MaxInt, time.Hour},
		{"cap below base bounds every retry", Policy{Base: time.Hour, Cap: time.Minute}, 1, time.Minute},
		{"zero policy uses defaults", Policy{}, 1, 5 * time.Second},
		{"zero policy caps at 10 h", Policy{}, 100, 10 * time.Hour},
		{"negative durations use defaults", Policy{Base: -time.Second, Cap: -time.Hour}, 3, 20 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, tt.policy.Ceiling(tt.attempt))
		})
	}
}

func TestPolicyNextDrawsBelowCeiling(t *testing.T) {
	t.Parallel()

	p := Policy{Base: time.Second, Cap: time.Minute, Rand: seeded(1)}
	for attempt := -2; attempt < 40; attempt++ {
		for range 50 {
			at, ok := p.Next(attempt, t0, t0)
			require.True(t, ok)
			delay := at.Sub(t0)
			require.GreaterOrEqual(t, delay, time.Duration(0), "attempt %d", attempt)
			require.Less(t, delay, p.Ceiling(attempt), "attempt %d", attempt)
		}
	}
}

// TestPolicyNeverPastWindow retries deliveries until they are exhausted under
// many seeds and policies, with workers that run late and receivers that send
// Retry-After, and checks that no retry is ever scheduled after the window.
func TestPolicyNeverPastWindow(t *testing.T) {
	t.Parallel()

	for seed := range uint64(300) {
		r := seeded(seed)
		p := Policy{
			Base:          time.Duration(1 + r.Int64N(int64(time.Minute))),
			Cap:           time.Duration(1 + r.Int64N(int64(2*time.Hour))),
			Window:        time.Duration(1 + r.Int64N(int64(6*time.Hour))),
			MaxRetryAfter: time.Duration(r.Int64N(int64(3*time.Hour))) - time.Hour,
			Rand:          seeded(seed + 1_000_000),
		}
		end := t0.Add(p.Window)
		now := t0
		for attempt := 1; ; attempt++ {
			require.Less(t, attempt, 10_000, "seed %d: schedule did not end", seed)

			var retryAfter time.Duration
			if r.IntN(4) == 0 {
				retryAfter = time.Duration(r.Int64N(int64(2 * time.Hour)))
			}
			at, ok := p.NextAfter(attempt, t0, now, retryAfter)
			if !ok {
				require.True(t, at.IsZero(), "seed %d: exhausted must return the zero time", seed)
				break
			}
			require.False(t, at.After(end), "seed %d attempt %d: %s is past the window end %s", seed, attempt, at, end)
			require.False(t, at.Before(now), "seed %d attempt %d: scheduled in the past", seed, attempt)

			// The worker picks the retry up on time or somewhat late.
			now = at.Add(time.Duration(r.Int64N(int64(time.Minute))))
		}
		require.False(t, now.Before(t0), "seed %d", seed)
	}
}

func TestPolicyWindowEnd(t *testing.T) {
	t.Parallel()

	p := Policy{Base: time.Hour, Cap: time.Hour, Window: 24 * time.Hour}
	end := t0.Add(24 * time.Hour)

	t.Run("exhausted at the end", func(t *testing.T) {
		t.Parallel()
		_, ok := p.Next(5, t0, end)
		require.False(t, ok)
	})
	t.Run("exhausted after the end", func(t *testing.T) {
		t.Parallel()
		_, ok := p.Next(5, t0, end.Add(time.Second))
		require.False(t, ok)
	})
	t.Run("draw past the end is moved to the end", func(t *testing.T) {
		t.Parallel()
		now := end.Add(-time.Nanosecond)
		for range 100 {
			at, ok := p.Next(5, t0, now)
			require.True(t, ok)
			require.True(t, at.Equal(now) || at.Equal(end), "got %s", at)
		}
	})
	t.Run("clock before first attempt", func(t *testing.T) {
		t.Parallel()
		now := t0.Add(-time.Hour)
		at, ok := p.Next(1, t0, now)
		require.True(t, ok)
		require.False(t, at.Before(now))
	})
	t.Run("zero window uses the 3-day default", func(t *testing.T) {
		t.Parallel()
		_, ok := Policy{}.Next(1, t0, t0.Add(72*time.Hour-time.Second))
		require.True(t, ok)
		_, ok = Policy{Window: -time.Hour}.Next(1, t0, t0.Add(72*time.Hour))
		require.False(t, ok)
	})
}

func TestPolicySameSeedSameSchedule(t *testing.T) {
	t.Parallel()

	run := func(seed uint64) []time.Time {
		p := Policy{Rand: seeded(seed)}
		var times []time.Time
		now := t0
		for attempt := 1; ; attempt++ {
			at, ok := p.Next(attempt, t0, now)
			if !ok {
				return times
			}
			times = append(times, at)
			now = at
		}
	}

	first, again, other := run(20261023), run(20261023), run(20261024)
	require.NotEmpty(t, first)
	require.Equal(t, first, again, "the same seed must give the same schedule")
	require.NotEqual(t, first, other, "a different seed should give a different schedule")
}

func TestPolicyNextAfter(t *testing.T) {
	t.Parallel()

	// Base and Cap of 1 s keep the draw below one second, so a Retry-After
	// of whole seconds always decides when it is larger than that.
	policy := func(maxRetryAfter time.Duration) Policy {
		return Policy{Base: time.Second, Cap: time.Second, Window: 24 * time.Hour, MaxRetryAfter: maxRetryAfter, Rand: seeded(7)}
	}

	tests := []struct {
		name          string
		maxRetryAfter time.Duration
		retryAfter    time.Duration
		now           time.Time
		want          time.Duration // from now; -1 means the draw decides
		exhausted     bool
	}{
		{"no Retry-After", 0, 0, t0, -1, false},
		{"negative Retry-After is ignored", 0, -time.Minute, t0, -1, false},
		{"later Retry-After wins", 0, 2 * time.Minute, t0, 2 * time.Minute, false},
		{"huge Retry-After clamped to 1 h default", 0, math.MaxInt64, t0, time.Hour, false},
		{"Retry-After clamped to a configured maximum", 10 * time.Minute, 3 * time.Hour, t0, 10 * time.Minute, false},
		{"negative maximum ignores Retry-After", -1, 30 * time.Minute, t0, -1, false},
		{"Retry-After past the window end exhausts", 0, 40 * time.Minute, t0.Add(23*time.Hour + 30*time.Minute), 0, true},
		{"Retry-After exactly at the window end", 0, 30 * time.Minute, t0.Add(23*time.Hour + 30*time.Minute), 30 * time.Minute, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			at, ok := policy(tt.maxRetryAfter).NextAfter(3, t0, tt.now, tt.retryAfter)
			if tt.exhausted {
				require.False(t, ok)
				return
			}
			require.True(t, ok)

			drawn, _ := policy(tt.maxRetryAfter).Next(3, t0, tt.now)
			if tt.want < 0 {
				require.Equal(t, drawn, at, "the schedule's own draw should decide")
				return
			}
			require.Equal(t, tt.now.Add(tt.want), at)
			require.False(t, at.Before(drawn), "never earlier than the schedule's draw")
		})
	}
}

func TestPolicyRetryAfterNeverEarlierThanDraw(t *testing.T) {
	t.Parallel()

	for seed := range uint64(200) {
		withHeader := Policy{Base: time.Minute, Cap: time.Hour, Rand: seeded(seed)}
		without := Policy{Base: time.Minute, Cap: time.Hour, Rand: seeded(seed)}
		retryAfter := time.Duration(seed) * time.Second
		for attempt := 1; attempt < 12; attempt++ {
			at, ok := withHeader.NextAfter(attempt, t0, t0, retryAfter)
			require.True(t, ok)
			drawn, _ := without.Next(attempt, t0, t0)
			require.False(t, at.Before(drawn), "seed %d attempt %d", seed, attempt)
			require.False(t, at.Before(t0.Add(retryAfter)), "seed %d attempt %d", seed, attempt)
		}
	}
}

func TestPolicyGlobalSourceIsConcurrencySafe(t *testing.T) {
	t.Parallel()

	p := Default()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for attempt := 1; attempt < 200; attempt++ {
				if _, ok := p.Next(attempt, t0, t0); !ok {
					t.Error("fresh delivery reported exhausted")
				}
			}
		})
	}
	wg.Wait()
}

// outage is the article's experiment: deliveries that all fail at t=0 against
// a receiver that is back at t=300 s, each retrying on s until an attempt
// lands after recovery. Attempts take no time.
type outage struct {
	peakAfterRecovery int           // most attempts in one second at or after recovery
	attempts          int           // all attempts, first ones included
	lastDelivered     time.Duration // when the last delivery succeeded
}

func simulateOutage(t *testing.T, s Schedule, deliveries int, recovery time.Duration) outage {
	t.Helper()

	perSecond := map[time.Duration]int{}
	var result outage
	for range deliveries {
		now := t0
		for attempt := 0; ; attempt++ {
			result.attempts++
			elapsed := now.Sub(t0)
			perSecond[elapsed.Truncate(time.Second)]++
			if elapsed >= recovery {
				result.lastDelivered = max(result.lastDelivered, elapsed)
				break
			}
			at, ok := s.Next(attempt+1, t0, now)
			require.True(t, ok, "delivery exhausted before the receiver recovered")
			now = at
		}
	}
	for second, n := range perSecond {
		if second >= recovery {
			result.peakAfterRecovery = max(result.peakAfterRecovery, n)
		}
	}
	return result
}

// exponentialNoJitter is the comparison schedule: retry n waits exactly
// min(cap, base·2^(n−1)).
func exponentialNoJitter(base, limit time.Duration, retries int) Fixed {
	delays := make(Fixed, retries)
	for i := range delays {
		delays[i] = min(limit, base<<i)
	}
	return delays
}

func TestFullJitterSpreadsRecovery(t *testing.T) {
	t.Parallel()

	const (
		deliveries = 1000
		recovery   = 300 * time.Second
		maxPeak    = deliveries * 2 / 100
	)

	t.Run("no jitter", func(t *testing.T) {
		t.Parallel()
		got := simulateOutage(t, exponentialNoJitter(time.Second, 3600*time.Second, 20), deliveries, recovery)
		t.Logf("no jitter: attempts %d, peak per second after recovery %d, last delivered at t=%s",
			got.attempts, got.peakAfterRecovery, got.lastDelivered)
		require.Equal(t, deliveries, got.peakAfterRecovery, "without jitter every delivery should land in the same second")
		require.Equal(t, 511*time.Second, got.lastDelivered)
		require.Equal(t, 10*deliveries, got.attempts)
	})

	for _, seed := range []uint64{20261023, 1, 2, 3, 4} {
		t.Run(fmt.Sprintf("full jitter seed %d", seed), func(t *testing.T) {
			t.Parallel()
			p := Policy{Base: time.Second, Cap: 3600 * time.Second, Rand: seeded(seed)}
			got := simulateOutage(t, p, deliveries, recovery)
			t.Logf("full jitter, seed %d: attempts %d, peak per second after recovery %d, last delivered at t=%s",
				seed, got.attempts, got.peakAfterRecovery, got.lastDelivered.Round(time.Second))
			require.LessOrEqual(t, got.peakAfterRecovery, maxPeak,
				"full jitter should keep the busiest second after recovery at or below 2%% of %d deliveries", deliveries)
		})
	}
}
