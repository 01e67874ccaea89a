package api_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReceiverCheckRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ep := b.createEndpoint(t, b.acme, "acme", map[string]any{"url": "https://acme.example/hooks"})
	checks := "/v1/tenants/acme/endpoints/" + ep.ID + "/receiver-checks"

	resp := b.do(t, b.acme, "POST", checks, nil)
	require.Equal(t, http.StatusAccepted, resp.Status, "%s", resp.Body)
	var c struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Steps  []struct {
			Name, Status, Verify string
			Sends                []struct {
				WebhookID string `json:"webhook_id"`
			}
		} `json:"steps"`
		OwnerChecks []string `json:"owner_checks"`
	}
	resp.Decode(t, &c)
	require.Equal(t, "running", c.Status)
	require.Equal(t, checks+"/"+c.ID, resp.Header.Get("Location"))
	require.Len(t, c.Steps, 4)
	for i, name := range []string{"duplicate", "concurrent", "shuffled", "old_event"} {
		require.Equal(t, name, c.Steps[i].Name)
		require.NotEmpty(t, c.Steps[i].Verify)
	}
	require.Equal(t, "pending", c.Steps[0].Status)
	require.Equal(t, "skipped", c.Steps[3].Status)
	require.NotEmpty(t, c.OwnerChecks)

	got := b.do(t, b.acme, "GET", checks+"/"+c.ID, nil)
	require.Equal(t, http.StatusOK, got.Status)
	require.Equal(t, c.ID, got.JSON(t)["id"])

	// One check a minute per endpoint.
	p := b.do(t, b.acme, "POST", checks, nil).Problem(t, http.StatusTooManyRequests)
	require.Contains(t, p.Detail, "Retry-After")
	again := b.do(t, b.acme, "POST", checks, nil)
	seconds, err := strconv.Atoi(again.Header.Get("Retry-After"))
	require.NoError(t, err)
	require.InDelta(t, 60, seconds, 10)

	// Another tenant sees neither the endpoint nor the check.
	b.do(t, b.globex, "POST", "/v1/tenants/acme/endpoints/"+ep.ID+"/receiver-checks", nil).Problem(t, http.StatusNotFound)
	b.do(t, b.operator, "GET", "/v1/tenants/globex/endpoints/"+ep.ID+"/receiver-checks/"+c.ID, nil).Problem(t, http.StatusNotFound)
	b.do(t, b.acme, "GET", checks+"/0193c2a4-0000-7000-8000-000000000000", nil).Problem(t, http.StatusNotFound)

	// A disabled endpoint is not checked.
	other := b.createEndpoint(t, b.acme, "acme", map[string]any{"url": "https://acme.example/other"})
	require.Equal(t, http.StatusOK, b.do(t, b.acme, "POST", "/v1/tenants/acme/endpoints/"+other.ID+"/disable", map[string]string{"reason": "x"}).Status)
	p = b.do(t, b.acme, "POST", "/v1/tenants/acme/endpoints/"+other.ID+"/receiver-checks", nil).Problem(t, http.StatusConflict)
	require.Contains(t, p.Detail, "enable it")
}
