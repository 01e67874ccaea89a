package ratelimit_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/ratelimit"
)

type fixedReplicas int

func (n fixedReplicas) Replicas() int { return int(n) }

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func TestReserveSpacesDeliveriesEvenly(t *testing.T) {
	t.Parallel()
	limiter := ratelimit.NewLimiter(nil)
	endpoint := uuid.New()
	for i := range 50 {
		slot := limiter.Reserve(endpoint, 5, t0)
		require.Equal(t, time.Duration(i)*200*time.Millisecond, slot.Sub(t0), "delivery %d", i)
	}
}

func TestReserveKeepsEndpointsApart(t *testing.T) {
	t.Parallel()
	limiter := ratelimit.NewLimiter(nil)
	slow, other := uuid.New(), uuid.New()
	for range 10 {
		limiter.Reserve(slow, 1, t0)
	}
	require.Equal(t, t0, limiter.Reserve(other, 1, t0), "another endpoint's backlog does not delay this one")
	require.Equal(t, t0, limiter.Reserve(uuid.New(), 0, t0), "zero means unlimited")
	require.Equal(t, t0, limiter.Reserve(slow, -1, t0), "negative means unlimited")
}

func TestReserveDividesTheLimitBetweenReplicas(t *testing.T) {
	t.Parallel()
	limiter := ratelimit.NewLimiter(fixedReplicas(2))
	endpoint := uuid.New()
	var last time.Time
	for range 25 {
		last = limiter.Reserve(endpoint, 5, t0)
	}
	require.Equal(t, 24*400*time.Millisecond, last.Sub(t0), "each of two replicas sends 2.5/s")
}

func TestReserveFollowsAChangedLimit(t *testing.T) {
	t.Parallel()
	limiter := ratelimit.NewLimiter(nil)
	endpoint := uuid.New()
	require.Equal(t, t0, limiter.Reserve(endpoint, 1, t0))
	require.Equal(t, t0.Add(time.Second), limiter.Reserve(endpoint, 1, t0))
	later := t0.Add(2 * time.Second)
	require.Equal(t, later, limiter.Reserve(endpoint, 10, later))
	require.Equal(t, later.Add(100*time.Millisecond), limiter.Reserve(endpoint, 10, later))
}

func TestReserveAfterIdleStartsFresh(t *testing.T) {
	t.Parallel()
	limiter := ratelimit.NewLimiter(nil)
	endpoint := uuid.New()
	for range 3 {
		limiter.Reserve(endpoint, 1, t0)
	}
	later := t0.Add(time.Hour)
	require.Equal(t, later, limiter.Reserve(endpoint, 1, later))
	require.Equal(t, later.Add(time.Second), limiter.Reserve(endpoint, 1, later))
}
