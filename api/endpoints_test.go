package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/ssrf"
)

type endpointView struct {
	ID             string   `json:"id"`
	TenantID       string   `json:"tenant_id"`
	URL            string   `json:"url"`
	Description    string   `json:"description"`
	Ordering       string   `json:"ordering"`
	EventTypes     []string `json:"event_types"`
	RateLimit      float64  `json:"rate_limit"`
	Enabled        bool     `json:"enabled"`
	DisabledReason string   `json:"disabled_reason"`
}

func (b *testBundle) createEndpoint(t *testing.T, key, tenant string, body map[string]any) endpointView {
	t.Helper()
	resp := b.do(t, key, "POST", "/v1/tenants/"+tenant+"/endpoints", body)
	require.Equal(t, http.StatusCreated, resp.Status, "%s", resp.Body)
	var e endpointView
	resp.Decode(t, &e)
	return e
}

func TestTenantRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	resp := b.do(t, b.operator, "POST", "/v1/tenants", map[string]string{"id": "initech", "name": "Initech"})
	require.Equal(t, http.StatusCreated, resp.Status, "%s", resp.Body)
	b.do(t, b.operator, "POST", "/v1/tenants", map[string]string{"id": "initech"}).Problem(t, http.StatusConflict)
	p := b.do(t, b.operator, "POST", "/v1/tenants", map[string]string{"id": "no spaces"}).Problem(t, http.StatusUnprocessableEntity)
	require.Equal(t, "id", p.Field)
	b.do(t, b.acme, "POST", "/v1/tenants", map[string]string{"id": "mine"}).Problem(t, http.StatusForbidden)

	var list struct {
		Data []struct{ ID string } `json:"data"`
		Next string                `json:"next"`
	}
	b.do(t, b.operator, "GET", "/v1/tenants?limit=2", nil).Decode(t, &list)
	require.Len(t, list.Data, 2)
	require.NotEmpty(t, list.Next)
	after := list.Next
	list.Next = ""
	b.do(t, b.operator, "GET", "/v1/tenants?limit=2&after="+after, nil).Decode(t, &list)
	require.Len(t, list.Data, 1)
	require.Empty(t, list.Next)
	b.do(t, b.acme, "GET", "/v1/tenants", nil).Decode(t, &list)
	require.Len(t, list.Data, 1, "a tenant key sees its own tenant only")
	require.Equal(t, "acme", list.Data[0].ID)

	got := b.do(t, b.operator, "PATCH", "/v1/tenants/acme", map[string]string{"name": "Acme Corp"}).JSON(t)
	require.Equal(t, "Acme Corp", got["name"])
	require.Equal(t, "Acme Corp", b.do(t, b.acme, "GET", "/v1/tenants/acme", nil).JSON(t)["name"])
	b.do(t, b.acme, "DELETE", "/v1/tenants/acme", nil).Problem(t, http.StatusForbidden)
	require.Equal(t, http.StatusAccepted, b.do(t, b.operator, "DELETE", "/v1/tenants/initech", nil).Status)
	b.do(t, b.operator, "GET", "/v1/tenants/initech", nil).Problem(t, http.StatusNotFound)
}

func TestEndpointLifecycleOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e := b.createEndpoint(t, b.acme, "acme", map[string]any{"url": "https://example.com/hook", "event_types": []string{"invoice.paid"}})
	require.Equal(t, "acme", e.TenantID)
	require.True(t, e.Enabled)

	p := b.do(t, b.acme, "POST", "/v1/tenants/acme/endpoints", map[string]any{"url": "ftp://example.com"}).Problem(t, http.StatusUnprocessableEntity)
	require.Equal(t, "url", p.Field)
	p = b.do(t, b.acme, "POST", "/v1/tenants/acme/endpoints", map[string]any{"url": "https://example.com", "secret": "nope"}).Problem(t, http.StatusUnprocessableEntity)
	require.Equal(t, "secret", p.Field)
	p = b.do(t, b.acme, "POST", "/v1/tenants/acme/endpoints", map[string]any{"url": "https://example.com", "rate_limit": -1}).Problem(t, http.StatusUnprocessableEntity)
	require.Equal(t, "rate_limit", p.Field)

	path := "/v1/tenants/acme/endpoints/" + e.ID
	var got endpointView
	b.do(t, b.acme, "PATCH", path, map[string]any{"event_types": []string{}, "rate_limit": 5}).Decode(t, &got)
	require.Empty(t, got.EventTypes)
	require.Equal(t, 5.0, got.RateLimit)

	b.do(t, b.acme, "POST", path+"/disable", map[string]string{"reason": "maintenance"}).Decode(t, &got)
	require.False(t, got.Enabled)
	require.Equal(t, "maintenance", got.DisabledReason)
	b.do(t, b.acme, "POST", path+"/enable", nil).Decode(t, &got)
	require.True(t, got.Enabled)
	b.do(t, b.acme, "POST", path+"/disable", nil).Decode(t, &got)
	require.Equal(t, "disabled through the API", got.DisabledReason)

	secret := b.do(t, b.acme, "GET", path+"/secret", nil).JSON(t)["secret"].(string)
	require.True(t, strings.HasPrefix(secret, "whsec_"))
	rotated := b.do(t, b.acme, "POST", path+"/secret/rotate", map[string]int{"grace_seconds": 60}).JSON(t)["secret"].(string)
	require.NotEqual(t, secret, rotated)
	require.Equal(t, rotated, b.do(t, b.acme, "GET", path+"/secret", nil).JSON(t)["secret"])
	b.do(t, b.acme, "POST", path+"/secret/rotate", map[string]int{"grace_seconds": 30 * 24 * 3600}).Problem(t, http.StatusUnprocessableEntity)

	var list struct {
		Data []map[string]any `json:"data"`
	}
	b.do(t, b.acme, "GET", "/v1/tenants/acme/endpoints", nil).Decode(t, &list)
	require.Len(t, list.Data, 1)
	require.NotContains(t, list.Data[0], "secret")

	require.Equal(t, http.StatusAccepted, b.do(t, b.acme, "DELETE", path, nil).Status)
	b.do(t, b.acme, "GET", path, nil).Problem(t, http.StatusNotFound)
}

func TestEndpointURLPolicyIsExplained(t *testing.T) {
	t.Parallel()
	b := setup(t, ssrf.New())
	p := b.do(t, b.acme, "POST", "/v1/tenants/acme/endpoints", map[string]any{"url": "http://127.0.0.1:9/hook"}).Problem(t, http.StatusUnprocessableEntity)
	require.Equal(t, "url", p.Field)
	require.Contains(t, p.Detail, "127.0.0.1")
	require.Contains(t, p.Detail, "HERALD_ALLOW_CIDRS", "the problem says how to allow it")
}

func TestSecretUnderAnotherKeyIsExplained(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e := b.createEndpoint(t, b.acme, "acme", map[string]any{"url": "https://example.com/hook"})
	// Re-seal the secret's bytes as if written under another key: the
	// server's key no longer opens it.
	_, err := b.pool.Exec(b.ctx, "UPDATE herald.endpoint_secrets SET ciphertext = overlay(ciphertext PLACING '\\xffffffff'::bytea FROM 1 FOR 4)")
	require.NoError(t, err)
	p := b.do(t, b.acme, "GET", "/v1/tenants/acme/endpoints/"+e.ID+"/secret", nil).Problem(t, http.StatusInternalServerError)
	require.Contains(t, p.Detail, "HERALD_SECRET_KEY")
}

// An endpoint's ordering is chosen when it is created, shown, and refused
// with a sentence that says what to do when it is given wrong or changed.
func TestEndpointOrderingOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	plain := b.createEndpoint(t, b.acme, "acme", map[string]any{"url": "https://example.com/plain"})
	require.Equal(t, "none", plain.Ordering, "the default")
	ordered := b.createEndpoint(t, b.acme, "acme", map[string]any{"url": "https://example.com/ordered", "ordering": "object"})
	require.Equal(t, "object", ordered.Ordering)

	p := b.do(t, b.acme, "POST", "/v1/tenants/acme/endpoints", map[string]any{"url": "https://example.com", "ordering": "fifo"}).Problem(t, http.StatusUnprocessableEntity)
	require.Equal(t, "ordering", p.Field)
	require.Contains(t, p.Detail, `"object"`)

	path := "/v1/tenants/acme/endpoints/" + ordered.ID
	var got endpointView
	b.do(t, b.acme, "PATCH", path, map[string]any{"ordering": "object", "description": "same ordering"}).Decode(t, &got)
	require.Equal(t, "same ordering", got.Description)
	p = b.do(t, b.acme, "PATCH", path, map[string]any{"ordering": "none"}).Problem(t, http.StatusUnprocessableEntity)
	require.Equal(t, "ordering", p.Field)
	require.Contains(t, p.Detail, "create a new endpoint")
	b.do(t, b.acme, "POST", path+"/disable", nil).Decode(t, &got)
	b.do(t, b.acme, "POST", path+"/enable", nil).Decode(t, &got)
	require.True(t, got.Enabled)
	require.Equal(t, "object", got.Ordering)
}

// The endpoint's breaker shows in its JSON: closed with its count of
// unanswered attempts, open with the time it opened; enabling the
// endpoint closes it.
func TestEndpointBreakerOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e := b.createEndpoint(t, b.acme, "acme", map[string]any{"url": "https://example.com/hook"})
	path := "/v1/tenants/acme/endpoints/" + e.ID
	var got struct {
		Breaker map[string]any `json:"breaker"`
	}
	b.do(t, b.acme, "GET", path, nil).Decode(t, &got)
	require.Equal(t, map[string]any{"state": "closed", "unanswered_in_a_row": 0.0}, got.Breaker)

	opened := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	_, err := b.pool.Exec(context.Background(), "UPDATE herald.endpoints SET unreachable_streak = 3, breaker_opened_at = $2 WHERE id = $1", e.ID, opened)
	require.NoError(t, err)
	b.do(t, b.acme, "GET", path, nil).Decode(t, &got)
	require.Equal(t, map[string]any{"state": "open", "unanswered_in_a_row": 3.0, "opened_at": "2026-01-02T03:04:05Z"}, got.Breaker)

	b.do(t, b.acme, "POST", path+"/disable", nil)
	got.Breaker = nil
	b.do(t, b.acme, "POST", path+"/enable", nil).Decode(t, &got)
	require.Equal(t, map[string]any{"state": "closed", "unanswered_in_a_row": 0.0}, got.Breaker, "enabling starts the breaker afresh")
}
