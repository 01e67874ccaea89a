package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// An endpoint's filter and channels are set at creation, shown, replaced
// and removed over HTTP; a filter that does not parse is a 422 naming the
// field and the character where it goes wrong, a bad channel a 422 naming
// the entry.
func TestEndpointFilterAndChannelsOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	created := b.do(t, b.acme, "POST", "/v1/tenants/acme/endpoints", map[string]any{
		"url": "https://example.com/hook", "filter": `data.amount >= 100`, "channels": []string{"eu", "project-1", "eu"},
	})
	require.Equal(t, http.StatusCreated, created.Status, "%s", created.Body)
	e := created.JSON(t)
	require.Equal(t, `data.amount >= 100`, e["filter"])
	require.Equal(t, []any{"eu", "project-1"}, e["channels"], "repeats dropped, order kept")
	path := "/v1/tenants/acme/endpoints/" + e["id"].(string)
	require.Equal(t, e["filter"], b.do(t, b.acme, "GET", path, nil).JSON(t)["filter"])

	got := b.do(t, b.acme, "PATCH", path, map[string]any{"filter": `type == "invoice.paid"`, "channels": []string{}}).JSON(t)
	require.Equal(t, `type == "invoice.paid"`, got["filter"])
	require.Equal(t, []any{}, got["channels"])
	got = b.do(t, b.acme, "PATCH", path, map[string]any{"description": "only the description"}).JSON(t)
	require.Equal(t, `type == "invoice.paid"`, got["filter"], "an absent filter is left as it is")
	got = b.do(t, b.acme, "PATCH", path, map[string]any{"filter": ""}).JSON(t)
	require.Equal(t, "", got["filter"], `"" removes the filter`)

	for _, method := range []string{"POST", "PATCH"} {
		target := "/v1/tenants/acme/endpoints"
		if method == "PATCH" {
			target = path
		}
		p := b.do(t, b.acme, method, target, map[string]any{"url": "https://example.com/hook", "filter": `data.amount >> 100`}).Problem(t, http.StatusUnprocessableEntity)
		require.Equal(t, "filter", p.Field)
		require.Equal(t, 14, p.Position, "%s", p.Detail)
		require.Contains(t, p.Detail, "at character 14")

		p = b.do(t, b.acme, method, target, map[string]any{"url": "https://example.com/hook", "channels": []string{"eu", "no spaces"}}).Problem(t, http.StatusUnprocessableEntity)
		require.Equal(t, "channels", p.Field)
		require.Contains(t, p.Detail, `entry 1: "no spaces" is not a channel name`)
	}
	p := b.do(t, b.acme, "POST", "/v1/tenants/acme/endpoints", map[string]any{"url": "https://example.com/hook", "filter": strings.Repeat("x", 4097)}).Problem(t, http.StatusUnprocessableEntity)
	require.Equal(t, "filter", p.Field)
}

// Messages carry channels over HTTP, one at a time and in batches; the
// message shows them, distinct and sorted, and bad ones are refused.
func TestPublishChannelsOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	resp := b.do(t, b.acme, "POST", "/v1/tenants/acme/messages", map[string]any{
		"event_type": "invoice.paid", "object_id": "inv_1", "data": map[string]any{}, "channels": []string{"project-1", "eu", "eu"},
	})
	require.Equal(t, http.StatusAccepted, resp.Status, "%s", resp.Body)
	m := resp.JSON(t)
	require.Equal(t, []any{"eu", "project-1"}, m["channels"])
	require.Equal(t, []any{"eu", "project-1"}, b.do(t, b.acme, "GET", "/v1/tenants/acme/messages/"+m["id"].(string), nil).JSON(t)["channels"])

	resp = b.do(t, b.acme, "POST", "/v1/tenants/acme/messages/batch", map[string]any{"events": []map[string]any{
		{"event_type": "invoice.paid", "object_id": "inv_2", "data": map[string]any{}, "channels": []string{"us"}},
		{"event_type": "invoice.paid", "object_id": "inv_3", "data": map[string]any{}},
	}})
	require.Equal(t, http.StatusAccepted, resp.Status, "%s", resp.Body)
	var batch struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	resp.Decode(t, &batch)
	require.Equal(t, []any{"us"}, b.do(t, b.acme, "GET", "/v1/tenants/acme/messages/"+batch.Data[0].ID, nil).JSON(t)["channels"])
	require.Equal(t, []any{}, b.do(t, b.acme, "GET", "/v1/tenants/acme/messages/"+batch.Data[1].ID, nil).JSON(t)["channels"])

	p := b.do(t, b.acme, "POST", "/v1/tenants/acme/messages", map[string]any{
		"event_type": "invoice.paid", "object_id": "inv_4", "data": map[string]any{}, "channels": []string{"bad channel"},
	}).Problem(t, http.StatusUnprocessableEntity)
	require.Equal(t, "channels", p.Field)
	p = b.do(t, b.acme, "POST", "/v1/tenants/acme/messages/batch", map[string]any{"events": []map[string]any{
		{"event_type": "invoice.paid", "object_id": "inv_5", "data": map[string]any{}, "channels": []string{"bad channel"}},
	}}).Problem(t, http.StatusUnprocessableEntity)
	require.Len(t, p.Errors, 1)
	require.Equal(t, "channels", p.Errors[0].Field)
}

// Custom headers are set, shown (secret values masked) and replaced over
// HTTP; a secret header sent without a value keeps its value. Forbidden and
// invalid headers are a 422 that names the header.
func TestEndpointHeadersOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	created := b.do(t, b.acme, "POST", "/v1/tenants/acme/endpoints", map[string]any{
		"url": "https://example.com/hook",
		"headers": []map[string]any{
			{"name": "X-Region", "value": "eu"},
			{"name": "X-Api-Key", "value": "sk_live_123", "secret": true},
		},
	})
	require.Equal(t, http.StatusCreated, created.Status, "%s", created.Body)
	require.NotContains(t, string(created.Body), "sk_live_123")
	e := created.JSON(t)
	require.Equal(t, []any{
		map[string]any{"name": "X-Region", "value": "eu", "secret": false},
		map[string]any{"name": "X-Api-Key", "value": "********", "secret": true},
	}, e["headers"])
	path := "/v1/tenants/acme/endpoints/" + e["id"].(string)
	got := b.do(t, b.acme, "GET", path, nil)
	require.NotContains(t, string(got.Body), "sk_live_123")

	// Keep the secret, drop X-Region, add another.
	got = b.do(t, b.acme, "PATCH", path, map[string]any{"headers": []map[string]any{
		{"name": "X-Api-Key", "secret": true},
		{"name": "X-Team", "value": "billing"},
	}})
	require.Equal(t, http.StatusOK, got.Status, "%s", got.Body)
	require.Equal(t, []any{
		map[string]any{"name": "X-Api-Key", "value": "********", "secret": true},
		map[string]any{"name": "X-Team", "value": "billing", "secret": false},
	}, got.JSON(t)["headers"])
	p := b.do(t, b.acme, "PATCH", path, map[string]any{"headers": []map[string]any{{"name": "X-Other", "secret": true}}}).Problem(t, http.StatusUnprocessableEntity)
	require.Contains(t, p.Detail, `"X-Other" has an empty value`)

	refused := map[string]string{
		"webhook-signature": `"webhook-signature" is refused: the webhook-* headers are Herald's signature headers`,
		"Host":              `"Host" is refused: Herald sets it from the endpoint's URL`,
		"Content-Length":    `"Content-Length" is refused`,
		"content-type":      `"content-type" is refused: Herald sends application/json`,
		"Transfer-Encoding": `"Transfer-Encoding" is refused: it is hop-by-hop`,
		"Connection":        `"Connection" is refused: it is hop-by-hop`,
		"Keep-Alive":        `"Keep-Alive" is refused: it is hop-by-hop`,
		"Upgrade":           `"Upgrade" is refused: it is hop-by-hop`,
		"authorization":     `"authorization" is refused: set it as the endpoint's authentication`,
		"X Bad":             `"X Bad" is not a valid header name`,
	}
	for name, want := range refused {
		p := b.do(t, b.acme, "POST", "/v1/tenants/acme/endpoints", map[string]any{
			"url": "https://example.com/hook", "headers": []map[string]any{{"name": name, "value": "v"}},
		}).Problem(t, http.StatusUnprocessableEntity)
		require.Equal(t, "headers", p.Field, name)
		require.Contains(t, p.Detail, want, name)
	}
	p = b.do(t, b.acme, "POST", "/v1/tenants/acme/endpoints", map[string]any{
		"url": "https://example.com/hook", "headers": []map[string]any{{"name": "X-Bad", "value": "line\r\nbreak"}},
	}).Problem(t, http.StatusUnprocessableEntity)
	require.Contains(t, p.Detail, `"X-Bad" has a value that cannot be sent`)
	p = b.do(t, b.acme, "POST", "/v1/tenants/acme/endpoints", map[string]any{
		"url": "https://example.com/hook", "headers": []map[string]any{{"name": "X-A", "value": "1"}, {"name": "x-a", "value": "2"}},
	}).Problem(t, http.StatusUnprocessableEntity)
	require.Contains(t, p.Detail, `"x-a" appears twice`)

	many := make([]map[string]any, 21)
	for i := range many {
		many[i] = map[string]any{"name": fmt.Sprintf("X-H%d", i), "value": "v"}
	}
	p = b.do(t, b.acme, "POST", "/v1/tenants/acme/endpoints", map[string]any{"url": "https://example.com/hook", "headers": many}).Problem(t, http.StatusUnprocessableEntity)
	require.Contains(t, p.Detail, "has 21 headers; an endpoint has at most 20")
	p = b.do(t, b.acme, "POST", "/v1/tenants/acme/endpoints", map[string]any{
		"url": "https://example.com/hook", "headers": []map[string]any{{"name": "X-Big", "value": strings.Repeat("v", 8200)}},
	}).Problem(t, http.StatusUnprocessableEntity)
	require.Contains(t, p.Detail, "at most 8192 are allowed")
}

// The timeout and retry policy are set, shown, reset and kept within the
// operator's bounds over HTTP.
func TestEndpointPolicyOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	created := b.do(t, b.acme, "POST", "/v1/tenants/acme/endpoints", map[string]any{
		"url": "https://example.com/hook", "timeout_seconds": 30,
		"retry_policy": map[string]any{"window_seconds": 3600, "base_seconds": 2, "cap_seconds": 600},
	})
	require.Equal(t, http.StatusCreated, created.Status, "%s", created.Body)
	e := created.JSON(t)
	require.Equal(t, float64(30), e["timeout_seconds"])
	require.Equal(t, map[string]any{"window_seconds": float64(3600), "base_seconds": float64(2), "cap_seconds": float64(600)}, e["retry_policy"])
	path := "/v1/tenants/acme/endpoints/" + e["id"].(string)

	got := b.do(t, b.acme, "PATCH", path, map[string]any{"timeout_seconds": 0, "retry_policy": map[string]any{}}).JSON(t)
	require.Nil(t, got["timeout_seconds"], "0 goes back to the dispatcher's timeout")
	require.Nil(t, got["retry_policy"], "{} goes back to the dispatcher's policy")
	plain := b.createEndpoint(t, b.acme, "acme", map[string]any{"url": "https://example.com/hook"})
	require.Nil(t, b.do(t, b.acme, "GET", "/v1/tenants/acme/endpoints/"+plain.ID, nil).JSON(t)["timeout_seconds"])

	for body, want := range map[string]map[string]any{
		"timeout_seconds is 1m1s; give 1s to 1m0s":             {"timeout_seconds": 61},
		"timeout_seconds is -1; give a positive number":        {"timeout_seconds": -1},
		"retry_policy window is 168h0m0s; give 1 s to 72h0m0s": {"retry_policy": map[string]any{"window_seconds": 7 * 24 * 3600}},
		"cap (1s) is below base (10s)":                         {"retry_policy": map[string]any{"base_seconds": 10, "cap_seconds": 1}},
	} {
		want["url"] = "https://example.com/hook"
		p := b.do(t, b.acme, "POST", "/v1/tenants/acme/endpoints", want).Problem(t, http.StatusUnprocessableEntity)
		require.Contains(t, p.Detail, body)
	}
}
