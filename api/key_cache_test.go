package api_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/api"
	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/store"
)

// replica starts another api on b's database with a key cache of its own,
// listening for revocations, and returns a bundle that sends requests to it.
func (b *testBundle) replica(t *testing.T) *testBundle {
	t.Helper()
	ctx, cancel := context.WithCancel(b.ctx)
	cache := auth.NewKeyCache(auth.KeyCacheConfig{})
	listened := make(chan struct{})
	go func() {
		defer close(listened)
		cache.Listen(ctx, b.pool.Config().ConnConfig, slog.New(slog.DiscardHandler))
	}()
	t.Cleanup(func() { cancel(); <-listened })
	require.Eventually(t, cache.Listening, 10*time.Second, 5*time.Millisecond, "the key cache never subscribed")

	box, err := secretbox.Parse(b.secretKey)
	require.NoError(t, err)
	st, err := store.New(b.pool, store.Config{Box: box})
	require.NoError(t, err)
	s, err := api.New(api.Config{Pool: b.pool, Store: st, Logger: slog.New(slog.DiscardHandler), KeyCache: cache})
	require.NoError(t, err)
	server := httptest.NewServer(s.Handler())
	t.Cleanup(server.Close)
	r := *b
	r.handler, r.server = s.Handler(), server
	return &r
}

// Two replicas cache a key; after a revocation on one, that one refuses
// the key on its next request and the other as soon as the notification
// reaches it.
func TestRevocationReachesEveryReplica(t *testing.T) {
	t.Parallel()
	b := setup(t)
	one, two := b.replica(t), b.replica(t)

	var created struct {
		ID  string `json:"id"`
		Key string `json:"key"`
	}
	resp := one.do(t, b.acme, "POST", "/v1/tenants/acme/api-keys", map[string]string{"name": "producer"})
	require.Equal(t, http.StatusCreated, resp.Status, "%s", resp.Body)
	resp.Decode(t, &created)
	for _, replica := range []*testBundle{one, two, one, two} {
		require.Equal(t, http.StatusOK, replica.do(t, created.Key, "GET", "/v1/tenants/acme/messages", nil).Status, "the key works and is cached")
	}

	require.Equal(t, http.StatusOK, one.do(t, b.acme, "DELETE", "/v1/tenants/acme/api-keys/"+created.ID, nil).Status)
	one.do(t, created.Key, "GET", "/v1/tenants/acme/messages", nil).Problem(t, http.StatusUnauthorized)
	// The other replica hears of it when the notification reaches it:
	// 4 to 15 ms on this machine under a load average of 20.
	start := time.Now()
	two.refusesSoon(t, created.Key, "/v1/tenants/acme/messages")
	t.Logf("the other replica refused the revoked key %s after the revocation", time.Since(start))
	require.Equal(t, http.StatusOK, two.do(t, b.acme, "GET", "/v1/tenants/acme/messages", nil).Status, "other keys still work")

	// A tenant's deletion takes its cached keys with it.
	require.Equal(t, http.StatusOK, two.do(t, b.globex, "GET", "/v1/tenants/globex/messages", nil).Status)
	require.Equal(t, http.StatusAccepted, one.do(t, b.operator, "DELETE", "/v1/tenants/globex", nil).Status)
	one.do(t, b.globex, "GET", "/v1/tenants/globex/messages", nil).Problem(t, http.StatusUnauthorized)
	two.refusesSoon(t, b.globex, "/v1/tenants/globex/messages")
}

// refusesSoon waits until a request with key to path is refused with 401,
// at most keyNotificationBound.
func (b *testBundle) refusesSoon(t *testing.T, key, path string) {
	t.Helper()
	require.Eventually(t, func() bool {
		return b.do(t, key, "GET", path, nil).Status == http.StatusUnauthorized
	}, keyNotificationBound, time.Millisecond, "the replica kept accepting a key revoked elsewhere")
}

// keyNotificationBound is how long a revocation may take to reach another
// replica in these tests: the notification's delivery, with a margin for a
// loaded machine.
const keyNotificationBound = 2 * time.Second
