package delivery_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
)

func TestJobRetryCeilingIsCapped(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]time.Duration{
		-5: time.Second, 0: time.Second, 1: time.Second, 2: 2 * time.Second, 9: 256 * time.Second,
		10: delivery.MaxJobRetryDelay, 64: delivery.MaxJobRetryDelay, math.MaxInt: delivery.MaxJobRetryDelay,
	} {
		require.Equal(t, want, delivery.JobRetryCeiling(n), "error %d", n)
	}
}

// Every delay after a job error lies in [ceiling/2, ceiling), so none is
// longer than MaxJobRetryDelay: after eleven errors River's default put a
// job's next attempt four hours out.
func TestJobRetryDelaysAreCapped(t *testing.T) {
	t.Parallel()
	p := delivery.JobRetryPolicy{Rand: rand.New(rand.NewPCG(1, 2))}
	for n := 1; n <= 2*delivery.MaxJobAttempts; n++ {
		ceiling := delivery.JobRetryCeiling(n)
		for range 20 {
			d := p.Delay(n)
			require.GreaterOrEqual(t, d, ceiling/2, "error %d", n)
			require.Less(t, d, ceiling, "error %d", n)
			require.LessOrEqual(t, d, delivery.MaxJobRetryDelay, "error %d", n)
		}
	}

	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	p.Now = func() time.Time { return now }
	job := &rivertype.JobRow{Errors: make([]rivertype.AttemptError, 10)}
	at := p.NextRetry(job)
	require.False(t, at.Before(now.Add(delivery.MaxJobRetryDelay/2)), "the 11th error waits %s", at.Sub(now))
	require.True(t, at.Before(now.Add(delivery.MaxJobRetryDelay)), "the 11th error waits %s", at.Sub(now))
	require.Less(t, delivery.JobRetryPolicy{}.Delay(1), time.Second, "the zero policy is ready to use")
}

// The delays before River discards a job add up to at least 3.8 hours, as
// MaxJobAttempts promises: a brownout of an hour or two discards no job.
func TestJobRetriesOutlastABrownout(t *testing.T) {
	t.Parallel()
	var least time.Duration
	for n := 1; n < delivery.MaxJobAttempts; n++ {
		least += delivery.JobRetryCeiling(n) / 2
	}
	require.GreaterOrEqual(t, least, 3*time.Hour+48*time.Minute)
}
