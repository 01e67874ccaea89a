package portal_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

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
