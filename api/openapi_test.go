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
