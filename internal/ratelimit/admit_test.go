package ratelimit_test

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/ratelimit"
	"github.com/heraldhq/herald/internal/testclock"
	"github.com/heraldhq/herald/internal/testfactory"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

type testBundle struct {
	pool     *pgxpool.Pool
	clock    *testclock.Clock
	limiter  *ratelimit.Limiter
	endpoint uuid.UUID
}

// setup gives a test its database, an endpoint and a limiter on a clock
// the test steps.
func setup(t *testing.T) *testBundle {
	t.Helper()
	b := &testBundle{pool: pgtest.NewPool(t), clock: testclock.New(t0)}
	b.limiter = b.replica()
	b.endpoint = testfactory.Endpoint(t, b.pool, nil).ID
	return b
}

// replica returns another limiter on the bundle's database and clock, as
// another dispatcher would have.
func (b *testBundle) replica() *ratelimit.Limiter {
	return ratelimit.New(b.pool, ratelimit.Config{Now: b.clock.Now})
}

// ask asks limiter for one delivery to the bundle's endpoint and returns
// how long the delivery must sleep; zero means it is let through.
func (b *testBundle) ask(t *testing.T, limiter *ratelimit.Limiter, perSecond float64) time.Duration {
	t.Helper()
	err := limiter.Admit(context.Background(), b.endpoint, perSecond)
	if err == nil {
		return 0
	}
	var snooze *river.JobSnoozeError
	require.ErrorAs(t, err, &snooze)
	require.Positive(t, snooze.Duration, "a delivery turned away sleeps")
	return snooze.Duration
}

// A backlog of 30 deliveries at 5/s, all asking at once: one is let
// through, and the next 25 are woken one per 200 ms slot, each 3/4 of the
// way into its slot's interval, up to 5 s (MaxWait) ahead. The 4 beyond
// that wake at random within the last 2.5 s, to ask again. Once 5 s
// reaches past the 25th, the next wake-up is the 26th slot's.
func TestAdmitWakesABacklogOnePerSlot(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.Zero(t, b.ask(t, b.limiter, 5), "the first delivery goes through at once")
	for i := range 25 {
		require.Equal(t, 150*time.Millisecond+time.Duration(i)*200*time.Millisecond, b.ask(t, b.limiter, 5), "turned away %d", i+1)
	}
	for i := range 4 {
		wait := b.ask(t, b.limiter, 5)
		require.Greater(t, wait, ratelimit.DefaultMaxWait/2, "turned away %d, beyond the wake-ups handed out", 26+i)
		require.LessOrEqual(t, wait, ratelimit.DefaultMaxWait)
	}

	for _, wake := range []time.Duration{150 * time.Millisecond, 350 * time.Millisecond} {
		b.clock.Set(t0.Add(wake))
		require.Zero(t, b.ask(t, b.limiter, 5), "woken at %s, it goes through", wake)
	}
	require.Equal(t, t0.Add(5150*time.Millisecond), b.clock.Now().Add(b.ask(t, b.limiter, 5)),
		"the next wake-up handed out follows the 25th by one slot")
}

// A backlog of 60 deliveries at 1/s, simulated for 30 s with wake-ups up
// to 100 ms late (River's fetch): whether every delivery asks the same
// dispatcher or they are spread over three, the limit is reached, and no
// one-second window holds more than 2 deliveries. With each of three
// replicas taking a third of the limit, a backlog on one of them was sent
// at a third of the limit (10 in 30 s).
func TestAdmitReachesTheLimitWhateverTheSpread(t *testing.T) {
	t.Parallel()
	for name, spread := range map[string]func(job int) int{
		"all on one": func(int) int { return 0 },
		"over three": func(job int) int { return job % 3 },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			replicas := []*ratelimit.Limiter{b.limiter, b.replica(), b.replica()}
			late := rand.New(rand.NewPCG(17, 0))
			wakes := make([]time.Time, 60)
			for i := range wakes {
				wakes[i] = t0
			}
			var sent []time.Time
			for {
				job := 0
				for i, w := range wakes {
					if w.Before(wakes[job]) {
						job = i
					}
				}
				at := wakes[job].Add(time.Duration(late.Int64N(int64(100 * time.Millisecond))))
				if !at.Before(t0.Add(30 * time.Second)) {
					break
				}
				b.clock.Set(at)
				wait := b.ask(t, replicas[spread(job)], 1)
				if wait == 0 {
					sent = append(sent, at)
					wakes = slices.Delete(wakes, job, job+1)
					continue
				}
				wakes[job] = at.Add(wait)
			}
			require.InDelta(t, 30, len(sent), 1, "deliveries let through in 30 s at 1/s")
			for i := range sent {
				inWindow := 0
				for _, s := range sent[i:] {
					if s.Sub(sent[i]) < time.Second {
						inWindow++
					}
				}
				require.LessOrEqual(t, inWindow, 2, "deliveries in the second from %s", sent[i].Sub(t0))
			}
		})
	}
}

// A delivery turned away by a limit of one an hour is told to ask again
// within MaxWait, not in an hour. A limit changed meanwhile applies when it
// does: raised or lowered, the new interval counts from the latest
// delivery let through.
func TestAdmitAppliesAChangedLimitAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hourly := 1.0 / 3600
	require.Zero(t, b.ask(t, b.limiter, hourly))
	wait := b.ask(t, b.limiter, hourly)
	require.LessOrEqual(t, wait, ratelimit.DefaultMaxWait, "no delivery sleeps longer than MaxWait")

	b.clock.Set(t0.Add(wait))
	require.Positive(t, b.ask(t, b.limiter, hourly), "under the same limit it is turned away again")
	require.Zero(t, b.ask(t, b.limiter, 10), "raised to 10/s, it goes through")

	b.clock.Set(b.clock.Now().Add(200 * time.Millisecond))
	require.Positive(t, b.ask(t, b.limiter, 1.0/60), "lowered to 1/min, 200 ms after the last is too soon")
	require.Zero(t, b.ask(t, b.limiter, 10), "at 10/s it would not have been")
}

// Without a limit nothing is asked, so no row is written.
func TestAdmitWithoutALimitAsksNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, perSecond := range []float64{0, -1, math.NaN()} {
		for range 3 {
			require.Zero(t, b.ask(t, b.limiter, perSecond), "limit %v", perSecond)
		}
	}
	var rows int
	require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT count(*) FROM herald.endpoint_rate_limits").Scan(&rows))
	require.Zero(t, rows)
}

// A limit too small for a time.Duration interval (here, one message in
// 10^300 seconds) holds the endpoint to one delivery, with no overflow.
func TestAdmitWithATinyLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.Zero(t, b.ask(t, b.limiter, 1e-300))
	require.LessOrEqual(t, b.ask(t, b.limiter, 1e-300), ratelimit.DefaultMaxWait)
}

// Twenty dispatchers ask for the same endpoint at the same moment, on the
// database's clock: the row's lock lets exactly one through (the first
// ask inserts the row; the others wait for it and read it), and the others
// are told to come back within MaxWait.
func TestAdmitConcurrentAsksLetOneThrough(t *testing.T) {
	t.Parallel()
	b := setup(t)
	errs := make([]error, 20)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range errs {
		limiter := ratelimit.New(b.pool, ratelimit.Config{})
		wg.Go(func() {
			<-start
			errs[i] = limiter.Admit(context.Background(), b.endpoint, 0.1)
		})
	}
	close(start)
	wg.Wait()
	through := 0
	for _, err := range errs {
		if err == nil {
			through++
			continue
		}
		var snooze *river.JobSnoozeError
		require.ErrorAs(t, err, &snooze)
		require.LessOrEqual(t, snooze.Duration, ratelimit.DefaultMaxWait)
	}
	require.Equal(t, 1, through, "deliveries let through at once, at one per 10 s")
}
