package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

func TestResendTestEventAndReplayRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e := b.createEndpoint(t, b.acme, "acme", map[string]any{"url": "https://example.com/hook"})
	ep := uuid.MustParse(e.ID)
	m := b.publish(t, b.acme, "acme", "invoice.paid", "inv_1")
	d := b.addDelivery(t, m.ID, ep, "failed", "failed")

	path := "/v1/tenants/acme/messages/" + m.ID + "/endpoints/" + e.ID + "/resend"
	resp := b.do(t, b.acme, "POST", path, nil)
	require.Equal(t, http.StatusAccepted, resp.Status, "%s", resp.Body)
	got := resp.JSON(t)
	require.Equal(t, d.String(), got["delivery_id"])
	require.Equal(t, "failed", got["previous_status"])
	resp = b.do(t, b.acme, "POST", path, nil)
	require.Equal(t, http.StatusAccepted, resp.Status, "a pending delivery is resent too, at once: %s", resp.Body)
	got = resp.JSON(t)
	require.Equal(t, d.String(), got["delivery_id"])
	require.Equal(t, "pending", got["previous_status"])

	var test messageView
	resp = b.do(t, b.acme, "POST", "/v1/tenants/acme/endpoints/"+e.ID+"/test", nil)
	require.Equal(t, http.StatusAccepted, resp.Status, "%s", resp.Body)
	resp.Decode(t, &test)
	require.Equal(t, "herald.test", test.EventType)
	require.Equal(t, map[string]int{"pending": 1}, test.DeliveryCounts, "the test event goes to this endpoint only")
	var dispatched bool
	require.NoError(t, b.pool.QueryRow(b.ctx, "SELECT dispatched_at IS NOT NULL FROM herald.messages WHERE id = $1", uuid.MustParse(test.ID)).Scan(&dispatched))
	require.True(t, dispatched, "the dispatcher does not fan a test event out")

	replays := "/v1/tenants/acme/endpoints/" + e.ID + "/replays"
	b.do(t, b.acme, "POST", replays, map[string]any{}).Problem(t, http.StatusUnprocessableEntity)
	b.do(t, b.acme, "POST", replays, map[string]any{"since": time.Now().Add(time.Hour)}).Problem(t, http.StatusUnprocessableEntity)
	b.do(t, b.acme, "POST", replays, map[string]any{"since": "yesterday"}).Problem(t, http.StatusBadRequest)
	resp = b.do(t, b.acme, "POST", replays, map[string]any{"since": time.Now().Add(-time.Hour), "only_failed": true})
	require.Equal(t, http.StatusAccepted, resp.Status, "%s", resp.Body)
	var rep struct {
		ID       string `json:"id"`
		Status   string `json:"status"`
		Total    int    `json:"total"`
		Enqueued int    `json:"enqueued"`
	}
	resp.Decode(t, &rep)
	require.Equal(t, "running", rep.Status)
	require.Equal(t, replays+"/"+rep.ID, resp.Header.Get("Location"))
	b.do(t, b.acme, "GET", replays+"/"+rep.ID, nil).Decode(t, &rep)
	require.Equal(t, "running", rep.Status)
	var list struct{ Data []map[string]any }
	b.do(t, b.acme, "GET", replays, nil).Decode(t, &list)
	require.Len(t, list.Data, 1)

	// Nothing works the queue in this test, so the jobs wait there.
	metrics := string(b.do(t, "", "GET", "/metrics", nil).Body)
	require.Contains(t, metrics, `herald_queue_jobs{queue="deliveries",state="available"} 4`, "two resends, test event and replay")

	b.do(t, b.acme, "POST", "/v1/tenants/acme/endpoints/"+e.ID+"/disable", nil)
	b.do(t, b.acme, "POST", replays, map[string]any{"since": time.Now().Add(-time.Hour)}).Problem(t, http.StatusConflict)
	b.do(t, b.acme, "POST", "/v1/tenants/acme/endpoints/"+e.ID+"/test", nil).Problem(t, http.StatusConflict)
}
