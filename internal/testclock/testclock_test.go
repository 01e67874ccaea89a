package testclock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/testclock"
)

func TestClockReadsWhatItWasSetTo(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	clock := testclock.New(t0)
	require.Equal(t, t0, clock.Now())
	require.Equal(t, t0, *clock.NowOrNil(), "River sees a stubbed time")

	clock.Set(t0.Add(time.Hour))
	require.Equal(t, t0.Add(time.Hour), clock.Now())
	clock.Set(t0)
	require.Equal(t, t0, clock.Now(), "the clock also moves backwards")
}
