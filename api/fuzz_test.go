package api_test

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// serveRaw sends a request straight to the handler, so fuzzed headers need
// not be valid enough for an HTTP client to send.
func (b *testBundle) serveRaw(method, path, key string, body []byte, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequestWithContext(b.ctx, method, path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header[header[i]] = []string{header[i+1]}
	}
	rec := httptest.NewRecorder()
	b.handler.ServeHTTP(rec, req)
	return rec
}

// requireClientAnswer checks that a response to client input is never a
// server error, and that errors are problems.
func requireClientAnswer(t *testing.T, rec *httptest.ResponseRecorder, input []byte) {
	t.Helper()
	require.Less(t, rec.Code, 500, "input %q got %d: %s", input, rec.Code, rec.Body)
	if rec.Code >= 400 {
		require.Equal(t, "application/problem+json", rec.Header().Get("Content-Type"))
	}
}

// FuzzPublishRequest sends arbitrary bodies and idempotency keys to
// POST /v1/tenants/{tenantID}/messages.
func FuzzPublishRequest(f *testing.F) {
	b := setup(f)
	for _, seed := range []string{
		`{"event_type": "invoice.paid", "object_id": "inv_1", "data": {"amount": 10}}`,
		`{"event_type": "a", "object_id": "b", "data": {"x": "\u0000"}}`,
		`{"event_type": "a", "object_id": "\u0000", "data": {}}`,
		`{"event_type": "a", "object_id": "b", "data": {"n": 1e400}}`,
		`{"event_type": "a", "object_id": "b", "data": []}`,
		`{"event_type": 1}`,
		`{"data": null}`,
		`{} {}`,
		`[`,
	} {
		f.Add([]byte(seed), "")
		f.Add([]byte(seed), "key-1")
	}
	f.Add([]byte(`{"event_type": "a", "object_id": "b", "data": {}}`), "\x00\xff")
	f.Fuzz(func(t *testing.T, body []byte, key string) {
		rec := b.serveRaw("POST", "/v1/tenants/acme/messages", b.acme, body, "Idempotency-Key", key)
		requireClientAnswer(t, rec, body)
	})
}

// FuzzEndpointRequest sends arbitrary bodies to the endpoint routes that
// read one: create, update, disable and rotate secret.
func FuzzEndpointRequest(f *testing.F) {
	b := setup(f)
	rec := b.serveRaw("POST", "/v1/tenants/acme/endpoints", b.acme, []byte(`{"url": "https://example.com/hook"}`))
	require.Equal(f, 201, rec.Code, "%s", rec.Body)
	id := extractID(f, rec.Body.Bytes())
	for _, seed := range []string{
		`{"url": "https://example.com/hook", "event_types": ["invoice.paid"], "rate_limit": 5}`,
		`{"url": "http://[::1]:80/x", "description": "\u0000"}`,
		`{"url": "https://example.com", "secret": "whsec_AAAA"}`,
		`{"url": "https://example.com", "rate_limit": 1e308}`,
		`{"url": "https://example.com", "event_types": ["", "A", "a.b"]}`,
		`{"event_types": null, "rate_limit": null}`,
		`{"reason": "x"}`,
		`{"grace_seconds": -1}`,
		`{"url": 1}`,
		`"x"`,
	} {
		for route := range 4 {
			f.Add([]byte(seed), uint8(route))
		}
	}
	routes := []struct{ method, path string }{
		{"POST", "/v1/tenants/acme/endpoints"},
		{"PATCH", "/v1/tenants/acme/endpoints/" + id},
		{"POST", "/v1/tenants/acme/endpoints/" + id + "/disable"},
		{"POST", "/v1/tenants/acme/endpoints/" + id + "/secret/rotate"},
	}
	f.Fuzz(func(t *testing.T, body []byte, route uint8) {
		r := routes[int(route)%len(routes)]
		requireClientAnswer(t, b.serveRaw(r.method, r.path, b.acme, body), body)
	})
}

func extractID(t testing.TB, body []byte) string {
	t.Helper()
	var v struct{ ID string }
	require.NoError(t, json.Unmarshal(body, &v))
	return v.ID
}
