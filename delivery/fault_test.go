package delivery

import (
	"context"
	"net"
	"net/http/httptrace"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestResolverFailed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		err     *net.DNSError
		heralds bool
	}{
		{"the name does not exist", &net.DNSError{Err: "no such host", Name: "a.example", IsNotFound: true}, false},
		{"our resolver did not answer in time", &net.DNSError{Err: "i/o timeout", Name: "a.example", IsTimeout: true, IsTemporary: true}, true},
		{"our resolver could not be reached", &net.DNSError{Err: "read udp 10.0.0.1:1->10.0.0.53:53: read: connection refused", IsTemporary: true}, true},
		{"SERVFAIL: the name's servers failed", &net.DNSError{Err: "server misbehaving", Name: "a.example", IsTemporary: true}, false},
		{"another error code (REFUSED)", &net.DNSError{Err: "server misbehaving", Name: "a.example"}, false},
		{"a malformed answer", &net.DNSError{Err: "cannot unmarshal DNS message", Name: "a.example"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.heralds, resolverFailed(tt.err))
		})
	}
}

// A request that failed with the request's own timeout while its lookup
// was still waiting is the resolver's; one whose lookup had answered is
// not.
func TestLookupWatch(t *testing.T) {
	t.Parallel()
	timedOut := context.DeadlineExceeded // what the client returns at the request's timeout

	var waiting lookupWatch
	waiting.trace().DNSStart(httptrace.DNSStartInfo{Host: "a.example"})
	fault := waiting.resolverFault(timedOut, 15*time.Second)
	require.NotNil(t, fault)
	require.Equal(t, FaultResolver, fault.Cause)
	require.Contains(t, fault.Error(), "did not answer within the attempt's 15s")

	var answered lookupWatch
	answered.trace().DNSStart(httptrace.DNSStartInfo{Host: "a.example"})
	answered.trace().DNSDone(httptrace.DNSDoneInfo{})
	require.Nil(t, answered.resolverFault(timedOut, 15*time.Second), "the endpoint did not answer")

	var failed lookupWatch
	failed.trace().DNSStart(httptrace.DNSStartInfo{Host: "a.example"})
	failed.trace().DNSDone(httptrace.DNSDoneInfo{Err: &net.DNSError{Err: "i/o timeout", IsTimeout: true}})
	require.NotNil(t, failed.resolverFault(timedOut, 15*time.Second), "the lookup timed out before the request gave up")

	var missing lookupWatch
	missing.trace().DNSStart(httptrace.DNSStartInfo{Host: "a.example"})
	notFound := &net.DNSError{Err: "no such host", Name: "a.example", IsNotFound: true}
	missing.trace().DNSDone(httptrace.DNSDoneInfo{Err: notFound})
	require.Nil(t, missing.resolverFault(&net.OpError{Op: "dial", Err: notFound}, 15*time.Second), "the name does not exist")
}

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
