package api_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/api"
	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/internal/testclock"
	"github.com/heraldhq/herald/limits"
	"github.com/heraldhq/herald/store"
)

var t0 = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

// limitedConfig is how a test sets the limits of the API servers it
// starts: the endpoint cap of their store and their limiter's settings.
type limitedConfig struct {
	maxEndpoints int
	limits       limits.Config
}

// withLimits is b with a second API server on the same database (as
// another replica would be) whose store and limiter follow cfg.
func (b *testBundle) withLimits(t *testing.T, cfg limitedConfig) *testBundle {
	t.Helper()
	box, err := secretbox.Parse(b.secretKey)
	require.NoError(t, err)
	st, err := store.New(b.pool, store.Config{Box: box, MaxEndpointsPerTenant: cfg.maxEndpoints})
	require.NoError(t, err)
	limiter, err := limits.New(b.pool, cfg.limits)
	require.NoError(t, err)
	s, err := api.New(api.Config{Pool: b.pool, Store: st, Limits: limiter, Logger: slog.New(slog.DiscardHandler), PublicURL: "http://herald.test"})
	require.NoError(t, err)
	server := httptest.NewServer(s.Handler())
	t.Cleanup(server.Close)
	c := *b
	c.handler, c.server = s.Handler(), server
	return &c
}

// slowPublishes is a publish limit of one every 10 s in bursts of 3, on
// clock, judged by the tenant only unless share is set.
func slowPublishes(clock *testclock.Clock, share float64) limitedConfig {
	return limitedConfig{limits: limits.Config{
		Rates:           map[limits.Action]limits.Rate{limits.Publish: {PerSecond: 0.1, Burst: 3}},
		CredentialShare: share,
		Now:             clock.Now,
	}}
}

func publishBody(objectID string) map[string]any {
	return map[string]any{"event_type": "invoice.paid", "object_id": objectID, "data": map[string]any{}}
}

// requireRateLimited checks a 429 of the rate limits: its Retry-After in
// seconds and the limit its problem names.
func requireRateLimited(t *testing.T, resp response, retryAfter int, limit api.ProblemLimit) api.Problem {
	t.Helper()
	p := resp.Problem(t, http.StatusTooManyRequests)
	require.Equal(t, "urn:herald:problem:rate-limited", p.Type)
	require.Equal(t, strconv.Itoa(retryAfter), resp.Header.Get("Retry-After"))
	require.NotNil(t, p.Limit, "the problem names the limit: %s", resp.Body)
	require.Equal(t, limit, *p.Limit)
	return p
}

// A tenant over its publish limit gets 429 with a Retry-After that is
// right to the second, and a problem naming the limit; another tenant
// publishes as before, and after Retry-After the first one does too.
func TestPublishOverTheTenantLimit(t *testing.T) {
	t.Parallel()
	clock := testclock.New(t0)
	b := setup(t).withLimits(t, slowPublishes(clock, -1))
	for i := range 3 {
		resp := b.do(t, b.acme, "POST", "/v1/tenants/acme/messages", publishBody("inv_"+strconv.Itoa(i)))
		require.Equal(t, http.StatusAccepted, resp.Status, "publish %d of the burst: %s", i+1, resp.Body)
	}
	resp := b.do(t, b.acme, "POST", "/v1/tenants/acme/messages", publishBody("inv_4"))
	p := requireRateLimited(t, resp, 10, api.ProblemLimit{Action: limits.Publish, Scope: "tenant", PerSecond: 0.1, Burst: 3})
	require.Contains(t, p.Detail, `tenant "acme" has used up its limit on publishes (one every 10 s, in bursts of up to 3, shared by every api replica)`)
	require.Contains(t, p.Detail, "ask your operator to raise the tenant's limits.publish")
	var messages int
	require.NoError(t, b.pool.QueryRow(b.ctx, "SELECT count(*) FROM herald.messages WHERE tenant_id = 'acme'").Scan(&messages))
	require.Equal(t, 3, messages, "the refused publish published nothing")

	resp = b.do(t, b.globex, "POST", "/v1/tenants/globex/messages", publishBody("inv_1"))
	require.Equal(t, http.StatusAccepted, resp.Status, "another tenant is not affected: %s", resp.Body)

	clock.Set(t0.Add(9 * time.Second))
	requireRateLimited(t, b.do(t, b.acme, "POST", "/v1/tenants/acme/messages", publishBody("inv_4")), 1,
		api.ProblemLimit{Action: limits.Publish, Scope: "tenant", PerSecond: 0.1, Burst: 3})
	clock.Set(t0.Add(10 * time.Second))
	resp = b.do(t, b.acme, "POST", "/v1/tenants/acme/messages", publishBody("inv_4"))
	require.Equal(t, http.StatusAccepted, resp.Status, "after Retry-After it goes through: %s", resp.Body)

	resp = b.do(t, b.operator, "POST", "/v1/tenants/acme/messages", publishBody("inv_5"))
	p = requireRateLimited(t, resp, 10, api.ProblemLimit{Action: limits.Publish, Scope: "tenant", PerSecond: 0.1, Burst: 3})
	require.Contains(t, p.Detail, `PATCH /v1/tenants/acme {"limits": {"publish": {"per_second": …, "burst": …}}}`, "an operator is told how to raise it")
}

// Two api instances on one database share a tenant's limit: publishes
// spread over both spend one burst, and both refuse the next.
func TestTenantLimitIsSharedByAPIInstances(t *testing.T) {
	t.Parallel()
	clock := testclock.New(t0)
	base := setup(t)
	one, two := base.withLimits(t, slowPublishes(clock, -1)), base.withLimits(t, slowPublishes(clock, -1))
	for i, b := range []*testBundle{one, two, one} {
		resp := b.do(t, b.acme, "POST", "/v1/tenants/acme/messages", publishBody("inv_"+strconv.Itoa(i)))
		require.Equal(t, http.StatusAccepted, resp.Status, "publish %d: %s", i+1, resp.Body)
	}
	for _, b := range []*testBundle{two, one} {
		requireRateLimited(t, b.do(t, b.acme, "POST", "/v1/tenants/acme/messages", publishBody("inv_4")), 10,
			api.ProblemLimit{Action: limits.Publish, Scope: "tenant", PerSecond: 0.1, Burst: 3})
	}
}

// Each key may use half its tenant's limit: with a burst of 4, a key
// that has published twice is refused by its own limit while another key
// of the tenant publishes; a third key then finds the tenant's burst spent.
// A portal session is a credential of its own too.
func TestRateLimitsPerKey(t *testing.T) {
	t.Parallel()
	clock := testclock.New(t0)
	cfg := slowPublishes(clock, 0.5)
	cfg.limits.Rates[limits.Publish] = limits.Rate{PerSecond: 0.1, Burst: 4}
	cfg.limits.Rates[limits.TestEvent] = limits.Rate{PerSecond: 1, Burst: 2}
	b := setup(t).withLimits(t, cfg)
	_, second, err := auth.CreateAPIKey(b.ctx, b.pool, "acme", "second")
	require.NoError(t, err)
	_, third, err := auth.CreateAPIKey(b.ctx, b.pool, "acme", "third")
	require.NoError(t, err)

	for i := range 2 {
		require.Equal(t, http.StatusAccepted, b.do(t, b.acme, "POST", "/v1/tenants/acme/messages", publishBody("a"+strconv.Itoa(i))).Status)
	}
	p := requireRateLimited(t, b.do(t, b.acme, "POST", "/v1/tenants/acme/messages", publishBody("a3")), 20,
		api.ProblemLimit{Action: limits.Publish, Scope: "api_key", PerSecond: 0.05, Burst: 2})
	require.Contains(t, p.Detail, "this API key has used up its own limit on publishes for tenant \"acme\"")
	for i := range 2 {
		resp := b.do(t, second, "POST", "/v1/tenants/acme/messages", publishBody("b"+strconv.Itoa(i)))
		require.Equal(t, http.StatusAccepted, resp.Status, "another key of the tenant has its own share: %s", resp.Body)
	}
	requireRateLimited(t, b.do(t, third, "POST", "/v1/tenants/acme/messages", publishBody("c1")), 10,
		api.ProblemLimit{Action: limits.Publish, Scope: "tenant", PerSecond: 0.1, Burst: 4})

	// Test events, by a key and by a portal session of the same tenant.
	e := b.createEndpoint(t, b.acme, "acme", map[string]any{"url": "https://example.com/hook"})
	link, err := auth.MintPortalLink(b.ctx, b.pool, "acme", time.Hour)
	require.NoError(t, err)
	session, err := auth.RedeemPortalLink(b.ctx, b.pool, link.Token, time.Hour)
	require.NoError(t, err)
	test := "/v1/tenants/acme/endpoints/" + e.ID + "/test"
	require.Equal(t, http.StatusAccepted, b.do(t, session.Token, "POST", test, nil).Status)
	p = requireRateLimited(t, b.do(t, session.Token, "POST", test, nil), 2,
		api.ProblemLimit{Action: limits.TestEvent, Scope: "portal_session", PerSecond: 0.5, Burst: 1})
	require.Contains(t, p.Detail, "this portal session has used up its own limit on test events")
	require.Equal(t, http.StatusAccepted, b.do(t, b.acme, "POST", test, nil).Status)
	requireRateLimited(t, b.do(t, second, "POST", test, nil), 1,
		api.ProblemLimit{Action: limits.TestEvent, Scope: "tenant", PerSecond: 1, Burst: 2})
}

// Resends and replays are limited too, each on its own budget.
func TestResendAndReplayLimits(t *testing.T) {
	t.Parallel()
	clock := testclock.New(t0)
	b := setup(t).withLimits(t, limitedConfig{limits: limits.Config{
		Rates: map[limits.Action]limits.Rate{
			limits.Resend: {PerSecond: 0.5, Burst: 1},
			limits.Replay: {PerSecond: 1.0 / 60, Burst: 1},
		},
		CredentialShare: -1,
		Now:             clock.Now,
	}})
	e := b.createEndpoint(t, b.acme, "acme", map[string]any{"url": "https://example.com/hook"})
	m := b.publish(t, b.acme, "acme", "invoice.paid", "inv_1")
	b.addDelivery(t, m.ID, uuid.MustParse(e.ID), "failed", "failed")

	resend := "/v1/tenants/acme/messages/" + m.ID + "/endpoints/" + e.ID + "/resend"
	require.Equal(t, http.StatusAccepted, b.do(t, b.acme, "POST", resend, nil).Status)
	requireRateLimited(t, b.do(t, b.acme, "POST", resend, nil), 2,
		api.ProblemLimit{Action: limits.Resend, Scope: "tenant", PerSecond: 0.5, Burst: 1})

	replays := "/v1/tenants/acme/endpoints/" + e.ID + "/replays"
	since := map[string]any{"since": time.Now().Add(-time.Hour)}
	require.Equal(t, http.StatusAccepted, b.do(t, b.acme, "POST", replays, since).Status)
	requireRateLimited(t, b.do(t, b.acme, "POST", replays, since), 60,
		api.ProblemLimit{Action: limits.Replay, Scope: "tenant", PerSecond: 1.0 / 60, Burst: 1})
	clock.Set(t0.Add(2 * time.Second))
	require.Equal(t, http.StatusAccepted, b.do(t, b.acme, "POST", resend, nil).Status, "resends have their own budget")
}

// A tenant shows the limits in force, defaults included; only an operator
// sets its own, which show as overrides until removed again.
func TestTenantLimitsAreOperatorManaged(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var tenant map[string]any
	b.do(t, b.acme, "GET", "/v1/tenants/acme", nil).Decode(t, &tenant)
	require.Equal(t, map[string]any{
		"max_endpoints": 50.0,
		"publish":       map[string]any{"per_second": 100.0, "burst": 200.0},
		"resend":        map[string]any{"per_second": 10.0, "burst": 100.0},
		"replay":        map[string]any{"per_second": 0.1, "burst": 10.0},
		"test_event":    map[string]any{"per_second": 1.0, "burst": 10.0},
		// The dispatchers' default --retention, 30 days.
		"retention_seconds": 2592000.0,
		// The dispatchers' default: half their workers, unknown here.
		"max_inflight": nil,
	}, tenant["limits"])
	require.Equal(t, map[string]any{}, tenant["limit_overrides"])
	require.Equal(t, 0.0, tenant["endpoint_count"])

	raise := map[string]any{"limits": map[string]any{"max_endpoints": 500, "publish": map[string]any{"per_second": 1000, "burst": 5000}}}
	p := b.do(t, b.acme, "PATCH", "/v1/tenants/acme", raise).Problem(t, http.StatusForbidden)
	require.Contains(t, p.Detail, "only an operator API key may rename a tenant or change its limits")

	b.do(t, b.operator, "PATCH", "/v1/tenants/acme", raise).Decode(t, &tenant)
	require.Equal(t, map[string]any{"max_endpoints": 500.0, "publish": map[string]any{"per_second": 1000.0, "burst": 5000.0}}, tenant["limit_overrides"])
	require.Equal(t, 500.0, tenant["limits"].(map[string]any)["max_endpoints"])
	require.Equal(t, "Acme", tenant["name"], "the name is left as it is")

	b.do(t, b.operator, "PATCH", "/v1/tenants/acme", map[string]any{"limits": map[string]any{"publish": nil}}).Decode(t, &tenant)
	require.Equal(t, map[string]any{"max_endpoints": 500.0}, tenant["limit_overrides"])
	require.Equal(t, map[string]any{"per_second": 100.0, "burst": 200.0}, tenant["limits"].(map[string]any)["publish"])

	b.do(t, b.operator, "PATCH", "/v1/tenants/acme", map[string]any{"limits": map[string]any{"max_inflight": 20}}).Decode(t, &tenant)
	require.Equal(t, 20.0, tenant["limit_overrides"].(map[string]any)["max_inflight"])
	require.Equal(t, 20.0, tenant["limits"].(map[string]any)["max_inflight"])
	b.do(t, b.operator, "PATCH", "/v1/tenants/acme", map[string]any{"limits": map[string]any{"max_inflight": nil}}).Decode(t, &tenant)
	require.Nil(t, tenant["limits"].(map[string]any)["max_inflight"], "null brings the dispatchers' default back")
	require.NotContains(t, tenant["limit_overrides"], "max_inflight")

	for _, tt := range []struct {
		limits         map[string]any
		field, problem string
	}{
		{map[string]any{"max_endpoints": -1}, "limits.max_endpoints", "0 or more, or null for the default"},
		{map[string]any{"max_endpoints": 2.5}, "limits.max_endpoints", "whole number"},
		{map[string]any{"max_endpoints": 2_000_000}, "limits.max_endpoints", "from 0 to 1000000"},
		{map[string]any{"max_inflight": 0}, "limits.max_inflight", "1 or more, or null for the dispatchers' default"},
		{map[string]any{"max_inflight": "10"}, "limits.max_inflight", "whole number of attempts"},
		{map[string]any{"max_inflight": 2_000_000}, "limits.max_inflight", "from 1 to 1000000"},
		{map[string]any{"publish": map[string]any{"per_second": 0, "burst": 1}}, "limits.publish", "per_second is 0"},
		{map[string]any{"publish": map[string]any{"per_second": 1}}, "limits.publish", "burst is 0"},
		{map[string]any{"resend": map[string]any{"rate": 1}}, "limits.resend", `{"per_second": <number>, "burst": <whole number>}`},
		{map[string]any{"deliver": nil}, "limits.deliver", "it holds max_endpoints, max_inflight, publish, resend, replay, test_event and retention_seconds"},
	} {
		p := b.do(t, b.operator, "PATCH", "/v1/tenants/acme", map[string]any{"limits": tt.limits}).Problem(t, http.StatusUnprocessableEntity)
		require.Equal(t, tt.field, p.Field, "%v", tt.limits)
		require.Contains(t, p.Detail, tt.problem)
	}
}

// The endpoint cap: the default refuses the endpoint beyond it with 409
// and a sentence saying how to get past it; an operator's cap replaces it.
func TestEndpointCapThroughTheAPI(t *testing.T) {
	t.Parallel()
	b := setup(t).withLimits(t, limitedConfig{maxEndpoints: 2})
	for range 2 {
		b.createEndpoint(t, b.acme, "acme", map[string]any{"url": "https://example.com/hook"})
	}
	resp := b.do(t, b.acme, "POST", "/v1/tenants/acme/endpoints", map[string]any{"url": "https://example.com/hook"})
	p := resp.Problem(t, http.StatusConflict)
	require.Equal(t, "urn:herald:problem:endpoint-limit-reached", p.Type)
	require.Equal(t, `tenant "acme" has 2 endpoints and the default cap (--max-endpoints-per-tenant) is 2; delete an endpoint it no longer needs, or have an operator raise the cap with PATCH /v1/tenants/acme {"limits": {"max_endpoints": …}}`, p.Detail)
	b.createEndpoint(t, b.globex, "globex", map[string]any{"url": "https://example.com/hook"})

	var tenant map[string]any
	b.do(t, b.operator, "PATCH", "/v1/tenants/acme", map[string]any{"limits": map[string]any{"max_endpoints": 3}}).Decode(t, &tenant)
	require.Equal(t, 2.0, tenant["endpoint_count"])
	b.createEndpoint(t, b.acme, "acme", map[string]any{"url": "https://example.com/hook"})
	p = b.do(t, b.acme, "POST", "/v1/tenants/acme/endpoints", map[string]any{"url": "https://example.com/hook"}).Problem(t, http.StatusConflict)
	require.Contains(t, p.Detail, "has 3 endpoints and the cap an operator set for it is 3")
}

// Two api instances creating endpoints for one tenant at once, ten
// requests at a cap of 3: exactly 3 are created, the rest get 409.
func TestEndpointCapHoldsAcrossAPIInstances(t *testing.T) {
	t.Parallel()
	base := setup(t)
	replicas := []*testBundle{base.withLimits(t, limitedConfig{maxEndpoints: 3}), base.withLimits(t, limitedConfig{maxEndpoints: 3})}
	statuses := make([]int, 10)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range statuses {
		wg.Go(func() {
			<-start
			b := replicas[i%2]
			statuses[i] = b.do(t, b.acme, "POST", "/v1/tenants/acme/endpoints", map[string]any{"url": "https://example.com/hook"}).Status
		})
	}
	close(start)
	wg.Wait()
	created := 0
	for _, status := range statuses {
		if status == http.StatusCreated {
			created++
			continue
		}
		require.Equal(t, http.StatusConflict, status)
	}
	require.Equal(t, 3, created, "statuses %v", statuses)
	var count int
	require.NoError(t, base.pool.QueryRow(base.ctx, "SELECT count(*) FROM herald.endpoints WHERE tenant_id = 'acme'").Scan(&count))
	require.Equal(t, 3, count)
}
