package auth_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/testclock"
)

func TestFailureThrottleAllowsABurstThenOneTryPerInterval(t *testing.T) {
	t.Parallel()
	clock := testclock.New(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	th := auth.NewFailureThrottle(auth.ThrottleConfig{Burst: 3, Interval: 10 * time.Second, Now: clock.Now})
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")

	for range 3 {
		require.Zero(t, th.Wait(a))
		th.Fail(a)
	}
	require.Equal(t, 10*time.Second, th.Wait(a), "the burst is spent: one try per interval")
	require.Zero(t, th.Wait(b), "another address is not held up")
	require.Zero(t, th.Wait(netip.MustParseAddr("::ffff:192.0.2.2")), "nor its IPv6 form")
	require.Equal(t, 10*time.Second, th.Wait(netip.MustParseAddr("::ffff:192.0.2.1")), "a's IPv6 form is a")

	clock.Set(clock.Now().Add(4 * time.Second))
	require.Equal(t, 6*time.Second, th.Wait(a))
	clock.Set(clock.Now().Add(6 * time.Second))
	require.Zero(t, th.Wait(a), "one try again")
	th.Fail(a)
	require.Equal(t, 10*time.Second, th.Wait(a))
}

func TestFailureThrottleCountsIPv6PerSlash64(t *testing.T) {
	t.Parallel()
	th := auth.NewFailureThrottle(auth.ThrottleConfig{Burst: 2, Interval: time.Hour})
	th.Fail(netip.MustParseAddr("2001:db8:1:2::1"))
	th.Fail(netip.MustParseAddr("2001:db8:1:2:ffff::9"))
	require.Positive(t, th.Wait(netip.MustParseAddr("2001:db8:1:2::77")), "one /64 is one client")
	require.Zero(t, th.Wait(netip.MustParseAddr("2001:db8:1:3::1")), "the next /64 is another")
}

func TestFailureThrottleForgetsIdleAddresses(t *testing.T) {
	t.Parallel()
	clock := testclock.New(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	th := auth.NewFailureThrottle(auth.ThrottleConfig{Burst: 2, Interval: time.Second, Now: clock.Now})
	th.Fail(netip.MustParseAddr("192.0.2.1"))
	th.Fail(netip.MustParseAddr("192.0.2.2"))
	th.Fail(netip.MustParseAddr("192.0.2.2"))
	require.Equal(t, 2, th.Tracked())

	clock.Set(clock.Now().Add(2 * time.Minute))
	th.Fail(netip.MustParseAddr("192.0.2.3"))
	require.Equal(t, 1, th.Tracked(), "refilled buckets are evicted")
}

func TestFailureThrottleDefaultsAndDisabling(t *testing.T) {
	t.Parallel()
	a := netip.MustParseAddr("192.0.2.1")
	th := auth.NewFailureThrottle(auth.ThrottleConfig{})
	for range auth.DefaultFailureBurst {
		require.Zero(t, th.Wait(a))
		th.Fail(a)
	}
	wait := th.Wait(a)
	require.Positive(t, wait)
	require.LessOrEqual(t, wait, auth.DefaultFailureInterval)

	off := auth.NewFailureThrottle(auth.ThrottleConfig{Burst: -1})
	for range 100 {
		off.Fail(a)
	}
	require.Zero(t, off.Wait(a), "a negative burst disables throttling")
}
