package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/auth"
)

// acmeObjects are tenant acme's objects that globex's key must never reach.
type acmeObjects struct {
	endpoint, message, key, replay, check, erasure string
	// secrets are strings that appear only in acme's data.
	secrets []string
}

func (b *testBundle) seedAcme(t *testing.T) acmeObjects {
	t.Helper()
	_, err := b.pool.Exec(b.ctx, "INSERT INTO herald.event_types (name) VALUES ('invoice.paid')")
	require.NoError(t, err)
	e := b.createEndpoint(t, b.acme, "acme", map[string]any{"url": "https://acme-private.example/hook", "description": "acme-private-endpoint"})
	resp := b.do(t, b.acme, "POST", "/v1/tenants/acme/messages",
		map[string]any{"event_type": "invoice.paid", "object_id": "acme-private-object", "data": map[string]any{"note": "acme-private-payload"}})
	require.Equal(t, http.StatusAccepted, resp.Status)
	var m messageView
	resp.Decode(t, &m)
	b.addDelivery(t, m.ID, uuid.MustParse(e.ID), "failed", "failed")
	k, _, err := auth.CreateAPIKey(b.ctx, b.pool, "acme", "acme-private-key")
	require.NoError(t, err)
	secret := b.do(t, b.acme, "GET", "/v1/tenants/acme/endpoints/"+e.ID+"/secret", nil).JSON(t)["secret"].(string)
	acme := acmeObjects{
		endpoint: e.ID, message: m.ID, key: k.ID.String(), replay: b.seedReplay(t, e.ID),
		secrets: []string{"acme-private", secret, e.ID, m.ID, k.ID.String()},
	}
	acme.check = b.do(t, b.acme, "POST", "/v1/tenants/acme/endpoints/"+e.ID+"/receiver-checks", nil).JSON(t)["id"].(string)
	gone := b.createEndpoint(t, b.acme, "acme", map[string]any{"url": "https://acme-private.example/gone"})
	acme.erasure = b.do(t, b.acme, "DELETE", "/v1/tenants/acme/endpoints/"+gone.ID, nil).erasure(t, http.StatusAccepted).ID.String()
	acme.secrets = append(acme.secrets, acme.replay, acme.check, acme.erasure, gone.ID)
	return acme
}

// Every route, called with globex's key on acme's objects, answers 404 (or
// 403 for operator-only routes) and never shows acme's data; routes of
// globex's own tenant never show acme's objects either.
func TestTenantKeyNeverReachesAnotherTenantsObjects(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acme := b.seedAcme(t)

	routes, ok := b.handler.(chi.Routes)
	require.True(t, ok)
	walked := 0
	err := chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if !strings.HasPrefix(route, "/v1/") {
			return nil // operational routes hold no tenant data
		}
		walked++
		for _, tenant := range []string{"acme", "globex"} {
			path := fill(t, route, tenant, acme)
			resp := b.do(t, b.globex, method, path, "{}")
			underTenant := strings.HasPrefix(route, "/v1/tenants/{tenantID}")
			namesObject := strings.Contains(route, "{endpointID}") || strings.Contains(route, "{messageID}") ||
				strings.Contains(route, "{keyID}") || strings.Contains(route, "{replayID}") || strings.Contains(route, "{checkID}") ||
				strings.Contains(route, "{erasureID}")
			switch {
			case operatorRoute(method, route):
				resp.Problem(t, http.StatusForbidden)
			case (underTenant && tenant == "acme") || namesObject:
				resp.Problem(t, http.StatusNotFound)
			}
			for _, s := range acme.secrets {
				if resp.Status == http.StatusNotFound && (s == acme.endpoint || s == acme.message || s == acme.key || s == acme.replay || s == acme.check || s == acme.erasure) {
					continue // a 404 may repeat the id it was asked for
				}
				require.NotContains(t, string(resp.Body), s, "%s %s leaked acme's data", method, path)
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, walked, 20)

	// Nothing of acme's changed.
	var e endpointView
	b.do(t, b.acme, "GET", "/v1/tenants/acme/endpoints/"+acme.endpoint, nil).Decode(t, &e)
	require.True(t, e.Enabled)
	require.Equal(t, "https://acme-private.example/hook", e.URL)
	require.Equal(t, http.StatusOK, b.do(t, b.acme, "GET", "/v1/tenants/acme/messages/"+acme.message, nil).Status)
	var revoked bool
	require.NoError(t, b.pool.QueryRow(b.ctx, "SELECT revoked_at IS NOT NULL FROM herald.api_keys WHERE id = $1", acme.key).Scan(&revoked))
	require.False(t, revoked)
}

// operatorRoute lists the routes that act across tenants.
func operatorRoute(method, route string) bool {
	switch method + " " + route {
	case "GET /v1/api-keys", "POST /v1/api-keys", "DELETE /v1/api-keys/{keyID}",
		"POST /v1/event-types", "PATCH /v1/event-types/{eventType}", "DELETE /v1/event-types/{eventType}",
		"POST /v1/tenants":
		return true
	}
	return false
}

// fill puts acme's object ids into a route pattern, under tenant.
func fill(t *testing.T, route, tenant string, acme acmeObjects) string {
	t.Helper()
	values := map[string]string{
		"{tenantID}":   tenant,
		"{endpointID}": acme.endpoint,
		"{messageID}":  acme.message,
		"{keyID}":      acme.key,
		"{replayID}":   acme.replay,
		"{checkID}":    acme.check,
		"{erasureID}":  acme.erasure,
		"{eventType}":  "invoice.paid",
	}
	path := route
	for param, v := range values {
		path = strings.ReplaceAll(path, param, v)
	}
	require.NotContains(t, path, "{", "route %s has a parameter the isolation test does not fill; add it", route)
	return path
}

// seedReplay starts a replay of endpoint and returns its id.
func (b *testBundle) seedReplay(t *testing.T, endpoint string) string {
	t.Helper()
	resp := b.do(t, b.acme, "POST", "/v1/tenants/acme/endpoints/"+endpoint+"/replays", map[string]any{"since": time.Now().Add(-time.Hour)})
	require.Equal(t, http.StatusAccepted, resp.Status, "%s", resp.Body)
	return resp.JSON(t)["id"].(string)
}
