package delivery

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

func TestInflightCapsEachEndpoint(t *testing.T) {
	t.Parallel()

	f := newInflight(2)
	slow, other := uuid.New(), uuid.New()
	releaseFirst, ok := f.acquire(slow)
	require.True(t, ok)
	_, ok = f.acquire(slow)
	require.True(t, ok)
	_, ok = f.acquire(slow)
	require.False(t, ok, "a third attempt to one endpoint is over the cap")
	require.True(t, f.full(slow))
	require.False(t, f.full(other))
	_, ok = f.acquire(other)
	require.True(t, ok, "another endpoint has its own cap")

	releaseFirst()
	require.False(t, f.full(slow), "a released slot makes room")
	_, ok = f.acquire(slow)
	require.True(t, ok, "a released slot can be taken again")
}

func TestInflightForgetsIdleEndpoints(t *testing.T) {
	t.Parallel()

	f := newInflight(1)
	release, ok := f.acquire(uuid.New())
	require.True(t, ok)
	release()
	require.Empty(t, f.running, "an endpoint with nothing running must not stay in the map")
}
