package receiver_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/receiver"
	"github.com/heraldhq/herald/signing"
)

type handlerBundle struct {
	*testBundle
	secret signing.Secret
	server *httptest.Server
}

func newSecret(t *testing.T) signing.Secret {
	t.Helper()
	s, err := signing.GenerateHMACSecret()
	require.NoError(t, err)
	return s
}

// setupHandler serves a Handler for source "acme" on loopback.
func setupHandler(t *testing.T, secrets ...signing.Secret) *handlerBundle {
	t.Helper()
	bundle := &handlerBundle{testBundle: setup(t)}
	if len(secrets) == 0 {
		secrets = []signing.Secret{newSecret(t)}
	}
	bundle.secret = secrets[0]
	h, err := receiver.NewHandler(bundle.pool, "acme",
		receiver.VerifyConfig{Secrets: secrets, MaxBodyBytes: 4096, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	bundle.server = httptest.NewServer(h)
	t.Cleanup(bundle.server.Close)
	return bundle
}

// post sends body as webhook id, signed at ts with secrets (none: unsigned),
// and returns the status and the response body.
func post(t *testing.T, url, id string, body []byte, ts time.Time, secrets ...signing.Secret) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if len(secrets) > 0 {
		require.NoError(t, signing.SignHeaders(req.Header, id, ts, body, secrets...))
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	text, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(text)
}

func creditPayload(account string, amount int64) []byte {
	return fmt.Appendf(nil, `{"type":"account.credited","timestamp":"2026-12-02T12:00:00Z","object":{"id":%q,"version":1},"data":{"account":%q,"amount":%d}}`,
		account, account, amount)
}

func (b *testBundle) storedEvents(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM webhook_inbox.events`).Scan(&n))
	return n
}

func TestHandler(t *testing.T) {
	t.Parallel()

	t.Run("StoresTheVerifiedEvent", func(t *testing.T) {
		t.Parallel()
		bundle := setupHandler(t)
		body := []byte(`{"type":"plan.changed","timestamp":"2026-12-02T12:00:00Z","object":{"id":"acct_1","version":7},"data":{"plan":"pro"}}`)

		status, _ := post(t, bundle.server.URL, "msg_1", body, time.Now(), bundle.secret)
		require.Equal(t, http.StatusOK, status)

		var source, typ, objectID string
		var version int64
		var payload []byte
		require.NoError(t, bundle.pool.QueryRow(bundle.ctx, `SELECT source, type, object_id, object_version, payload
FROM webhook_inbox.events WHERE webhook_id = 'msg_1'`).Scan(&source, &typ, &objectID, &version, &payload))
		require.Equal(t, "acme", source)
		require.Equal(t, "plan.changed", typ)
		require.Equal(t, "acct_1", objectID)
		require.EqualValues(t, 7, version)
		require.Equal(t, body, payload, "the raw body is stored byte for byte")
	})

	t.Run("StandardWebhooksPayloadWithoutObject", func(t *testing.T) {
		t.Parallel()
		bundle := setupHandler(t)
		body := []byte(`{"type":"user.created","timestamp":"2026-12-02T12:00:00Z","data":{"id":"u_1"}}`)

		status, _ := post(t, bundle.server.URL, "msg_1", body, time.Now(), bundle.secret)
		require.Equal(t, http.StatusOK, status)

		var objectID *string
		var version *int64
		require.NoError(t, bundle.pool.QueryRow(bundle.ctx, `SELECT object_id, object_version FROM webhook_inbox.events`).Scan(&objectID, &version))
		require.Nil(t, objectID)
		require.Nil(t, version)
	})

	t.Run("SecondCopyIsAcknowledgedAndNotStoredAgain", func(t *testing.T) {
		t.Parallel()
		bundle := setupHandler(t)
		body := creditPayload("acct_1", 100)

		for range 2 {
			status, _ := post(t, bundle.server.URL, "msg_1", body, time.Now(), bundle.secret)
			require.Equal(t, http.StatusOK, status)
		}
		require.Equal(t, 1, bundle.storedEvents(t))
	})

	t.Run("ParallelCopiesAreStoredOnce", func(t *testing.T) {
		t.Parallel()
		bundle := setupHandler(t)
		body := creditPayload("acct_1", 100)

		statuses := make([]int, 8)
		var wg sync.WaitGroup
		for i := range statuses {
			wg.Go(func() {
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, bundle.server.URL, bytes.NewReader(body))
				_ = signing.SignHeaders(req.Header, "msg_1", time.Now(), body, bundle.secret)
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					statuses[i] = resp.StatusCode
					resp.Body.Close()
				}
			})
		}
		wg.Wait()
		for _, s := range statuses {
			require.Equal(t, http.StatusOK, s)
		}
		require.Equal(t, 1, bundle.storedEvents(t))
	})

	t.Run("ForgedStaleAndMalformedRequestsWriteNothing", func(t *testing.T) {
		t.Parallel()
		bundle := setupHandler(t)
		body := creditPayload("acct_1", 100)
		other := newSecret(t)
		now := time.Now()

		signed := func(id string, ts time.Time, b []byte, s signing.Secret) *http.Request {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, bundle.server.URL, bytes.NewReader(body))
			require.NoError(t, err)
			require.NoError(t, signing.SignHeaders(req.Header, id, ts, b, s))
			return req
		}
		cases := map[string]*http.Request{
			"unsigned":         signed("msg_1", now, body, bundle.secret),
			"wrong secret":     signed("msg_1", now, body, other),
			"tampered body":    signed("msg_1", now, []byte(`{"type":"account.credited","data":{"amount":1000000}}`), bundle.secret),
			"stale timestamp":  signed("msg_1", now.Add(-10*time.Minute), body, bundle.secret),
			"future timestamp": signed("msg_1", now.Add(10*time.Minute), body, bundle.secret),
			"bad timestamp":    signed("msg_1", now, body, bundle.secret),
			"bad signature":    signed("msg_1", now, body, bundle.secret),
			"id with a dot":    signed("msg_1", now, body, bundle.secret),
			"swapped id":       signed("msg_1", now, body, bundle.secret),
		}
		cases["unsigned"].Header = http.Header{}
		cases["bad timestamp"].Header.Set(signing.HeaderTimestamp, "yesterday")
		cases["bad signature"].Header.Set(signing.HeaderSignature, "v1,not base64!")
		cases["id with a dot"].Header.Set(signing.HeaderID, "msg.1")
		cases["swapped id"].Header.Set(signing.HeaderID, "msg_2")

		for name, req := range cases {
			status, text := do(t, req)
			require.Equal(t, http.StatusBadRequest, status, name)
			require.Equal(t, "webhook verification failed\n", text, "%s: the response must not tell a forger what failed", name)
		}
		require.Zero(t, bundle.storedEvents(t))
	})

	t.Run("SignedButNotAWebhookPayload", func(t *testing.T) {
		t.Parallel()
		bundle := setupHandler(t)

		for body, reason := range map[string]string{
			`not json`:                             "want a JSON object",
			`[1,2]`:                                "want a JSON object",
			`{"data":{}}`:                          `"type" is missing`,
			`{"type":""}`:                          `"type" is missing`,
			`{"type":"a","timestamp":"yesterday"}`: "not an RFC 3339 time",
			`{"type":"a","object":{"version":1}}`:  `"object" has no string "id"`,
			`{"type":"a","object":{"id":"o","version":1.5}}`: `"object.version" is 1.5`,
			`{"type":"a","object":{"id":"o","version":-1}}`:  `"object.version" is -1`,
			`{"type":"a","object":{"id":"o","version":"7"}}`: `"object.version" is "7"`,
			`{"type":"a\u0000"}`:                             "NUL",
		} {
			status, text := post(t, bundle.server.URL, "msg_1", []byte(body), time.Now(), bundle.secret)
			require.Equal(t, http.StatusBadRequest, status, body)
			require.Contains(t, text, reason, body)
		}
		require.Zero(t, bundle.storedEvents(t))
	})

	t.Run("OversizedBodyIs413", func(t *testing.T) {
		t.Parallel()
		bundle := setupHandler(t)
		body := fmt.Appendf(nil, `{"type":"a","data":%q}`, strings.Repeat("x", 5000))

		status, _ := post(t, bundle.server.URL, "msg_1", body, time.Now(), bundle.secret)
		require.Equal(t, http.StatusRequestEntityTooLarge, status)

		// Without a Content-Length the limit holds while reading.
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, bundle.server.URL, io.MultiReader(bytes.NewReader(body)))
		require.NoError(t, err)
		require.NoError(t, signing.SignHeaders(req.Header, "msg_1", time.Now(), body, bundle.secret))
		status, _ = do(t, req)
		require.Equal(t, http.StatusRequestEntityTooLarge, status)
		require.Zero(t, bundle.storedEvents(t))
	})

	t.Run("OnlyPOST", func(t *testing.T) {
		t.Parallel()
		bundle := setupHandler(t)
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, bundle.server.URL, nil)
		require.NoError(t, err)
		status, _ := do(t, req)
		require.Equal(t, http.StatusMethodNotAllowed, status)
	})

	t.Run("SecretRotationOverlap", func(t *testing.T) {
		t.Parallel()
		oldSecret, newSecret := newSecret(t), newSecret(t)
		bundle := setupHandler(t, oldSecret, newSecret)

		for i, secrets := range [][]signing.Secret{{oldSecret}, {newSecret}, {newSecret, oldSecret}} {
			status, _ := post(t, bundle.server.URL, fmt.Sprintf("msg_%d", i), creditPayload("acct_1", 1), time.Now(), secrets...)
			require.Equal(t, http.StatusOK, status, "signed with secrets set %d", i)
		}
		require.Equal(t, 3, bundle.storedEvents(t))
	})

	t.Run("DatabaseDownIs503", func(t *testing.T) {
		t.Parallel()
		listener, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := listener.Addr().String()
		require.NoError(t, listener.Close())
		pool, err := pgxpool.New(t.Context(), "postgres://postgres@"+addr+"/consumer?sslmode=disable&connect_timeout=5")
		require.NoError(t, err)
		t.Cleanup(pool.Close)

		secret := newSecret(t)
		h, err := receiver.NewHandler(pool, "acme",
			receiver.VerifyConfig{Secrets: []signing.Secret{secret}, Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, err)
		server := httptest.NewServer(h)
		t.Cleanup(server.Close)

		status, text := post(t, server.URL, "msg_1", creditPayload("acct_1", 1), time.Now(), secret)
		require.Equal(t, http.StatusServiceUnavailable, status)
		require.Contains(t, text, "retry later")
	})

	t.Run("RejectsBadConfig", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		secrets := []signing.Secret{newSecret(t)}

		_, err := receiver.NewHandler(bundle.pool, "", receiver.VerifyConfig{Secrets: secrets})
		require.ErrorContains(t, err, "source is required")
		_, err = receiver.NewHandler(bundle.pool, "acme", receiver.VerifyConfig{})
		require.ErrorIs(t, err, signing.ErrNoSecrets)
		_, err = receiver.NewHandler(bundle.pool, "acme", receiver.VerifyConfig{Secrets: []signing.Secret{{}}})
		require.ErrorIs(t, err, signing.ErrInvalidSecret)
		_, err = receiver.NewHandler(bundle.pool, "acme", receiver.VerifyConfig{Secrets: secrets, MaxBodyBytes: -1})
		require.ErrorContains(t, err, "must not be negative")
	})
}

func TestVerify(t *testing.T) {
	t.Parallel()
	secret := newSecret(t)
	body := creditPayload("acct_1", 100)
	request := func(t *testing.T, ts time.Time, b []byte) *http.Request {
		req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/webhooks", bytes.NewReader(b))
		require.NoError(t, signing.SignHeaders(req.Header, "msg_1", ts, body, secret))
		return req
	}
	cfg := receiver.VerifyConfig{Secrets: []signing.Secret{secret}, MaxBodyBytes: 1000}

	t.Run("Function", func(t *testing.T) {
		t.Parallel()
		got, err := receiver.Verify(request(t, time.Now(), body), cfg)
		require.NoError(t, err)
		require.Equal(t, body, got)

		_, err = receiver.Verify(request(t, time.Now().Add(-time.Hour), body), cfg)
		require.ErrorIs(t, err, signing.ErrTimestampTooOld)

		_, err = receiver.Verify(request(t, time.Now(), append(body, ' ')), cfg)
		require.ErrorIs(t, err, signing.ErrNoMatchingSignature)

		_, err = receiver.Verify(request(t, time.Now(), bytes.Repeat([]byte("x"), 1001)), cfg)
		require.ErrorIs(t, err, receiver.ErrBodyTooLarge)

		_, err = receiver.Verify(request(t, time.Now(), body), receiver.VerifyConfig{})
		require.ErrorIs(t, err, signing.ErrNoSecrets)
	})

	t.Run("Middleware", func(t *testing.T) {
		t.Parallel()
		cfg := cfg
		cfg.Logger = slog.New(slog.DiscardHandler)
		mw, err := receiver.VerifyMiddleware(cfg)
		require.NoError(t, err)
		var seen []byte
		h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seen, _ = io.ReadAll(r.Body)
			w.WriteHeader(http.StatusAccepted)
		}))

		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, request(t, time.Now(), body))
		require.Equal(t, http.StatusAccepted, rec.Code)
		require.Equal(t, body, seen, "the next handler reads the verified body")

		seen = nil
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, request(t, time.Now(), []byte(`{"type":"forged"}`)))
		require.Equal(t, http.StatusBadRequest, rec.Code)
		require.Nil(t, seen, "a forged request never reaches the next handler")

		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, request(t, time.Now(), bytes.Repeat([]byte("x"), 1001)))
		require.Equal(t, http.StatusRequestEntityTooLarge, rec.Code)

		_, err = receiver.VerifyMiddleware(receiver.VerifyConfig{})
		require.ErrorIs(t, err, signing.ErrNoSecrets)
	})
}
