package sim

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/signing"
)

// Client mistakes get a 4xx that names the problem, never a 500.
func TestHandlerRejectsBadRequests(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.cfg.Accounts = 10
	pool, err := openFresh(ctx, b.newDB, "bad_requests", b.cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	secret, err := signing.GenerateHMACSecret()
	require.NoError(t, err)
	srv := httptest.NewServer(&handler{design: designs()[5], db: pool, verifier: signing.Verifier{Secrets: []signing.Secret{secret}}, accounts: 10})
	t.Cleanup(srv.Close)

	post := func(t *testing.T, body []byte, sign bool) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(body))
		require.NoError(t, err)
		if sign {
			require.NoError(t, signing.SignHeaders(req.Header, "evt_000001", time.Now(), body, secret))
		}
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var msg bytes.Buffer
		_, _ = msg.ReadFrom(resp.Body)
		return resp.StatusCode, msg.String()
	}

	good := []byte(`{"type":"account.plan_changed","timestamp":"2026-12-02T12:00:00Z","object":{"id":"acct_0003","version":1},"data":{"account":3,"plan":"plan_v1"}}`)
	tests := []struct {
		name   string
		body   []byte
		sign   bool
		status int
		want   string
	}{
		{"unsigned", good, false, http.StatusBadRequest, "webhook-id"},
		{"not JSON", []byte("{"), true, http.StatusBadRequest, "bad payload"},
		{"unknown type", []byte(`{"type":"x","object":{"id":"acct_0003"},"data":{"account":3}}`), true, http.StatusBadRequest, `type "x"`},
		{"account out of range", []byte(`{"type":"account.credited","object":{"id":"acct_0042"},"data":{"account":42,"credits":100}}`), true, http.StatusBadRequest, "one of the 10 accounts"},
		{"plan without version", []byte(`{"type":"account.plan_changed","object":{"id":"acct_0003"},"data":{"account":3,"plan":"p"}}`), true, http.StatusBadRequest, "object.version"},
		{"too large", bytes.Repeat([]byte("a"), maxBody+1), true, http.StatusRequestEntityTooLarge, "larger than"},
		{"good", good, true, http.StatusOK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, msg := post(t, tt.body, tt.sign)
			require.Equal(t, tt.status, status, msg)
			require.True(t, strings.Contains(msg, tt.want), "message %q should mention %q", msg, tt.want)
		})
	}

	resp, err := srv.Client().Get(srv.URL)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}
