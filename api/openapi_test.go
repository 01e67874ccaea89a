package api_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/require"
)

type openAPIDoc struct {
	OpenAPI    string                           `json:"openapi"`
	Paths      map[string]map[string]openAPIOp  `json:"paths"`
	Components struct{ Schemas map[string]any } `json:"components"`
}

type openAPIOp struct {
	Summary    string                      `json:"summary"`
	Parameters []struct{ Name, In string } `json:"parameters"`
	Responses  map[string]any              `json:"responses"`
}

// The document at /openapi.json lists exactly the routes the router
// serves: none undocumented, none documented that does not exist.
func TestOpenAPIDocumentMatchesRegisteredRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	resp := b.do(t, "", "GET", "/openapi.json", nil)
	require.Equal(t, http.StatusOK, resp.Status)
	var doc openAPIDoc
	resp.Decode(t, &doc)
	require.Equal(t, "3.1.0", doc.OpenAPI)

	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			key := strings.ToUpper(method) + " " + path
			documented[key] = true
			require.NotEmpty(t, op.Summary, "%s has no summary", key)
			require.NotEmpty(t, op.Responses, "%s has no responses", key)
			for _, param := range regexp.MustCompile(`\{(\w+)\}`).FindAllStringSubmatch(path, -1) {
				require.True(t, slices.ContainsFunc(op.Parameters, func(p struct{ Name, In string }) bool {
					return p.Name == param[1] && p.In == "path"
				}), "%s does not declare its path parameter %s", key, param[1])
			}
		}
	}

	registered := map[string]bool{}
	routes, ok := b.handler.(chi.Routes)
	require.True(t, ok)
	require.NoError(t, chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if strings.HasPrefix(route, "/portal/") {
			return nil // the portal's HTML pages are not part of the API
		}
		registered[method+" "+strings.TrimSuffix(route, "/")] = true
		return nil
	}))

	for route := range registered {
		require.True(t, documented[route], "route %s is served but not in openapi.json", route)
	}
	for route := range documented {
		require.True(t, registered[route], "openapi.json documents %s, which the router does not serve", route)
	}

	raw := string(resp.Body)
	for _, m := range regexp.MustCompile(`"#/components/schemas/(\w+)"`).FindAllStringSubmatch(raw, -1) {
		require.Contains(t, doc.Components.Schemas, m[1], "openapi.json refers to a schema it does not define")
	}
	require.True(t, json.Valid(resp.Body))
}

// The document describes the limits as they are served: the four
// rate-limited routes answer 429 with the rate-limit response, and the
// tenant, its limits and the problem's limit have exactly the fields a
// response carries.
func TestOpenAPIDocumentsLimits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var doc struct {
		Paths      map[string]map[string]openAPIOp `json:"paths"`
		Components struct {
			Schemas map[string]struct {
				Required   []string                   `json:"required"`
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"schemas"`
			Responses map[string]struct {
				Headers map[string]any `json:"headers"`
			} `json:"responses"`
		} `json:"components"`
	}
	b.do(t, "", "GET", "/openapi.json", nil).Decode(t, &doc)
	for _, route := range []string{
		"/v1/tenants/{tenantID}/messages",
		"/v1/tenants/{tenantID}/messages/{messageID}/endpoints/{endpointID}/resend",
		"/v1/tenants/{tenantID}/endpoints/{endpointID}/test",
		"/v1/tenants/{tenantID}/endpoints/{endpointID}/replays",
	} {
		require.Equal(t, map[string]any{"$ref": "#/components/responses/RateLimited"}, doc.Paths[route]["post"].Responses["429"], "POST %s", route)
	}
	require.Contains(t, doc.Components.Responses["RateLimited"].Headers, "Retry-After")
	require.Contains(t, doc.Paths["/v1/tenants/{tenantID}/endpoints"]["post"].Responses, "409", "the endpoint cap")

	keys := func(raw map[string]any) []string {
		out := make([]string, 0, len(raw))
		for k := range raw {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	documented := func(schema string) []string {
		out := make([]string, 0)
		for k := range doc.Components.Schemas[schema].Properties {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	var tenant map[string]any
	b.do(t, b.operator, "PATCH", "/v1/tenants/acme", map[string]any{"limits": map[string]any{
		"max_endpoints": 5, "publish": map[string]any{"per_second": 1, "burst": 1}, "resend": map[string]any{"per_second": 1, "burst": 1},
		"replay": map[string]any{"per_second": 1, "burst": 1}, "test_event": map[string]any{"per_second": 1, "burst": 1},
		"retention_seconds": 7 * 24 * 3600, "max_inflight": 4,
	}}).Decode(t, &tenant)
	require.Equal(t, documented("Tenant"), keys(tenant))
	required := slices.Clone(doc.Components.Schemas["Tenant"].Required)
	slices.Sort(required)
	require.Equal(t, keys(tenant), required)
	require.Equal(t, documented("TenantLimits"), keys(tenant["limits"].(map[string]any)))
	require.Equal(t, documented("TenantLimitOverrides"), keys(tenant["limit_overrides"].(map[string]any)))
	require.Equal(t, documented("Rate"), keys(tenant["limits"].(map[string]any)["publish"].(map[string]any)))

	for range 2 {
		b.do(t, b.acme, "POST", "/v1/tenants/acme/messages", map[string]any{"event_type": "invoice.paid", "object_id": "inv_1", "data": map[string]any{}})
	}
	var p map[string]any
	resp := b.do(t, b.acme, "POST", "/v1/tenants/acme/messages", map[string]any{"event_type": "invoice.paid", "object_id": "inv_1", "data": map[string]any{}})
	require.Equal(t, http.StatusTooManyRequests, resp.Status)
	resp.Decode(t, &p)
	require.Subset(t, documented("Problem"), keys(p))
	require.Equal(t, documented("ProblemLimit"), keys(p["limit"].(map[string]any)))
}
