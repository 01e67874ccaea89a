package api_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/deliverystatus"
	"github.com/heraldhq/herald/internal/historyid"
	"github.com/heraldhq/herald/internal/testfactory"
)

type messageView struct {
	ID        string `json:"id"`
	EventType string `json:"event_type"`
	Object    struct {
		ID      string `json:"id"`
		Version int64  `json:"version"`
	} `json:"object"`
	Payload        map[string]any `json:"payload"`
	DeliveryCounts map[string]int `json:"delivery_counts"`
	Deliveries     []struct {
		EndpointID string `json:"endpoint_id"`
		Status     string `json:"status"`
	} `json:"deliveries"`
}

type messageList struct {
	Data []messageView `json:"data"`
	Next string        `json:"next"`
}

func (b *testBundle) publish(t *testing.T, key, tenant, eventType, objectID string) messageView {
	t.Helper()
	resp := b.do(t, key, "POST", "/v1/tenants/"+tenant+"/messages",
		map[string]any{"event_type": eventType, "object_id": objectID, "data": map[string]any{"n": 1}})
	require.Equal(t, http.StatusAccepted, resp.Status, "%s", resp.Body)
	var m messageView
	resp.Decode(t, &m)
	return m
}

func TestPublishReturnsTheMessage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := b.publish(t, b.acme, "acme", "invoice.paid", "inv_1")
	require.Equal(t, "invoice.paid", m.EventType)
	require.Equal(t, int64(1), m.Object.Version)
	require.Equal(t, "invoice.paid", m.Payload["type"], "the payload is the body sent on the wire")
	require.Equal(t, int64(2), b.publish(t, b.operator, "acme", "invoice.paid", "inv_1").Object.Version)

	p := b.do(t, b.acme, "POST", "/v1/tenants/acme/messages", map[string]any{"event_type": "Bad Type", "object_id": "x", "data": map[string]any{}}).Problem(t, http.StatusUnprocessableEntity)
	require.Equal(t, "event_type", p.Field)
	p = b.do(t, b.acme, "POST", "/v1/tenants/acme/messages", map[string]any{"event_type": "a.b", "object_id": "x", "data": []int{1}}).Problem(t, http.StatusUnprocessableEntity)
	require.Equal(t, "data", p.Field)
	p = b.do(t, b.acme, "POST", "/v1/tenants/acme/messages", map[string]any{"event_type": "a.b", "object_id": "x"}).Problem(t, http.StatusUnprocessableEntity)
	require.Equal(t, "data", p.Field)
	b.do(t, b.globex, "POST", "/v1/tenants/acme/messages", map[string]any{"event_type": "a.b", "object_id": "x", "data": map[string]any{}}).Problem(t, http.StatusNotFound)
}

func TestPublishIdempotencyKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := `{"event_type": "invoice.paid", "object_id": "inv_1", "data": {"amount": 10}}`
	first := b.do(t, b.acme, "POST", "/v1/tenants/acme/messages", body, "Idempotency-Key", "k1")
	require.Equal(t, http.StatusAccepted, first.Status, "%s", first.Body)
	require.Empty(t, first.Header.Get("Idempotent-Replayed"))

	reformatted := `{"data":{"amount":10},"object_id":"inv_1","event_type":"invoice.paid"}`
	again := b.do(t, b.acme, "POST", "/v1/tenants/acme/messages", reformatted, "Idempotency-Key", "k1")
	require.Equal(t, first.Status, again.Status)
	require.JSONEq(t, string(first.Body), string(again.Body))
	require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))

	p := b.do(t, b.acme, "POST", "/v1/tenants/acme/messages",
		`{"event_type": "invoice.paid", "object_id": "inv_1", "data": {"amount": 11}}`, "Idempotency-Key", "k1").Problem(t, http.StatusConflict)
	require.Equal(t, "Idempotency-Key", p.Field)

	// The same key in another tenant is another key.
	require.Equal(t, http.StatusAccepted, b.do(t, b.globex, "POST", "/v1/tenants/globex/messages", body, "Idempotency-Key", "k1").Status)

	// A failed publish does not use up its key.
	b.do(t, b.acme, "POST", "/v1/tenants/acme/messages", `{"event_type": "x", "object_id": "", "data": {}}`, "Idempotency-Key", "k2").Problem(t, http.StatusUnprocessableEntity)
	require.Equal(t, http.StatusAccepted, b.do(t, b.acme, "POST", "/v1/tenants/acme/messages", body, "Idempotency-Key", "k2").Status)
}

func TestConcurrentRepeatsPublishOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := `{"event_type": "invoice.paid", "object_id": "inv_1", "data": {}}`
	var wg sync.WaitGroup
	statuses := make([]int, 8)
	for i := range statuses {
		wg.Go(func() {
			statuses[i] = b.do(t, b.acme, "POST", "/v1/tenants/acme/messages", body, "Idempotency-Key", "same").Status
		})
	}
	wg.Wait()
	for _, s := range statuses {
		require.Equal(t, http.StatusAccepted, s)
	}
	var n int
	require.NoError(t, b.pool.QueryRow(b.ctx, "SELECT count(*) FROM herald.messages").Scan(&n))
	require.Equal(t, 1, n)
}

// addEndpoint inserts an endpoint row for tenant and returns its id.
func (b *testBundle) addEndpoint(t *testing.T, tenant string) uuid.UUID {
	t.Helper()
	return testfactory.Endpoint(t, b.pool, &testfactory.EndpointOpts{TenantID: tenant}).ID
}

// addDelivery inserts a delivery of message to endpoint with status, and
// one attempt with outcome when outcome is not empty.
func (b *testBundle) addDelivery(t *testing.T, message string, endpoint uuid.UUID, status, outcome string) uuid.UUID {
	t.Helper()
	id := testfactory.Delivery(t, b.pool, &testfactory.DeliveryOpts{
		MessageID: uuid.MustParse(message), EndpointID: endpoint, Status: deliverystatus.Status(status),
	}).ID
	if outcome != "" {
		_, err := b.pool.Exec(b.ctx, `INSERT INTO herald.attempts (id, delivery_id, message_id, endpoint_id, attempt_number, trigger, started_at, duration_ms, status_code, outcome)
VALUES ($1, $2, $3, $4, 1, 'scheduled', now(), 12, 200, $5)`, uuid.Must(historyid.Child(id)), id, message, endpoint, outcome)
		require.NoError(t, err)
	}
	return id
}

func TestListAndGetMessagesWithDeliveriesAndAttempts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ep := b.addEndpoint(t, "acme")
	paid := b.publish(t, b.acme, "acme", "invoice.paid", "inv_1")
	created := b.publish(t, b.acme, "acme", "invoice.created", "inv_2")
	b.publish(t, b.globex, "globex", "invoice.paid", "inv_9")
	b.addDelivery(t, paid.ID, ep, "succeeded", "succeeded")
	b.addDelivery(t, created.ID, ep, "failed", "failed")

	var list messageList
	b.do(t, b.acme, "GET", "/v1/tenants/acme/messages", nil).Decode(t, &list)
	require.Len(t, list.Data, 2, "only acme's messages")
	require.Equal(t, created.ID, list.Data[0].ID, "newest first")
	require.Equal(t, map[string]int{"failed": 1}, list.Data[0].DeliveryCounts)

	b.do(t, b.acme, "GET", "/v1/tenants/acme/messages?event_type=invoice.paid", nil).Decode(t, &list)
	require.Len(t, list.Data, 1)
	require.Equal(t, paid.ID, list.Data[0].ID)
	b.do(t, b.acme, "GET", "/v1/tenants/acme/messages?status=failed&endpoint_id="+ep.String(), nil).Decode(t, &list)
	require.Len(t, list.Data, 1)
	require.Equal(t, created.ID, list.Data[0].ID)
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	b.do(t, b.acme, "GET", "/v1/tenants/acme/messages?since="+future, nil).Decode(t, &list)
	require.Empty(t, list.Data)

	for _, bad := range []string{"status=lost", "since=yesterday", "limit=0", "limit=abc", "after=bm9wZQ", "event_type=A%20B", "endpoint_id=7"} {
		b.do(t, b.acme, "GET", "/v1/tenants/acme/messages?"+bad, nil).Problem(t, http.StatusBadRequest)
	}

	var got messageView
	b.do(t, b.acme, "GET", "/v1/tenants/acme/messages/"+paid.ID, nil).Decode(t, &got)
	require.Len(t, got.Deliveries, 1)
	require.Equal(t, "succeeded", got.Deliveries[0].Status)
	require.Equal(t, http.StatusOK, b.do(t, b.acme, "GET", "/v1/tenants/acme/messages/msg_"+paid.ID, nil).Status, "the webhook-id form works too")
	b.do(t, b.globex, "GET", "/v1/tenants/globex/messages/"+paid.ID, nil).Problem(t, http.StatusNotFound)
	b.do(t, b.acme, "GET", "/v1/tenants/acme/messages/not-a-uuid", nil).Problem(t, http.StatusNotFound)

	var attempts struct {
		Data []struct {
			Outcome    string `json:"outcome"`
			StatusCode int    `json:"status_code"`
		} `json:"data"`
	}
	b.do(t, b.acme, "GET", "/v1/tenants/acme/messages/"+paid.ID+"/attempts", nil).Decode(t, &attempts)
	require.Len(t, attempts.Data, 1)
	require.Equal(t, 200, attempts.Data[0].StatusCode)
	b.do(t, b.acme, "GET", "/v1/tenants/acme/endpoints/"+ep.String()+"/attempts", nil).Decode(t, &attempts)
	require.Len(t, attempts.Data, 2)
	b.do(t, b.globex, "GET", "/v1/tenants/globex/endpoints/"+ep.String()+"/attempts", nil).Problem(t, http.StatusNotFound)
}

func TestEndpointStatsCountOutcomes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ep := b.addEndpoint(t, "acme")
	for i, outcome := range []string{"succeeded", "succeeded", "failed"} {
		m := b.publish(t, b.acme, "acme", "invoice.paid", fmt.Sprint("inv_", i))
		b.addDelivery(t, m.ID, ep, outcome, outcome)
	}
	var stats struct {
		Attempts   map[string]int `json:"attempts"`
		Deliveries map[string]int `json:"deliveries"`
		Series     []struct {
			Attempts map[string]int `json:"attempts"`
		} `json:"series"`
	}
	b.do(t, b.acme, "GET", "/v1/tenants/acme/endpoints/"+ep.String()+"/stats?bucket=15m", nil).Decode(t, &stats)
	require.Equal(t, map[string]int{"succeeded": 2, "failed": 1}, stats.Attempts)
	require.Equal(t, map[string]int{"succeeded": 2, "failed": 1}, stats.Deliveries)
	require.Len(t, stats.Series, 1)

	old := time.Now().Add(-48 * time.Hour).UTC().Format(time.RFC3339)
	b.do(t, b.acme, "GET", "/v1/tenants/acme/endpoints/"+ep.String()+"/stats?since="+old+"&bucket=1m", nil).Problem(t, http.StatusBadRequest)
	b.do(t, b.acme, "GET", "/v1/tenants/acme/endpoints/"+ep.String()+"/stats?bucket=1s", nil).Problem(t, http.StatusBadRequest)
}

// Pages stay consistent while other requests publish: every message that
// existed when paging started is seen exactly once.
func TestPaginationIsStableUnderConcurrentInserts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	existing := map[string]bool{}
	for i := range 25 {
		existing[b.publish(t, b.acme, "acme", "invoice.paid", fmt.Sprint("inv_", i)).ID] = true
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
				b.publish(t, b.acme, "acme", "invoice.paid", fmt.Sprint("new_", i))
			}
		}
	})
	seen := map[string]int{}
	after := ""
	for {
		var list messageList
		b.do(t, b.acme, "GET", "/v1/tenants/acme/messages?limit=4&after="+after, nil).Decode(t, &list)
		for _, m := range list.Data {
			seen[m.ID]++
		}
		if list.Next == "" {
			break
		}
		after = list.Next
	}
	close(stop)
	wg.Wait()
	for id := range existing {
		require.Equal(t, 1, seen[id], "message %s seen once", id)
	}
	for id, n := range seen {
		require.Equal(t, 1, n, "message %s seen once", id)
	}
}

func TestExpiredIdempotencyRecordsArePruned(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.pool.Exec(b.ctx, `INSERT INTO herald.idempotency_records (tenant_id, key, request_hash, status_code, response_body, created_at)
VALUES ('acme', 'old', '\x00', 202, '{}', now() - interval '2 days')`)
	require.NoError(t, err)
	body := `{"event_type": "invoice.paid", "object_id": "inv_1", "data": {}}`
	require.Equal(t, http.StatusAccepted, b.do(t, b.acme, "POST", "/v1/tenants/acme/messages", body, "Idempotency-Key", "new").Status)
	var keys []string
	rows, err := b.pool.Query(b.ctx, "SELECT key FROM herald.idempotency_records ORDER BY key")
	require.NoError(t, err)
	for rows.Next() {
		var k string
		require.NoError(t, rows.Scan(&k))
		keys = append(keys, k)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"new"}, keys)
}

func TestOptionalBodiesMayBeLeftOut(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e := b.createEndpoint(t, b.acme, "acme", map[string]any{"url": "https://example.com/hook"})
	for _, path := range []string{"/v1/tenants/acme/portal-links", "/v1/tenants/acme/api-keys", "/v1/tenants/acme/endpoints/" + e.ID + "/disable", "/v1/tenants/acme/endpoints/" + e.ID + "/secret/rotate"} {
		resp := b.do(t, b.acme, "POST", path, nil)
		require.Less(t, resp.Status, 300, "%s: %s", path, resp.Body)
	}
}
