package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/api"
)

type batchResults struct {
	Data []struct {
		Index  int    `json:"index"`
		ID     string `json:"id"`
		Object struct {
			ID      string `json:"id"`
			Version int64  `json:"version"`
		} `json:"object"`
		Duplicate bool `json:"duplicate"`
	} `json:"data"`
}

func batchOf(events ...string) string {
	return `{"events": [` + strings.Join(events, ",") + `]}`
}

func event(objectID string, extra ...string) string {
	return fmt.Sprintf(`{"event_type": "invoice.paid", "object_id": %q, "data": {"n": 1}%s}`, objectID, strings.Join(extra, ""))
}

func (b *testBundle) messageCount(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(b.ctx, "SELECT count(*) FROM herald.messages").Scan(&n))
	return n
}

func TestPublishBatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.publish(t, b.acme, "acme", "invoice.paid", "inv_2")

	resp := b.do(t, b.acme, "POST", "/v1/tenants/acme/messages/batch",
		batchOf(event("inv_1"), event("inv_2", `, "idempotency_key": "k1"`), event("inv_1")))
	require.Equal(t, http.StatusAccepted, resp.Status, "%s", resp.Body)
	var got batchResults
	resp.Decode(t, &got)
	require.Len(t, got.Data, 3)
	for i, want := range []struct {
		object  string
		version int64
	}{{"inv_1", 1}, {"inv_2", 2}, {"inv_1", 2}} {
		require.Equal(t, i, got.Data[i].Index)
		require.Equal(t, want.object, got.Data[i].Object.ID)
		require.Equal(t, want.version, got.Data[i].Object.Version)
		require.False(t, got.Data[i].Duplicate)
	}
	m := b.do(t, b.acme, "GET", "/v1/tenants/acme/messages/"+got.Data[1].ID, nil)
	require.Equal(t, http.StatusOK, m.Status)
	require.Equal(t, "k1", m.JSON(t)["idempotency_key"])

	// A key published before: not published again, the first message back.
	resp = b.do(t, b.acme, "POST", "/v1/tenants/acme/messages/batch", batchOf(event("inv_2", `, "idempotency_key": "k1"`), event("inv_3")))
	require.Equal(t, http.StatusAccepted, resp.Status, "%s", resp.Body)
	var again batchResults
	resp.Decode(t, &again)
	require.True(t, again.Data[0].Duplicate)
	require.Equal(t, got.Data[1].ID, again.Data[0].ID)
	require.Equal(t, int64(2), again.Data[0].Object.Version)
	require.Equal(t, 5, b.messageCount(t))

	b.do(t, b.globex, "POST", "/v1/tenants/acme/messages/batch", batchOf(event("inv_1"))).Problem(t, http.StatusNotFound)
}

// The batch's bad input: every bad event by index and field, nothing
// published.
func TestPublishBatchBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	path := "/v1/tenants/acme/messages/batch"

	p := b.do(t, b.acme, "POST", path, batchOf(
		event("inv_1"),
		`{"event_type": "Bad Type", "object_id": "inv_2", "data": {}}`,
		event("inv_3"),
		`{"event_type": "a", "object_id": "inv_4", "data": [1]}`,
		`{"event_type": "a", "object_id": 7, "data": {}}`,
		`{"event_type": "a", "object_id": "inv_6"}`,
		`"not an event"`,
		`{"event_type": "a", "object_id": "inv_8", "data": {}, "colour": "red"}`,
	)).Problem(t, http.StatusUnprocessableEntity)
	require.Equal(t, "events[4].object_id", p.Field, "problems found while reading come first")
	fields := map[int]string{}
	for _, e := range p.Errors {
		fields[e.Index] = e.Field
		require.Contains(t, e.Detail, fmt.Sprintf("events[%d]", e.Index))
	}
	require.Equal(t, map[int]string{4: "object_id", 5: "data", 6: "", 7: "colour"}, fields)
	require.Contains(t, p.Detail, "nothing was published")

	// What Postgres checks is reported the same way.
	p = b.do(t, b.acme, "POST", path, batchOf(
		event("inv_1"),
		`{"event_type": "Bad Type", "object_id": "inv_2", "data": {}}`,
		`{"event_type": "a", "object_id": "inv_4", "data": [1]}`,
	)).Problem(t, http.StatusUnprocessableEntity)
	require.Equal(t, "events[1].event_type", p.Field)
	require.Equal(t, []api.ItemProblem{
		{Index: 1, Field: "event_type", Detail: `events[1].event_type "Bad Type" is malformed; use lower-case letters, digits, ".", "_" and "-", starting with a letter or digit, for example invoice.paid`},
		{Index: 2, Field: "data", Detail: `events[2].data is a JSON array; it must be a JSON object, for example {"id": "inv_123"}`},
	}, p.Errors)

	// A key twice in one batch: 422 naming both events.
	p = b.do(t, b.acme, "POST", path, batchOf(event("inv_1", `, "idempotency_key": "k"`), event("inv_2"), event("inv_3", `, "idempotency_key": "k"`))).
		Problem(t, http.StatusUnprocessableEntity)
	require.Equal(t, "events[2].idempotency_key", p.Field)
	require.Contains(t, p.Detail, "events[2].idempotency_key repeats the key of item 0")

	// Over the limit: 413 naming it.
	events := make([]string, 1001)
	for i := range events {
		events[i] = event(fmt.Sprintf("inv_%d", i))
	}
	p = b.do(t, b.acme, "POST", path, batchOf(events...)).Problem(t, http.StatusRequestEntityTooLarge)
	require.Contains(t, p.Detail, "holds 1001 events; at most 1000")

	b.do(t, b.acme, "POST", path, `{"events": []}`).Problem(t, http.StatusUnprocessableEntity)
	b.do(t, b.acme, "POST", path, `{}`).Problem(t, http.StatusUnprocessableEntity)
	p = b.do(t, b.acme, "POST", path, batchOf(event("inv_1")), "Idempotency-Key", "k").Problem(t, http.StatusUnprocessableEntity)
	require.Equal(t, "Idempotency-Key", p.Field)
	require.Zero(t, b.messageCount(t), "no rejected batch published anything")

	// The full batch is accepted.
	resp := b.do(t, b.acme, "POST", path, batchOf(events[:1000]...))
	require.Equal(t, http.StatusAccepted, resp.Status, "%s", resp.Body)
	require.Equal(t, 1000, b.messageCount(t))
}

// The one-statement publish answers with what a GET shows.
func TestPublishAnswersWhatGetShows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	resp := b.do(t, b.acme, "POST", "/v1/tenants/acme/messages", `{"event_type": "invoice.paid", "object_id": "inv_1", "data": {"b": 1, "a": [1, 2]}}`)
	require.Equal(t, http.StatusAccepted, resp.Status, "%s", resp.Body)
	id := resp.JSON(t)["id"].(string)
	got := b.do(t, b.acme, "GET", "/v1/tenants/acme/messages/"+id, nil)
	require.Equal(t, http.StatusOK, got.Status)
	require.JSONEq(t, string(resp.Body), string(got.Body))
}
