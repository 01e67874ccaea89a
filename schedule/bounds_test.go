package schedule

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// An endpoint's own timeout and policy replace the global ones within the
// bounds; what it did not choose stays global; bounds that cannot be met
// are refused.
func TestBoundsClampEndpointChoices(t *testing.T) {
	t.Parallel()
	var b Bounds // the defaults: 60 s, 1 s, 10 h, 72 h
	require.Equal(t, 15*time.Second, b.Timeout(15*time.Second, 0), "none chosen: the global timeout")
	require.Equal(t, 45*time.Second, b.Timeout(15*time.Second, 45*time.Second))
	require.Equal(t, 60*time.Second, b.Timeout(15*time.Second, 90*time.Second), "clamped to MaxTimeout")
	require.Equal(t, 20*time.Second, Bounds{MaxTimeout: 20 * time.Second}.Timeout(15*time.Second, 45*time.Second), "a lowered bound applies")

	global := Policy{Base: 5 * time.Second, Cap: time.Hour, Window: 24 * time.Hour, MaxRetryAfter: time.Minute}
	require.Equal(t, global, b.Policy(global, 0, 0, 0))
	got := b.Policy(global, 100*time.Hour, 10*time.Millisecond, 2*time.Hour)
	require.Equal(t, Policy{Base: time.Second, Cap: 2 * time.Hour, Window: DefaultWindow, MaxRetryAfter: time.Minute}, got)

	require.NoError(t, b.Check())
	require.ErrorContains(t, Bounds{MaxTimeout: 2 * time.Minute}.Check(), "give one from 1s to 1m0s")
	require.ErrorContains(t, Bounds{MinBase: 11 * time.Hour}.Check(), "no policy would fit")
	require.ErrorContains(t, Bounds{MaxCap: -1}.Check(), "must not be negative")
}
