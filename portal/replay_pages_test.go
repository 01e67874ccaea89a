package portal_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestResendQueuesAndSaysSo(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := b.fixture(t, "acme")
	br := b.signIn(t, "acme")
	token := br.csrf()
	path := "/portal/deliveries/" + f.delivery.String() + "/resend"

	resp := br.post(path, url.Values{"csrf": {token}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, resp.body)
	require.Equal(t, "/portal/messages/"+f.message.String()+"?done=resent", resp.Header.Get("Location"))
	var status string
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT status FROM herald.deliveries WHERE id = $1`, f.delivery).Scan(&status))
	require.Equal(t, "pending", status)

	resp = br.post(path, url.Values{"csrf": {token}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, resp.body)
	require.Equal(t, "/portal/messages/"+f.message.String()+"?done=resent", resp.Header.Get("Location"), "a pending delivery is resent at once")
	require.Contains(t, br.get(resp.Header.Get("Location")).body, "goes out now")
}

func TestTestEventGoesToTheEndpointOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := b.fixture(t, "acme")
	_, err := b.pool.Exec(context.Background(), `INSERT INTO herald.endpoints (id, tenant_id, url) VALUES (gen_random_uuid(), 'acme', 'https://other.example.com/')`)
	require.NoError(t, err)
	br := b.signIn(t, "acme")

	resp := br.post("/portal/endpoints/"+f.endpoint.String()+"/test", url.Values{"csrf": {br.csrf()}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, resp.body)
	var endpoints []string
	rows, err := b.pool.Query(context.Background(), `
SELECT d.endpoint_id::text FROM herald.deliveries d JOIN herald.messages m ON m.id = d.message_id
WHERE m.event_type = 'herald.test' AND m.dispatched_at IS NOT NULL`)
	require.NoError(t, err)
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		endpoints = append(endpoints, id)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{f.endpoint.String()}, endpoints)
}

func TestReplayPageAndProgress(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := b.fixture(t, "acme")
	br := b.signIn(t, "acme")
	token := br.csrf()

	resp := br.post("/portal/endpoints/"+f.endpoint.String()+"/replays", url.Values{"csrf": {token}, "since": {"forever"}})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "only the offered periods")

	resp = br.post("/portal/endpoints/"+f.endpoint.String()+"/replays", url.Values{"csrf": {token}, "since": {"1h"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, resp.body)
	replayPage := resp.Header.Get("Location")
	require.Regexp(t, `^/portal/endpoints/`+f.endpoint.String()+`/replays/[0-9a-f-]{36}$`, replayPage)

	page := br.get(replayPage)
	require.Equal(t, http.StatusOK, page.StatusCode, page.body)
	require.Contains(t, page.body, "<progress")
	require.Contains(t, page.body, `http-equiv="refresh"`, "without JavaScript the page reloads itself while running")

	progress := br.get(replayPage + "/progress")
	require.Equal(t, http.StatusOK, progress.StatusCode, progress.body)
	require.Equal(t, "application/json", progress.Header.Get("Content-Type"))
	var p struct {
		Total, Enqueued, Done, Percent int
		Completed                      bool
	}
	require.NoError(t, json.Unmarshal([]byte(progress.body), &p))
	require.Equal(t, 1, p.Total, "the fixture's one delivery in the last hour")
	require.False(t, p.Completed, "no dispatcher runs in this test")

	require.Contains(t, br.get("/portal/endpoints/"+f.endpoint.String()).body, replayPage, "the endpoint page lists its replays")

	resp = br.post("/portal/endpoints/"+f.endpoint.String()+"/disable", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	resp = br.post("/portal/endpoints/"+f.endpoint.String()+"/replays", url.Values{"csrf": {token}, "since": {"1h"}})
	require.Equal(t, http.StatusConflict, resp.StatusCode)
	require.Contains(t, resp.body, "Enable it")
}

// The endpoint page says how long the tenant's history is kept and offers
// replays only that far back; a replay further back is refused with the
// earliest time one may start from.
func TestReplayReachesBackToTheTenantsRetentionOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := b.fixture(t, "acme")
	br := b.signIn(t, "acme")
	endpointPage := "/portal/endpoints/" + f.endpoint.String()

	page := br.get(endpointPage)
	require.Equal(t, http.StatusOK, page.StatusCode, page.body)
	require.Contains(t, page.body, "Your messages are kept for 30 days")
	require.Contains(t, page.body, `<option value="720h">30 days ago</option>`)

	_, err := b.pool.Exec(context.Background(), `UPDATE herald.tenants SET retention = interval '96 hours' WHERE id = 'acme'`)
	require.NoError(t, err)
	before := time.Now()
	page = br.get(endpointPage)
	require.Contains(t, page.body, "Your messages are kept for 4 days: a replay can reach back to <time")
	earliest := regexp.MustCompile(`reach back to <time datetime="([^"]+)"`).FindStringSubmatch(page.body)
	require.Len(t, earliest, 2, page.body)
	at, err := time.Parse(time.RFC3339, earliest[1])
	require.NoError(t, err)
	require.WithinDuration(t, before.Add(-96*time.Hour), at, 5*time.Second)
	require.NotContains(t, page.body, `<option value="168h">7 days ago</option>`, "periods beyond the retention are not offered")
	require.Contains(t, page.body, `<option value="72h">3 days ago</option>`)
	require.Contains(t, page.body, `<option value="96h0m0s">4 days ago, all history kept</option>`)

	token := br.csrf()
	resp := br.post(endpointPage+"/replays", url.Values{"csrf": {token}, "since": {"720h"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, resp.body)
	require.Contains(t, resp.body, "That is further back than your history is kept")
	require.Contains(t, resp.body, "Messages are kept for 4 days, so a replay can start no earlier than "+before.Add(-96*time.Hour).UTC().Format("2006-01-02 15:04"))

	resp = br.post(endpointPage+"/replays", url.Values{"csrf": {token}, "since": {"96h0m0s"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "a replay of all the history kept starts: %s", resp.body)
}
