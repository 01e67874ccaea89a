package api_test

import (
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
