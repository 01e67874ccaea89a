package delivery

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

func TestInflightCapsEachEndpoint(t *testing.T) {
	t.Parallel()

	f := newInflight(2)
	slow, other := uuid.New(), uuid.New()
	releaseFirst, ok := acquireOne(f, slow)
	require.True(t, ok)
	_, ok = acquireOne(f, slow)
	require.True(t, ok)
	_, ok = acquireOne(f, slow)
	require.False(t, ok, "a third attempt to one endpoint is over the cap")
	require.False(t, f.waitForRoom(t.Context(), slow, 0))
	require.True(t, f.waitForRoom(t.Context(), other, 0))
	_, ok = acquireOne(f, other)
	require.True(t, ok, "another endpoint has its own cap")

	releaseFirst()
	require.True(t, f.waitForRoom(t.Context(), slow, 0), "a released slot makes room")
	_, ok = acquireOne(f, slow)
	require.True(t, ok, "a released slot can be taken again")
}

func TestInflightForgetsIdleEndpoints(t *testing.T) {
	t.Parallel()

	f := newInflight(1)
	release, ok := acquireOne(f, uuid.New())
	require.True(t, ok)
	release()
	require.Empty(t, f.running, "an endpoint with nothing running must not stay in the map")
}

// A job that finds its endpoint full waits for a slot to be released rather
// than being held back at once, and gives up after its patience.
func TestInflightWaitsForRoom(t *testing.T) {
	t.Parallel()

	f, endpoint, release := fullEndpoint(t)

	require.False(t, f.waitForRoom(t.Context(), endpoint, time.Millisecond), "nothing was released within the patience")

	released := make(chan struct{})
	go func() {
		defer close(released)
		release()
	}()
	require.True(t, f.waitForRoom(t.Context(), endpoint, time.Hour), "the release wakes the waiter")
	<-released
	require.Empty(t, f.waiting, "nobody is left waiting")

	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	_, ok := acquireOne(f, endpoint)
	require.True(t, ok)
	require.False(t, f.waitForRoom(cancelled, endpoint, time.Hour), "an ended job stops waiting")
}

// How long an endpoint's oldest attempt has been running sets the least
// snooze of a job held back by it: a hanging endpoint's backlog checks back
// about as often as a slot can free.
func TestInflightLongestRunning(t *testing.T) {
	t.Parallel()

	f := newInflight(3)
	endpoint := uuid.New()
	require.Zero(t, f.longestRunning(endpoint), "nothing runs")

	releaseOld, got := f.acquireUpTo(endpoint, 2)
	require.Equal(t, 2, got)
	time.Sleep(5 * time.Millisecond)
	releaseNew, ok := acquireOne(f, endpoint)
	require.True(t, ok)
	require.GreaterOrEqual(t, f.longestRunning(endpoint), 5*time.Millisecond, "the oldest attempt counts")

	releaseOld()
	require.Len(t, f.running[endpoint], 1, "both slots taken together are given back together")
	releaseNew()
	require.Zero(t, f.longestRunning(endpoint))
	require.Empty(t, f.running)
}

// A released slot wakes one waiting job, not all of them: each woken job
// reads its deliveries, and all but one would be held back after.
func TestInflightWakesOneWaiterPerSlot(t *testing.T) {
	t.Parallel()

	f, endpoint, release := fullEndpoint(t)

	ctx, cancel := context.WithCancel(t.Context())
	results := make(chan bool, 2)
	for range 2 {
		go func() { results <- f.waitForRoom(ctx, endpoint, time.Hour) }()
	}
	require.Eventually(t, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.waiting[endpoint]) == 2
	}, 10*time.Second, time.Millisecond)

	release()
	require.True(t, <-results, "one waiter gets the slot")
	f.mu.Lock()
	require.Len(t, f.waiting[endpoint], 1, "the other still waits")
	f.mu.Unlock()
	cancel()
	require.False(t, <-results, "the other gives up when its job ends")
	require.Empty(t, f.waiting)
}

// fullEndpoint returns a counter with a cap of one, an endpoint that has
// taken it, and the release of that slot.
func fullEndpoint(t *testing.T) (*inflight, uuid.UUID, func()) {
	t.Helper()
	f := newInflight(1)
	endpoint := uuid.New()
	release, ok := acquireOne(f, endpoint)
	require.True(t, ok)
	return f, endpoint, release
}

// acquireOne takes one slot for endpoint, as a delivery's job does.
func acquireOne(f *inflight, endpoint uuid.UUID) (release func(), ok bool) {
	release, got := f.acquireUpTo(endpoint, 1)
	return release, got == 1
}
