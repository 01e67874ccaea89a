package portal_test

import (
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/internal/testclock"
	"github.com/heraldhq/herald/limits"
	"github.com/heraldhq/herald/portal"
	"github.com/heraldhq/herald/store"
)

// setupLimited is setup with a store whose endpoint cap is maxEndpoints
// and a limiter configured by cfg.
func setupLimited(t *testing.T, maxEndpoints int, cfg limits.Config) *testBundle {
	t.Helper()
	pool := pgtest.NewPool(t)
	box, err := secretbox.Parse(secretbox.Generate())
	require.NoError(t, err)
	st, err := store.New(pool, store.Config{Box: box, MaxEndpointsPerTenant: maxEndpoints})
	require.NoError(t, err)
	limiter, err := limits.New(pool, cfg)
	require.NoError(t, err)
	p, err := portal.New(portal.Config{Pool: pool, Store: st, Limits: limiter})
	require.NoError(t, err)
	r := chi.NewRouter()
	r.Mount(portal.Path, p)
	server := httptest.NewServer(r)
	t.Cleanup(server.Close)
	return &testBundle{pool: pool, store: st, server: server}
}

// A customer adding an endpoint beyond the tenant's cap gets the form
// back (409) saying how many it has, the cap, and what to do.
func TestPortalEndpointCap(t *testing.T) {
	t.Parallel()
	b := setupLimited(t, 1, limits.Config{})
	b.fixture(t, "acme")
	br := b.signIn(t, "acme")
	resp := br.post("/portal/endpoints", url.Values{"csrf": {br.csrf()}, "url": {"https://acme.example.com/more"}})
	require.Equal(t, http.StatusConflict, resp.StatusCode, resp.body)
	require.Contains(t, html.UnescapeString(resp.body), "Your account has reached its limit of 1 endpoints, so this one was not added. Delete an endpoint you no longer use, or ask the team that runs this service to raise the limit.")
	require.Contains(t, resp.body, `value="https://acme.example.com/more"`, "what was typed is kept")
}

// Test events, resends and replays from the portal are limited per
// session and per tenant: over the limit the person gets a 429 page with
// Retry-After saying how long to wait.
func TestPortalRateLimits(t *testing.T) {
	t.Parallel()
	clock := testclock.New(time.Now())
	b := setupLimited(t, 0, limits.Config{
		Rates: map[limits.Action]limits.Rate{
			limits.TestEvent: {PerSecond: 0.2, Burst: 4},
			limits.Resend:    {PerSecond: 0.5, Burst: 1},
			limits.Replay:    {PerSecond: 0.1, Burst: 1},
		},
		Now: clock.Now,
	})
	f := b.fixture(t, "acme")
	br, other := b.signIn(t, "acme"), b.signIn(t, "acme")
	token, otherToken := br.csrf(), other.csrf()
	test := "/portal/endpoints/" + f.endpoint.String() + "/test"

	for range 2 {
		resp := br.post(test, url.Values{"csrf": {token}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, resp.body)
	}
	resp := br.post(test, url.Values{"csrf": {token}})
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, resp.body)
	require.Equal(t, "10", resp.Header.Get("Retry-After"))
	require.Contains(t, html.UnescapeString(resp.body), "This browser session may make test events at one every 10 s, in bursts of up to 2, its share of your account's limit, and has used them up. Wait 10 seconds, then try again.")

	for range 2 {
		resp := other.post(test, url.Values{"csrf": {otherToken}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, "another session has its own share: %s", resp.body)
	}
	b2 := b.signIn(t, "acme")
	resp = b2.post(test, url.Values{"csrf": {b2.csrf()}})
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, resp.body)
	require.Equal(t, "5", resp.Header.Get("Retry-After"))
	require.Contains(t, html.UnescapeString(resp.body), "Your account may make test events at one every 5 s, in bursts of up to 4, and has used them up. Wait 5 seconds")

	resend := "/portal/deliveries/" + f.delivery.String() + "/resend"
	require.Equal(t, http.StatusSeeOther, br.post(resend, url.Values{"csrf": {token}}).StatusCode)
	resp = br.post(resend, url.Values{"csrf": {token}})
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, resp.body)
	require.Contains(t, resp.body, "Too many resends")

	replays := "/portal/endpoints/" + f.endpoint.String() + "/replays"
	require.Equal(t, http.StatusSeeOther, br.post(replays, url.Values{"csrf": {token}, "since": {"1h"}}).StatusCode)
	resp = br.post(replays, url.Values{"csrf": {token}, "since": {"1h"}})
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, resp.body)
	require.Contains(t, resp.body, "Too many replays")
}
