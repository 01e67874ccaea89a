package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/internal/webhooktest"
)

// Authentication and mutual TLS are set at creation, shown masked with
// the certificate's subject and expiry, changed field by field (a secret
// left out is kept), and removed with null.
func TestEndpointAuthenticationThroughTheAPI(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ca := webhooktest.NewCA(t)
	notAfter := time.Now().Add(90 * 24 * time.Hour).Truncate(time.Second)
	certPEM, keyPEM := ca.IssueClient(t, "herald-client", notAfter)

	resp := b.do(t, b.acme, "POST", "/v1/tenants/acme/endpoints", map[string]any{
		"url": "https://example.com/hooks",
		"authentication": map[string]any{"type": "oauth2_client_credentials", "token_url": "https://auth.example.com/oauth2/token",
			"client_id": "herald", "client_secret": "s3cret", "scopes": []string{"webhooks:write"}},
		"tls": map[string]any{"client_certificate": certPEM, "client_key": keyPEM, "ca_bundle": ca.PEM},
	})
	require.Equal(t, http.StatusCreated, resp.Status, "%s", resp.Body)
	require.NotContains(t, string(resp.Body), "s3cret")
	require.NotContains(t, string(resp.Body), "PRIVATE KEY")
	created := resp.JSON(t)
	require.Equal(t, map[string]any{"type": "oauth2_client_credentials", "token_url": "https://auth.example.com/oauth2/token",
		"client_id": "herald", "client_secret": "********", "scopes": []any{"webhooks:write"}}, created["authentication"])
	tlsView := created["tls"].(map[string]any)
	require.Equal(t, "CN=herald-client", tlsView["client_certificate_subject"])
	require.Equal(t, notAfter.UTC().Format(time.RFC3339), tlsView["client_certificate_expires_at"])
	require.Equal(t, "********", tlsView["client_key"])
	require.Equal(t, ca.PEM, tlsView["ca_bundle"])
	path := "/v1/tenants/acme/endpoints/" + created["id"].(string)
	require.Equal(t, created["authentication"], b.do(t, b.acme, "GET", path, nil).JSON(t)["authentication"])

	// Changing the scopes keeps the client secret; the endpoint without
	// credentials shows none.
	got := b.do(t, b.acme, "PATCH", path, map[string]any{"authentication": map[string]any{"type": "oauth2_client_credentials",
		"token_url": "https://auth.example.com/oauth2/token", "client_id": "herald", "scopes": []string{"a", "b"}}}).JSON(t)
	require.Equal(t, []any{"a", "b"}, got["authentication"].(map[string]any)["scopes"])
	require.Equal(t, "********", got["authentication"].(map[string]any)["client_secret"])
	require.NotNil(t, got["tls"], "tls was not in the PATCH and stays")

	var list struct {
		Data []map[string]any `json:"data"`
	}
	plain := b.createEndpoint(t, b.acme, "acme", map[string]any{"url": "https://example.com/plain"})
	b.do(t, b.acme, "GET", "/v1/tenants/acme/endpoints", nil).Decode(t, &list)
	require.Len(t, list.Data, 2)
	for _, e := range list.Data {
		if e["id"] == plain.ID {
			require.NotContains(t, e, "authentication")
			require.NotContains(t, e, "tls")
		} else {
			require.Contains(t, e, "authentication")
		}
	}

	got = b.do(t, b.acme, "PATCH", path, map[string]any{"authentication": nil, "tls": nil}).JSON(t)
	require.NotContains(t, got, "authentication")
	require.NotContains(t, got, "tls")

	got = b.do(t, b.acme, "PATCH", path, map[string]any{"authentication": map[string]any{"type": "basic", "username": "u", "password": "p"}}).JSON(t)
	require.Equal(t, map[string]any{"type": "basic", "username": "u", "password": "********"}, got["authentication"])
}

// Bad credentials are refused with 422 naming the field, and nothing is
// created.
func TestEndpointAuthenticationRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t, ssrf.New())
	ca := webhooktest.NewCA(t)
	certPEM, keyPEM := ca.IssueClient(t, "c", time.Now().Add(time.Hour))
	expiredPEM, expiredKey := ca.IssueClient(t, "old", time.Now().Add(-time.Minute))
	_, otherKey := ca.IssueClient(t, "other", time.Now().Add(time.Hour))

	for _, tt := range []struct {
		name   string
		body   map[string]any
		field  string
		detail string
	}{
		{"no type", map[string]any{"authentication": map[string]any{"token": "x"}}, "authentication.type", "is missing"},
		{"unknown type", map[string]any{"authentication": map[string]any{"type": "digest"}}, "authentication.type", `"bearer", "basic", "oauth2_client_credentials"`},
		{"bearer without token", map[string]any{"authentication": map[string]any{"type": "bearer"}}, "authentication.token", "is missing"},
		{"bearer with a password", map[string]any{"authentication": map[string]any{"type": "bearer", "token": "t", "password": "p"}}, "authentication.password", "is not used by this type"},
		{"masked token", map[string]any{"authentication": map[string]any{"type": "bearer", "token": "********"}}, "authentication.token", "the mask"},
		{"token with a newline", map[string]any{"authentication": map[string]any{"type": "bearer", "token": "a\nb"}}, "authentication.token", "control character"},
		{"basic colon", map[string]any{"authentication": map[string]any{"type": "basic", "username": "a:b", "password": "p"}}, "authentication.username", "colon"},
		{"http token_url", map[string]any{"authentication": map[string]any{"type": "oauth2_client_credentials", "token_url": "http://auth.example.com/token", "client_id": "c", "client_secret": "s"}}, "authentication.token_url", "must be https"},
		{"token_url on loopback", map[string]any{"authentication": map[string]any{"type": "oauth2_client_credentials", "token_url": "https://127.0.0.1/token", "client_id": "c", "client_secret": "s"}}, "authentication.token_url", "loopback"},
		{"no client secret", map[string]any{"authentication": map[string]any{"type": "oauth2_client_credentials", "token_url": "https://auth.example.com/token", "client_id": "c"}}, "authentication.client_secret", "is missing"},
		{"bad scope", map[string]any{"authentication": map[string]any{"type": "oauth2_client_credentials", "token_url": "https://auth.example.com/token", "client_id": "c", "client_secret": "s", "scopes": []string{"a b"}}}, "authentication.scopes[0]", "without spaces"},
		{"unknown field", map[string]any{"authentication": map[string]any{"type": "bearer", "token": "t", "extra": 1}}, "authentication", "unknown field"},
		{"certificate not PEM", map[string]any{"tls": map[string]any{"client_certificate": "hello", "client_key": keyPEM}}, "tls.client_certificate", "is not PEM"},
		{"key missing", map[string]any{"tls": map[string]any{"client_certificate": certPEM}}, "tls.client_key", "is missing"},
		{"key of another certificate", map[string]any{"tls": map[string]any{"client_certificate": certPEM, "client_key": otherKey}}, "tls.client_key", "does not go with the client certificate"},
		{"key not PEM", map[string]any{"tls": map[string]any{"client_certificate": certPEM, "client_key": "secret"}}, "tls.client_key", "is not a PEM private key"},
		{"expired certificate", map[string]any{"tls": map[string]any{"client_certificate": expiredPEM, "client_key": expiredKey}}, "tls.client_certificate", "expired at"},
		{"key as CA", map[string]any{"tls": map[string]any{"ca_bundle": keyPEM}}, "tls.ca_bundle", "give CA certificates only"},
		{"empty tls", map[string]any{"tls": map[string]any{}}, "tls", "is empty"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.body["url"] = "https://example.com/" + strings.ReplaceAll(tt.name, " ", "-")
			p := b.do(t, b.acme, "POST", "/v1/tenants/acme/endpoints", tt.body).Problem(t, http.StatusUnprocessableEntity)
			require.Equal(t, tt.field, p.Field)
			require.Contains(t, p.Detail, tt.detail)
		})
	}
	var list struct {
		Data []map[string]any `json:"data"`
	}
	b.do(t, b.acme, "GET", "/v1/tenants/acme/endpoints", nil).Decode(t, &list)
	require.Empty(t, list.Data, "a refused endpoint is not created")

	e := b.createEndpoint(t, b.acme, "acme", map[string]any{"url": "https://example.com/x"})
	p := b.do(t, b.acme, "PATCH", "/v1/tenants/acme/endpoints/"+e.ID, map[string]any{"description": "changed",
		"authentication": map[string]any{"type": "bearer"}}).Problem(t, http.StatusUnprocessableEntity)
	require.Equal(t, "authentication.token", p.Field)
	require.Empty(t, b.do(t, b.acme, "GET", "/v1/tenants/acme/endpoints/"+e.ID, nil).JSON(t)["description"], "a refused update changes nothing")
}
