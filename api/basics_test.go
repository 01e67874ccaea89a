package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/api"
)

func TestHealthAndReadiness(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.Equal(t, http.StatusOK, b.do(t, "", "GET", "/healthz", nil).Status)
	require.Equal(t, "ready", b.do(t, "", "GET", "/readyz", nil).JSON(t)["status"])

	_, err := b.pool.Exec(b.ctx, "DELETE FROM herald.schema_migrations WHERE version = 5")
	require.NoError(t, err)
	p := b.do(t, "", "GET", "/readyz", nil).Problem(t, http.StatusServiceUnavailable)
	require.Contains(t, p.Detail, "0005_api is not applied")
}

func TestRoutesUnderV1NeedAValidKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.do(t, "", "GET", "/v1/event-types", nil).Problem(t, http.StatusUnauthorized)
	require.Contains(t, p.Detail, "Authorization: Bearer")
	b.do(t, "hk_not_a_key", "GET", "/v1/event-types", nil).Problem(t, http.StatusUnauthorized)
	b.do(t, "", "GET", "/v1/event-types", nil, "Authorization", "Basic YTpi").Problem(t, http.StatusUnauthorized)
	require.Equal(t, http.StatusOK, b.do(t, b.acme, "GET", "/v1/event-types", nil).Status)
}

func TestUnknownRoutesAndMethodsAreProblems(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do(t, b.operator, "GET", "/v1/nothing-here", nil).Problem(t, http.StatusNotFound)
	b.do(t, "", "PUT", "/healthz", nil).Problem(t, http.StatusMethodNotAllowed)
}

func TestRequestIDsAreEchoedOrMade(t *testing.T) {
	t.Parallel()
	b := setup(t)
	resp := b.do(t, "", "GET", "/healthz", nil, "X-Request-Id", "abc-123")
	require.Equal(t, "abc-123", resp.Header.Get("X-Request-Id"))
	resp = b.do(t, "", "GET", "/healthz", nil, "X-Request-Id", "bad id with spaces")
	require.NotEqual(t, "bad id with spaces", resp.Header.Get("X-Request-Id"))
	require.NotEmpty(t, resp.Header.Get("X-Request-Id"))
	p := b.do(t, "", "GET", "/v1/event-types", nil, "X-Request-Id", "trace-me").Problem(t, http.StatusUnauthorized)
	require.Equal(t, "trace-me", p.RequestID)
}

func TestBadBodiesAreClearProblems(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cases := []struct {
		name, body, contentType string
		status                  int
		field, detail           string
	}{
		{"empty", "", "application/json", 400, "", "empty"},
		{"not json", "name=x", "application/json", 400, "", "not valid JSON"},
		{"cut short", `{"name": "a`, "application/json", 400, "", "ends in the middle"},
		{"unknown field", `{"name": "a.b", "colour": "red"}`, "application/json", 400, "colour", "unknown field"},
		{"wrong type", `{"name": 7}`, "application/json", 400, "name", "must be a string"},
		{"array", `[1]`, "application/json", 400, "", "JSON object"},
		{"trailing", `{"name": "a.b"} {}`, "application/json", 400, "", "exactly one JSON object"},
		{"form", `{"name": "a.b"}`, "application/x-www-form-urlencoded", 415, "", "Content-Type: application/json"},
		{"too large", `{"name": "a.b", "description": "` + strings.Repeat("x", 70<<10) + `"}`, "application/json", 413, "", "limit"},
		{"invalid value", `{"name": "Not Valid"}`, "application/json", 422, "name", "lower-case"},
		{"nul", `{"name": "a.b", "description": "\u0000"}`, "application/json", 422, "description", "NUL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := b.do(t, b.operator, "POST", "/v1/event-types", tc.body, "Content-Type", tc.contentType).Problem(t, tc.status)
			require.Equal(t, tc.field, p.Field)
			require.Contains(t, p.Detail, tc.detail)
		})
	}
}

// A JSON body sent without a Content-Type is read as JSON (a client that
// declares nothing has nothing to contradict); a declared type other than
// JSON is refused with 415 naming the header to send.
func TestBodyWithoutContentTypeIsJSON(t *testing.T) {
	t.Parallel()
	b := setup(t)
	send := func(contentType string) *http.Response {
		req, err := http.NewRequestWithContext(b.ctx, "POST", b.server.URL+"/v1/event-types",
			strings.NewReader(`{"name": "a.`+strings.ReplaceAll(contentType, "/", "-")+`"}`))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+b.operator)
		req.Header.Del("Content-Type")
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := b.server.Client().Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { _ = resp.Body.Close() })
		return resp
	}
	resp := send("")
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	for _, declared := range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"} {
		resp := send(declared)
		require.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode, declared)
		var p api.Problem
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&p))
		require.Contains(t, p.Detail, "send Content-Type: application/json", declared)
		require.Contains(t, p.Detail, declared, "the problem quotes what was declared")
	}
}
