package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/auth"
)

// A tenant's own retention is set by an operator only, may only shorten
// the dispatchers' --retention, down to the retry window plus one
// partition interval, and shows as the retention in force.
func TestTenantRetentionIsOperatorManagedAndOnlyShorter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	week := map[string]any{"limits": map[string]any{"retention_seconds": 7 * 24 * 3600}}
	link, err := auth.MintPortalLink(b.ctx, b.pool, "acme", 0)
	require.NoError(t, err)
	session, err := auth.RedeemPortalLink(b.ctx, b.pool, link.Token, 0)
	require.NoError(t, err)
	for who, key := range map[string]string{"tenant key": b.acme, "portal session": session.Token} {
		b.do(t, key, "PATCH", "/v1/tenants/acme", week).Problem(t, http.StatusForbidden)
		require.Equal(t, 2592000.0, b.do(t, b.acme, "GET", "/v1/tenants/acme", nil).JSON(t)["limits"].(map[string]any)["retention_seconds"], who)
	}

	var tenant map[string]any
	b.do(t, b.operator, "PATCH", "/v1/tenants/acme", week).Decode(t, &tenant)
	require.Equal(t, 604800.0, tenant["limits"].(map[string]any)["retention_seconds"])
	require.Equal(t, map[string]any{"retention_seconds": 604800.0}, tenant["limit_overrides"])
	b.do(t, b.acme, "GET", "/v1/tenants/acme", nil).Decode(t, &tenant)
	require.Equal(t, 604800.0, tenant["limits"].(map[string]any)["retention_seconds"], "the tenant sees its retention")
	b.do(t, b.globex, "GET", "/v1/tenants/globex", nil).Decode(t, &tenant)
	require.Equal(t, 2592000.0, tenant["limits"].(map[string]any)["retention_seconds"], "other tenants keep the global one")

	for _, tt := range []struct {
		value   any
		problem string
	}{
		{30 * 24 * 3600, "is not shorter than the dispatchers' --retention (720h0m0s, 2592000 seconds)"},
		{60 * 24 * 3600, "give less than 2592000 seconds, or null for the global retention"},
		{95 * 3600, "is shorter than the retry window (72h0m0s) plus one partition interval (24h0m0s)"},
		{3600, "give at least 345600 seconds"},
		{0, "more than 0, or null for the global retention"},
		{1.5, "whole number of seconds"},
		{"7d", "whole number of seconds"},
	} {
		p := b.do(t, b.operator, "PATCH", "/v1/tenants/acme", map[string]any{"limits": map[string]any{"retention_seconds": tt.value}}).Problem(t, http.StatusUnprocessableEntity)
		require.Equal(t, "limits.retention_seconds", p.Field, "%v", tt.value)
		require.Contains(t, p.Detail, tt.problem, "%v", tt.value)
	}

	b.do(t, b.operator, "PATCH", "/v1/tenants/acme", map[string]any{"limits": map[string]any{"retention_seconds": nil}}).Decode(t, &tenant)
	require.Equal(t, 2592000.0, tenant["limits"].(map[string]any)["retention_seconds"], "null brings the global retention back")
	require.Equal(t, map[string]any{}, tenant["limit_overrides"])
}

// The api judges by the settings the dispatchers recorded, not defaults
// of its own.
func TestTenantRetentionFollowsTheDispatchersSettings(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.pool.Exec(b.ctx, `UPDATE herald.retention_settings SET retention = interval '10 days', retry_window = interval '1 day', partition_interval = interval '1 hour', recorded_at = now()`)
	require.NoError(t, err)
	require.Equal(t, 864000.0, b.do(t, b.acme, "GET", "/v1/tenants/acme", nil).JSON(t)["limits"].(map[string]any)["retention_seconds"])
	p := b.do(t, b.operator, "PATCH", "/v1/tenants/acme", map[string]any{"limits": map[string]any{"retention_seconds": 10 * 24 * 3600}}).Problem(t, http.StatusUnprocessableEntity)
	require.Contains(t, p.Detail, "240h0m0s, 864000 seconds")
	got := b.do(t, b.operator, "PATCH", "/v1/tenants/acme", map[string]any{"limits": map[string]any{"retention_seconds": 25 * 3600}}).JSON(t)
	require.Equal(t, 90000.0, got["limits"].(map[string]any)["retention_seconds"])
}

// A replay that reaches past the tenant's retention is refused with the
// earliest time it may start from.
func TestReplayBeforeTheRetentionHorizonIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	endpoint := b.createEndpoint(t, b.acme, "acme", map[string]any{"url": "https://example.com/hook"})
	path := "/v1/tenants/acme/endpoints/" + endpoint.ID + "/replays"

	before := time.Now()
	p := b.do(t, b.acme, "POST", path, map[string]any{"since": before.Add(-31 * 24 * time.Hour)}).Problem(t, http.StatusUnprocessableEntity)
	require.Equal(t, "since", p.Field)
	require.NotNil(t, p.EarliestReplayableAt)
	require.WithinDuration(t, before.Add(-30*24*time.Hour), *p.EarliestReplayableAt, 5*time.Second)
	require.Contains(t, p.Detail, "the earliest replayable time is "+p.EarliestReplayableAt.Format(time.RFC3339))
	require.Contains(t, p.Detail, "kept 2592000 seconds")
	require.Equal(t, http.StatusAccepted, b.do(t, b.acme, "POST", path, map[string]any{"since": before.Add(-29 * 24 * time.Hour)}).Status)

	b.do(t, b.operator, "PATCH", "/v1/tenants/acme", map[string]any{"limits": map[string]any{"retention_seconds": 7 * 24 * 3600}}).JSON(t)
	p = b.do(t, b.acme, "POST", path, map[string]any{"since": before.Add(-8 * 24 * time.Hour)}).Problem(t, http.StatusUnprocessableEntity)
	require.WithinDuration(t, before.Add(-7*24*time.Hour), *p.EarliestReplayableAt, 5*time.Second)
	require.Contains(t, p.Detail, "kept 604800 seconds")
}
