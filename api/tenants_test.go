package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/auth"
)

// A tenant's name is what the portal shows people to tell tenants apart, so
// only operators set it: a tenant that renamed itself after another could
// pass its portal links off as the other's.
func TestOnlyOperatorsRenameTenants(t *testing.T) {
	t.Parallel()
	b := setup(t)
	link, err := auth.MintPortalLink(b.ctx, b.pool, "acme", 0)
	require.NoError(t, err)
	session, err := auth.RedeemPortalLink(b.ctx, b.pool, link.Token, 0)
	require.NoError(t, err)

	for who, key := range map[string]string{"tenant key": b.acme, "portal session": session.Token} {
		p := b.do(t, key, "PATCH", "/v1/tenants/acme", map[string]string{"name": "Globex"}).Problem(t, http.StatusForbidden)
		require.Contains(t, p.Detail, "operator", who)
	}
	require.Equal(t, "Acme", b.do(t, b.acme, "GET", "/v1/tenants/acme", nil).JSON(t)["name"], "the name did not change")

	got := b.do(t, b.operator, "PATCH", "/v1/tenants/acme", map[string]string{"name": "Acme Corp"}).JSON(t)
	require.Equal(t, "Acme Corp", got["name"])
	b.do(t, b.globex, "PATCH", "/v1/tenants/acme", map[string]string{"name": "Acme"}).Problem(t, http.StatusNotFound)
}
