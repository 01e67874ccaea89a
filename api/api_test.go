package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/api"
	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/internal/testfactory"
	"github.com/heraldhq/herald/store"
)

type testBundle struct {
	ctx      context.Context
	pool     *pgxpool.Pool
	handler  http.Handler
	server   *httptest.Server
	operator string // an operator API key
	acme     string // a key scoped to tenant acme
	globex   string // a key scoped to tenant globex
	// secretKey is the HERALD_SECRET_KEY endpoint secrets are sealed with.
	secretKey string
}

// setup starts the API on a fresh database. A guard, when given, is the
// endpoint URL policy; by default any URL goes.
func setup(t testing.TB, guard ...*ssrf.Guard) *testBundle {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	testfactory.Tenant(t, pool, &testfactory.TenantOpts{ID: "acme", Name: "Acme"})
	testfactory.Tenant(t, pool, &testfactory.TenantOpts{ID: "globex", Name: "Globex"})
	secretKey := secretbox.Generate()
	box, err := secretbox.Parse(secretKey)
	require.NoError(t, err)
	cfg := store.Config{Box: box}
	if len(guard) > 0 {
		cfg.CheckURL = guard[0].CheckURL
	}
	st, err := store.New(pool, cfg)
	require.NoError(t, err)
	s, err := api.New(api.Config{Pool: pool, Store: st, Logger: testLogger(t), PublicURL: "http://herald.test", MaxBodyBytes: 64 << 10})
	require.NoError(t, err)
	server := httptest.NewServer(s.Handler())
	t.Cleanup(server.Close)
	b := &testBundle{ctx: ctx, pool: pool, handler: s.Handler(), server: server, secretKey: secretKey}
	_, b.operator, err = auth.CreateAPIKey(ctx, pool, "", "test operator")
	require.NoError(t, err)
	_, b.acme, err = auth.CreateAPIKey(ctx, pool, "acme", "acme")
	require.NoError(t, err)
	_, b.globex, err = auth.CreateAPIKey(ctx, pool, "globex", "globex")
	require.NoError(t, err)
	return b
}

// testLogger logs errors to the test's output, which shows only when it
// fails: a 500's cause is in the server's log, not in its answer.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelError}))
}

// response is a finished request: status, headers and body.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into a generic map.
func (r response) JSON(t *testing.T) map[string]any {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.Unmarshal(r.Body, &v), "body: %s", r.Body)
	return v
}

// Decode decodes the body into v.
func (r response) Decode(t *testing.T, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal(r.Body, v), "body: %s", r.Body)
}

// Problem checks that the response is a problem with the given status and
// returns it.
func (r response) Problem(t *testing.T, status int) api.Problem {
	t.Helper()
	require.Equal(t, status, r.Status, "body: %s", r.Body)
	require.Equal(t, "application/problem+json", r.Header.Get("Content-Type"))
	var p api.Problem
	require.NoError(t, json.Unmarshal(r.Body, &p))
	require.Equal(t, status, p.Status)
	require.NotEmpty(t, p.Detail)
	require.NotEmpty(t, p.RequestID)
	return p
}

// do sends a request with key as the bearer token; body may be nil, a
// string (sent as is) or a value (sent as JSON).
func (b *testBundle) do(t *testing.T, key, method, path string, body any, header ...string) response {
	t.Helper()
	var r io.Reader
	switch v := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(v)
	default:
		raw, err := json.Marshal(v)
		require.NoError(t, err)
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(b.ctx, method, b.server.URL+path, r)
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := b.server.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return response{Status: resp.StatusCode, Header: resp.Header, Body: raw}
}
