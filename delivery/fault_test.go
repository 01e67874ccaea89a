package delivery

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDeferral(t *testing.T) {
	t.Parallel()
	want := []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second, time.Minute, time.Minute}
	for n, d := range want {
		require.Equal(t, d, deferral(n), "after %d deferrals in a row", n)
	}
	require.Equal(t, MaxDeferral, deferral(1000), "no overflow")
}

// The first fault of a cause is logged, the next ones within faultLogEvery
// are counted, and the next line says how many were not logged.
func TestFaultLog(t *testing.T) {
	t.Parallel()
	var l faultLog
	at := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	_, ok := l.admit(FaultSecrets, at)
	require.True(t, ok)
	for i := range 3 {
		_, ok = l.admit(FaultSecrets, at.Add(time.Duration(i+1)*time.Second))
		require.False(t, ok)
	}
	_, ok = l.admit(FaultSigning, at.Add(time.Second))
	require.True(t, ok, "each cause is logged on its own")
	unlogged, ok := l.admit(FaultSecrets, at.Add(faultLogEvery))
	require.True(t, ok)
	require.Equal(t, 3, unlogged)
}
