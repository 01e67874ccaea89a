package api_test

import (
	"bytes"
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
