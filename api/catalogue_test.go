package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/auth"
)

func TestEventTypeCatalogue(t *testing.T) {
	t.Parallel()
	b := setup(t)

	resp := b.do(t, b.operator, "POST", "/v1/event-types", map[string]string{"name": "invoice.paid", "description": "An invoice was paid."})
	require.Equal(t, http.StatusCreated, resp.Status, "%s", resp.Body)
	b.do(t, b.operator, "POST", "/v1/event-types", map[string]string{"name": "invoice.paid"}).Problem(t, http.StatusConflict)
	p := b.do(t, b.acme, "POST", "/v1/event-types", map[string]string{"name": "user.created"}).Problem(t, http.StatusForbidden)
	require.Contains(t, p.Detail, "operator")

	got := b.do(t, b.acme, "GET", "/v1/event-types/invoice.paid", nil).JSON(t)
	require.Equal(t, "An invoice was paid.", got["description"])

	got = b.do(t, b.operator, "PATCH", "/v1/event-types/invoice.paid", map[string]string{"description": "Paid in full."}).JSON(t)
	require.Equal(t, "Paid in full.", got["description"])
	b.do(t, b.operator, "PATCH", "/v1/event-types/invoice.paid", map[string]any{}).Problem(t, http.StatusUnprocessableEntity)

	var list struct {
		Data []struct{ Name string }
	}
	b.do(t, b.globex, "GET", "/v1/event-types", nil).Decode(t, &list)
	require.Len(t, list.Data, 1)

	require.Equal(t, http.StatusNoContent, b.do(t, b.operator, "DELETE", "/v1/event-types/invoice.paid", nil).Status)
	b.do(t, b.operator, "GET", "/v1/event-types/invoice.paid", nil).Problem(t, http.StatusNotFound)
	b.do(t, b.operator, "GET", "/v1/event-types/"+strings.Repeat("x", 300), nil).Problem(t, http.StatusNotFound)
}

func TestAPIKeyRoutesKeepScopes(t *testing.T) {
	t.Parallel()
	b := setup(t)

	var created struct {
		ID       string `json:"id"`
		Key      string `json:"key"`
		TenantID string `json:"tenant_id"`
	}
	resp := b.do(t, b.acme, "POST", "/v1/tenants/acme/api-keys", map[string]string{"name": "ci"})
	require.Equal(t, http.StatusCreated, resp.Status, "%s", resp.Body)
	resp.Decode(t, &created)
	require.True(t, strings.HasPrefix(created.Key, "hk_"))
	require.Equal(t, http.StatusOK, b.do(t, created.Key, "GET", "/v1/tenants/acme/api-keys", nil).Status)

	var list struct{ Data []map[string]any }
	b.do(t, b.acme, "GET", "/v1/tenants/acme/api-keys", nil).Decode(t, &list)
	require.Len(t, list.Data, 2)
	for _, k := range list.Data {
		require.NotContains(t, k, "key", "lists never show keys")
	}

	b.do(t, b.globex, "DELETE", "/v1/tenants/acme/api-keys/"+created.ID, nil).Problem(t, http.StatusNotFound)
	b.do(t, b.globex, "DELETE", "/v1/tenants/globex/api-keys/"+created.ID, nil).Problem(t, http.StatusNotFound)
	b.do(t, b.acme, "GET", "/v1/api-keys", nil).Problem(t, http.StatusForbidden)
	require.Equal(t, http.StatusOK, b.do(t, b.acme, "DELETE", "/v1/tenants/acme/api-keys/"+created.ID, nil).Status)
	b.do(t, created.Key, "GET", "/v1/tenants/acme/api-keys", nil).Problem(t, http.StatusUnauthorized)

	resp = b.do(t, b.operator, "POST", "/v1/api-keys", map[string]string{"name": "second operator"})
	require.Equal(t, http.StatusCreated, resp.Status)
	operatorKey := map[string]any{}
	resp.Decode(t, &operatorKey)
	require.NotContains(t, operatorKey, "tenant_id")
	b.do(t, b.operator, "GET", "/v1/api-keys", nil).Decode(t, &list)
	require.Len(t, list.Data, 2, "the operator list holds operator keys only")
}

func TestPortalLinkOpensASessionThatSeesOneTenant(t *testing.T) {
	t.Parallel()
	b := setup(t)

	var link struct {
		URL       string `json:"url"`
		ExpiresAt string `json:"expires_at"`
	}
	resp := b.do(t, b.operator, "POST", "/v1/tenants/acme/portal-links", nil)
	require.Equal(t, http.StatusCreated, resp.Status, "%s", resp.Body)
	resp.Decode(t, &link)
	require.True(t, strings.HasPrefix(link.URL, "http://herald.test/portal/login?token=hpl_"), link.URL)

	b.do(t, b.operator, "POST", "/v1/tenants/acme/portal-links", map[string]int{"ttl_seconds": 100000}).Problem(t, http.StatusUnprocessableEntity)
	b.do(t, b.globex, "POST", "/v1/tenants/acme/portal-links", nil).Problem(t, http.StatusNotFound)
	b.do(t, b.operator, "POST", "/v1/tenants/nobody/portal-links", nil).Problem(t, http.StatusNotFound)
}

func TestPortalSessionsActOnTheirTenantWithoutMintingCredentials(t *testing.T) {
	t.Parallel()
	b := setup(t)
	link, err := auth.MintPortalLink(b.ctx, b.pool, "acme", 0)
	require.NoError(t, err)
	session, err := auth.RedeemPortalLink(b.ctx, b.pool, link.Token, 0)
	require.NoError(t, err)

	require.Equal(t, http.StatusOK, b.do(t, session.Token, "GET", "/v1/tenants/acme/endpoints", nil).Status)
	b.do(t, session.Token, "GET", "/v1/tenants/globex/endpoints", nil).Problem(t, http.StatusNotFound)
	for _, route := range [][2]string{
		{"POST", "/v1/tenants/acme/api-keys"},
		{"GET", "/v1/tenants/acme/api-keys"},
		{"POST", "/v1/tenants/acme/portal-links"},
		{"POST", "/v1/tenants/acme/messages"},
	} {
		b.do(t, session.Token, route[0], route[1], nil).Problem(t, http.StatusForbidden)
	}
}
