package api_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/api"
	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/store"
)

// withConfig is b with a second API server on the same database, built from
// the test's usual config changed by edit.
func (b *testBundle) withConfig(t *testing.T, edit func(*api.Config)) *testBundle {
	t.Helper()
	box, err := secretbox.Parse(b.secretKey)
	require.NoError(t, err)
	st, err := store.New(b.pool, store.Config{Box: box})
	require.NoError(t, err)
	cfg := api.Config{Pool: b.pool, Store: st, Logger: slog.New(slog.DiscardHandler), PublicURL: "http://herald.test"}
	edit(&cfg)
	s, err := api.New(cfg)
	require.NoError(t, err)
	server := httptest.NewServer(s.Handler())
	t.Cleanup(server.Close)
	c := *b
	c.handler, c.server = s.Handler(), server
	return &c
}

// logLines is a log destination a test reads back as JSON records.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// requests returns the "http request" records written so far.
func (l *logLines) requests(t *testing.T) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(l.buf.Bytes()), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var rec map[string]any
		require.NoError(t, json.Unmarshal(line, &rec), "log line %s", line)
		if rec["msg"] == "http request" {
			out = append(out, rec)
		}
	}
	return out
}

// waitForRequests waits until n request lines are written: a line is
// written once the response has been sent, so it may come after the client
// has read it.
func (l *logLines) waitForRequests(t *testing.T, n int) []map[string]any {
	t.Helper()
	require.Eventually(t, func() bool { return len(l.requests(t)) >= n }, 5*time.Second, 10*time.Millisecond, "%d request log lines", n)
	return l.requests(t)
}

const wrongKey = "hk_wrong_0123456789abcdefghijklmnopqrstuvwxyz"

// After a burst of failed authentications an address waits: every request
// it sends, with a valid key too (whose 200 would tell a guess from a miss),
// gets 429 with Retry-After until the budget refills.
func TestFailedAuthenticationIsThrottledPerAddress(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := range 20 {
		p := b.do(t, wrongKey, "GET", "/v1/tenants", nil).Problem(t, http.StatusUnauthorized)
		require.NotContains(t, p.Detail, "too many", "failure %d is within the burst", i+1)
	}
	resp := b.do(t, wrongKey, "GET", "/v1/tenants", nil)
	p := resp.Problem(t, http.StatusTooManyRequests)
	require.Contains(t, p.Detail, "failed authentication")
	wait, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After is whole seconds: %q", resp.Header.Get("Retry-After"))
	require.GreaterOrEqual(t, wait, 1)

	b.do(t, b.operator, "GET", "/v1/tenants", nil).Problem(t, http.StatusTooManyRequests)
	require.Equal(t, http.StatusOK, b.do(t, "", "GET", "/healthz", nil).Status, "routes without authentication still answer")
}

// Every request's log line names the client's address.
func TestRequestLogsNameTheClientAddress(t *testing.T) {
	t.Parallel()
	var logs logLines
	b := setup(t).withConfig(t, func(cfg *api.Config) { cfg.Logger = slog.New(slog.NewJSONHandler(&logs, nil)) })
	require.Equal(t, http.StatusOK, b.do(t, "", "GET", "/healthz", nil).Status)
	require.Equal(t, http.StatusOK, b.do(t, b.acme, "GET", "/v1/tenants", nil).Status)
	b.do(t, wrongKey, "GET", "/v1/tenants", nil).Problem(t, http.StatusUnauthorized)
	for _, line := range logs.waitForRequests(t, 3) {
		require.Equal(t, "127.0.0.1", line["client"], "log line %v", line)
	}
}

// Behind a trusted proxy, the address in its header is the client: in the
// log and for throttling, which then holds up one client, not the proxy.
func TestTrustedProxyHeaderDecidesTheClient(t *testing.T) {
	t.Parallel()
	var logs logLines
	b := setup(t).withConfig(t, func(cfg *api.Config) {
		cfg.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
		cfg.TrustedProxyHeader = "X-Forwarded-For"
		cfg.AuthThrottle = auth.NewFailureThrottle(auth.ThrottleConfig{Burst: 2, Interval: time.Hour})
	})
	const attacker, neighbour = "203.0.113.7", "198.51.100.9"
	forwarded := func(client string) []string { return []string{"X-Forwarded-For", "192.0.2.66, " + client} }

	b.do(t, wrongKey, "GET", "/v1/tenants", nil, forwarded(attacker)...).Problem(t, http.StatusUnauthorized)
	b.do(t, "", "GET", "/v1/tenants", nil, forwarded(attacker)...).Problem(t, http.StatusUnauthorized)
	resp := b.do(t, wrongKey, "GET", "/v1/tenants", nil, forwarded(attacker)...)
	resp.Problem(t, http.StatusTooManyRequests)
	require.Equal(t, "3600", resp.Header.Get("Retry-After"))
	require.Equal(t, http.StatusOK, b.do(t, b.acme, "GET", "/v1/tenants", nil, forwarded(neighbour)...).Status, "another client behind the same proxy")

	lines := logs.waitForRequests(t, 4)
	clients := make([]any, len(lines))
	for i, line := range lines {
		clients[i] = line["client"]
	}
	require.Equal(t, []any{attacker, attacker, attacker, neighbour}, clients)
}

func TestAMalformedTrustedProxyHeaderIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	box, err := secretbox.Parse(b.secretKey)
	require.NoError(t, err)
	st, err := store.New(b.pool, store.Config{Box: box})
	require.NoError(t, err)
	_, err = api.New(api.Config{Pool: b.pool, Store: st, TrustedProxyHeader: "X-Forwarded-For:"})
	require.ErrorContains(t, err, "not an HTTP header name")
}
