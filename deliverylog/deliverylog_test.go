package deliverylog_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/deliverylog"
	"github.com/heraldhq/herald/internal/deliverystatus"
	"github.com/heraldhq/herald/internal/historyid"
	"github.com/heraldhq/herald/internal/page"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/testfactory"
)

// t0 is when the first message of a test was published.
var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

type testBundle struct {
	ctx  context.Context
	pool *pgxpool.Pool
}

// setup gives a test a fresh database with the tenants acme and globex.
func setup(t *testing.T) *testBundle {
	t.Helper()
	b := &testBundle{ctx: context.Background(), pool: pgtest.NewPool(t)}
	testfactory.Tenant(t, b.pool, &testfactory.TenantOpts{ID: "acme"})
	testfactory.Tenant(t, b.pool, &testfactory.TenantOpts{ID: "globex"})
	return b
}

func (b *testBundle) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	_, err := b.pool.Exec(b.ctx, sql, args...)
	require.NoError(t, err)
}

// endpoint inserts an endpoint of tenant; endpoints are created in the
// order they are inserted.
func (b *testBundle) endpoint(t *testing.T, tenant, url string) uuid.UUID {
	t.Helper()
	return testfactory.Endpoint(t, b.pool, &testfactory.EndpointOpts{TenantID: tenant, URL: url}).ID
}

// message inserts a message of tenant published and dispatched at
// createdAt, whose body names its type.
func (b *testBundle) message(t *testing.T, tenant, eventType string, createdAt time.Time) uuid.UUID {
	t.Helper()
	return testfactory.Message(t, b.pool, &testfactory.MessageOpts{TenantID: tenant, EventType: eventType,
		Body: fmt.Sprintf(`{"type": %q}`, eventType), CreatedAt: &createdAt, DispatchedAt: &createdAt}).ID
}

// delivery inserts the delivery of message to endpoint in status;
// deliveries are created in the order they are inserted.
func (b *testBundle) delivery(t *testing.T, message, endpoint uuid.UUID, status deliverystatus.Status) uuid.UUID {
	t.Helper()
	return testfactory.Delivery(t, b.pool, &testfactory.DeliveryOpts{MessageID: message, EndpointID: endpoint, Status: status}).ID
}

// attempt inserts attempt number n of delivery, started at startedAt, that
// got statusCode.
func (b *testBundle) attempt(t *testing.T, delivery uuid.UUID, n int, startedAt time.Time, statusCode int) uuid.UUID {
	t.Helper()
	// An attempt's id carries its delivery's millisecond, as
	// delivery.recordAttempt makes it: the log looks a message's attempts
	// up in the partition of that millisecond.
	id, err := historyid.Child(delivery)
	require.NoError(t, err)
	b.exec(t, `
INSERT INTO herald.attempts (id, delivery_id, message_id, endpoint_id, attempt_number, trigger, started_at,
  duration_ms, request_headers, status_code, response_excerpt, outcome)
SELECT $1, d.id, d.message_id, d.endpoint_id, $3, 'scheduled', $4, 12, '{"webhook-id": "msg_x"}', $5, 'ok',
  CASE WHEN $5 < 300 THEN 'succeeded' ELSE 'retry' END
FROM herald.deliveries d WHERE d.id = $2`, id, delivery, n, startedAt, statusCode)
	return id
}

func messageIDs(msgs []deliverylog.Message) []uuid.UUID {
	ids := make([]uuid.UUID, len(msgs))
	for i, m := range msgs {
		ids[i] = m.ID
	}
	return ids
}

func attemptIDs(attempts []deliverylog.Attempt) []uuid.UUID {
	ids := make([]uuid.UUID, len(attempts))
	for i, a := range attempts {
		ids[i] = a.ID
	}
	return ids
}

func TestListMessagesFilters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e1 := b.endpoint(t, "acme", "https://one.example/hook")
	e2 := b.endpoint(t, "acme", "https://two.example/hook")
	eg := b.endpoint(t, "globex", "https://globex.example/hook")

	paid := b.message(t, "acme", "invoice.paid", t0)
	b.delivery(t, paid, e1, deliverystatus.Succeeded)
	b.delivery(t, paid, e2, deliverystatus.Failed)
	created := b.message(t, "acme", "invoice.created", t0.Add(time.Minute))
	b.delivery(t, created, e1, deliverystatus.Failed)
	queued := b.message(t, "acme", "invoice.paid", t0.Add(2*time.Minute))
	foreign := b.message(t, "globex", "invoice.paid", t0.Add(3*time.Minute))
	b.delivery(t, foreign, eg, deliverystatus.Failed)

	since, until := t0.Add(time.Minute), t0.Add(2*time.Minute)
	for _, tc := range []struct {
		name   string
		filter deliverylog.MessageFilter
		want   []uuid.UUID
	}{
		{"none, newest first, own tenant only", deliverylog.MessageFilter{}, []uuid.UUID{queued, created, paid}},
		{"event type", deliverylog.MessageFilter{EventType: "invoice.paid"}, []uuid.UUID{queued, paid}},
		{"a delivery in a status", deliverylog.MessageFilter{Status: deliverystatus.Failed}, []uuid.UUID{created, paid}},
		{"a delivery to an endpoint", deliverylog.MessageFilter{EndpointID: &e2}, []uuid.UUID{paid}},
		{"one delivery both to the endpoint and in the status", deliverylog.MessageFilter{Status: deliverystatus.Succeeded, EndpointID: &e2}, []uuid.UUID{}},
		{"another tenant's endpoint", deliverylog.MessageFilter{EndpointID: &eg}, []uuid.UUID{}},
		{"since, inclusive", deliverylog.MessageFilter{Since: &since}, []uuid.UUID{queued, created}},
		{"until, exclusive", deliverylog.MessageFilter{Until: &until}, []uuid.UUID{created, paid}},
		{"since and until", deliverylog.MessageFilter{Since: &since, Until: &until}, []uuid.UUID{created}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := deliverylog.ListMessages(b.ctx, b.pool, "acme", tc.filter, page.Request{})
			require.NoError(t, err)
			require.Equal(t, tc.want, messageIDs(got.Items))
			require.Nil(t, got.Next)
		})
	}
}

func TestListMessagesPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// Pairs of messages share a time, so pages end between them and the
	// id (a UUIDv7, rising) orders them: want is newest first.
	var want []uuid.UUID
	for i := range 5 {
		want = append([]uuid.UUID{b.message(t, "acme", "invoice.paid", t0.Add(time.Duration(i/2)*time.Second))}, want...)
	}
	var got []uuid.UUID
	req := page.Request{Limit: 2}
	for pages := 0; ; pages++ {
		require.Less(t, pages, 3, "five messages in pages of two take three pages")
		p, err := deliverylog.ListMessages(b.ctx, b.pool, "acme", deliverylog.MessageFilter{}, req)
		require.NoError(t, err)
		require.LessOrEqual(t, len(p.Items), 2)
		got = append(got, messageIDs(p.Items)...)
		if p.Next == nil {
			break
		}
		req.After = p.Next
	}
	require.Equal(t, want, got)

	_, err := deliverylog.ListMessages(b.ctx, b.pool, "acme", deliverylog.MessageFilter{},
		page.Request{After: &page.Cursor{CreatedAt: t0, ID: "not-a-uuid"}})
	require.ErrorIs(t, err, page.ErrInvalidCursor)
}

func TestGetMessage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e1 := b.endpoint(t, "acme", "https://one.example/hook")
	e2 := b.endpoint(t, "acme", "https://two.example/hook")
	e3 := b.endpoint(t, "acme", "https://three.example/hook")
	dispatched := t0.Add(time.Second)
	id := testfactory.Message(t, b.pool, &testfactory.MessageOpts{TenantID: "acme", EventType: "invoice.paid",
		ObjectID: "inv_1", ObjectVersion: 3, Body: `{"type": "invoice.paid"}`, CreatedAt: &t0, DispatchedAt: &dispatched}).ID
	b.delivery(t, id, e1, deliverystatus.Failed)
	b.delivery(t, id, e2, deliverystatus.Failed)
	b.delivery(t, id, e3, deliverystatus.Pending)

	m, err := deliverylog.GetMessage(b.ctx, b.pool, "acme", id)
	require.NoError(t, err)
	require.Equal(t, id, m.ID)
	require.Equal(t, "acme", m.TenantID)
	require.Equal(t, "invoice.paid", m.EventType)
	require.Equal(t, "inv_1", m.ObjectID)
	require.Equal(t, int64(3), m.ObjectVersion)
	require.Nil(t, m.IdempotencyKey)
	require.True(t, m.CreatedAt.Equal(t0), "created at %s", m.CreatedAt)
	require.True(t, m.DispatchedAt.Equal(dispatched), "dispatched at %s", m.DispatchedAt)
	require.JSONEq(t, `{"type": "invoice.paid"}`, string(m.Payload))
	require.Equal(t, map[deliverystatus.Status]int{deliverystatus.Failed: 2, deliverystatus.Pending: 1}, m.DeliveryCounts)

	listed, err := deliverylog.ListMessages(b.ctx, b.pool, "acme", deliverylog.MessageFilter{}, page.Request{})
	require.NoError(t, err)
	require.Equal(t, []deliverylog.Message{m}, listed.Items, "a list shows a message as GetMessage does")

	_, err = deliverylog.GetMessage(b.ctx, b.pool, "globex", id)
	require.ErrorIs(t, err, deliverylog.ErrNotFound, "another tenant's message")
	_, err = deliverylog.GetMessage(b.ctx, b.pool, "acme", uuid.Must(uuid.NewV7()))
	require.ErrorIs(t, err, deliverylog.ErrNotFound, "an unknown id")
}

func TestGetMessageCountsNoDeliveryAsEmpty(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.message(t, "acme", "invoice.paid", t0)
	m, err := deliverylog.GetMessage(b.ctx, b.pool, "acme", id)
	require.NoError(t, err)
	require.Equal(t, map[deliverystatus.Status]int{}, m.DeliveryCounts)
}

// A message published in an open transaction is read in that transaction,
// as the API does to answer a publish.
func TestGetMessageInTransaction(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tx, err := b.pool.Begin(b.ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(b.ctx) }()
	id := uuid.Must(uuid.NewV7())
	_, err = tx.Exec(b.ctx, `INSERT INTO herald.messages (id, tenant_id, event_type, object_id, object_version, body, idempotency_key)
VALUES ($1, 'acme', 'invoice.paid', 'inv_1', 3, '{}', 'k1')`, id)
	require.NoError(t, err)

	m, err := deliverylog.GetMessage(b.ctx, tx, "acme", id)
	require.NoError(t, err)
	require.Equal(t, "k1", *m.IdempotencyKey)
	require.Nil(t, m.DispatchedAt, "not fanned out yet")
	_, err = deliverylog.GetMessage(b.ctx, b.pool, "acme", id)
	require.ErrorIs(t, err, deliverylog.ErrNotFound, "uncommitted elsewhere")
}

func TestListDeliveries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// The endpoints' order is the reverse of the deliveries'.
	earlier := b.endpoint(t, "acme", "https://earlier.example/hook")
	later := b.endpoint(t, "acme", "https://later.example/hook")
	id := b.message(t, "acme", "invoice.paid", t0)
	first := b.delivery(t, id, later, deliverystatus.Succeeded)
	second := b.delivery(t, id, earlier, deliverystatus.Pending)
	b.attempt(t, first, 1, t0, 200)
	b.exec(t, `UPDATE herald.deliveries SET attempt_count = 1, first_attempt_at = $2, last_attempt_at = $2,
  completed_at = $2, last_status_code = 200 WHERE id = $1`, first, t0)
	b.exec(t, `UPDATE herald.deliveries SET attempt_count = 1, last_status_code = 503, last_error = 'unavailable',
  next_attempt_at = $2 WHERE id = $1`, second, t0.Add(time.Minute))

	got, err := deliverylog.ListDeliveries(b.ctx, b.pool, "acme", id)
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, first, got[0].ID, "in the order they were created")
	require.Equal(t, second, got[1].ID)

	d := got[0]
	require.Equal(t, id, d.MessageID)
	require.Equal(t, later, d.EndpointID)
	require.Equal(t, deliverystatus.Succeeded, d.Status)
	require.Equal(t, 1, d.AttemptCount)
	require.True(t, d.CompletedAt.Equal(t0))
	require.Equal(t, 200, *d.LastStatusCode)
	require.Nil(t, d.LastError)
	require.Nil(t, d.NextAttemptAt)

	d = got[1]
	require.Equal(t, deliverystatus.Pending, d.Status)
	require.Equal(t, "unavailable", *d.LastError)
	require.True(t, d.NextAttemptAt.Equal(t0.Add(time.Minute)))
	require.Nil(t, d.CompletedAt)

	foreign, err := deliverylog.ListDeliveries(b.ctx, b.pool, "globex", id)
	require.NoError(t, err)
	require.Empty(t, foreign, "another tenant's message")
}

func TestListMessageAttempts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e1 := b.endpoint(t, "acme", "https://one.example/hook")
	e2 := b.endpoint(t, "acme", "https://two.example/hook")
	id := b.message(t, "acme", "invoice.paid", t0)
	other := b.message(t, "acme", "invoice.paid", t0)
	d1 := b.delivery(t, id, e1, deliverystatus.Pending)
	d2 := b.delivery(t, id, e2, deliverystatus.Succeeded)
	a1 := b.attempt(t, d1, 1, t0, 500)
	a2 := b.attempt(t, d2, 1, t0.Add(time.Second), 200)
	a3 := b.attempt(t, d1, 2, t0.Add(time.Minute), 503)
	b.attempt(t, b.delivery(t, other, e1, deliverystatus.Succeeded), 1, t0, 200)

	p, err := deliverylog.ListMessageAttempts(b.ctx, b.pool, "acme", id, deliverylog.AttemptFilter{}, page.Request{})
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{a3, a2, a1}, attemptIDs(p.Items), "the message's attempts, newest first")

	a := p.Items[2]
	require.Equal(t, d1, a.DeliveryID)
	require.Equal(t, id, a.MessageID)
	require.Equal(t, e1, a.EndpointID)
	require.Equal(t, 1, a.AttemptNumber)
	require.Equal(t, "scheduled", a.Trigger)
	require.True(t, a.StartedAt.Equal(t0))
	require.Equal(t, 12, a.DurationMS)
	require.Equal(t, 500, *a.StatusCode)
	require.Nil(t, a.Error)
	require.Equal(t, "retry", a.Outcome)
	require.JSONEq(t, `{"webhook-id": "msg_x"}`, string(a.RequestHeaders))
	require.Equal(t, "ok", a.ResponseExcerpt)

	since, until := t0.Add(time.Second), t0.Add(time.Minute)
	p, err = deliverylog.ListMessageAttempts(b.ctx, b.pool, "acme", id, deliverylog.AttemptFilter{Since: &since, Until: &until}, page.Request{})
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{a2}, attemptIDs(p.Items), "started in [since, until)")

	p, err = deliverylog.ListMessageAttempts(b.ctx, b.pool, "acme", id, deliverylog.AttemptFilter{}, page.Request{Limit: 2})
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{a3, a2}, attemptIDs(p.Items))
	require.NotNil(t, p.Next)
	p, err = deliverylog.ListMessageAttempts(b.ctx, b.pool, "acme", id, deliverylog.AttemptFilter{}, page.Request{Limit: 2, After: p.Next})
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{a1}, attemptIDs(p.Items))
	require.Nil(t, p.Next)

	p, err = deliverylog.ListMessageAttempts(b.ctx, b.pool, "globex", id, deliverylog.AttemptFilter{}, page.Request{})
	require.NoError(t, err)
	require.Empty(t, p.Items, "another tenant's message")
}

func TestListEndpointAttempts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e1 := b.endpoint(t, "acme", "https://one.example/hook")
	e2 := b.endpoint(t, "acme", "https://two.example/hook")
	m1 := b.message(t, "acme", "invoice.paid", t0)
	m2 := b.message(t, "acme", "invoice.paid", t0)
	a1 := b.attempt(t, b.delivery(t, m1, e1, deliverystatus.Succeeded), 1, t0, 200)
	a2 := b.attempt(t, b.delivery(t, m2, e1, deliverystatus.Succeeded), 1, t0.Add(time.Second), 200)
	b.attempt(t, b.delivery(t, m1, e2, deliverystatus.Succeeded), 1, t0, 200)

	p, err := deliverylog.ListEndpointAttempts(b.ctx, b.pool, "acme", e1, deliverylog.AttemptFilter{}, page.Request{})
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{a2, a1}, attemptIDs(p.Items), "the endpoint's attempts, newest first")

	until := t0.Add(time.Second)
	p, err = deliverylog.ListEndpointAttempts(b.ctx, b.pool, "acme", e1, deliverylog.AttemptFilter{Until: &until}, page.Request{})
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{a1}, attemptIDs(p.Items))

	p, err = deliverylog.ListEndpointAttempts(b.ctx, b.pool, "globex", e1, deliverylog.AttemptFilter{}, page.Request{})
	require.NoError(t, err)
	require.Empty(t, p.Items, "another tenant's endpoint")

	_, err = deliverylog.ListEndpointAttempts(b.ctx, b.pool, "acme", e1, deliverylog.AttemptFilter{},
		page.Request{After: &page.Cursor{CreatedAt: t0, ID: "x"}})
	require.ErrorIs(t, err, page.ErrInvalidCursor)
}

// A summary list keeps the same messages in the same order as the full
// list, for every filter.
func TestListMessageSummariesMatchListMessages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e1 := b.endpoint(t, "acme", "https://one.example/hook")
	for i := range 6 {
		m := b.message(t, "acme", []string{"invoice.paid", "invoice.created"}[i%2], t0.Add(time.Duration(i)*time.Minute))
		b.delivery(t, m, e1, deliverystatus.All()[i%3])
	}
	since := t0.Add(2 * time.Minute)
	for _, f := range []deliverylog.MessageFilter{
		{},
		{EventType: "invoice.created"},
		{Status: deliverystatus.Failed, EndpointID: &e1},
		{Since: &since},
	} {
		req := page.Request{Limit: 2}
		for {
			full, err := deliverylog.ListMessages(b.ctx, b.pool, "acme", f, req)
			require.NoError(t, err)
			brief, err := deliverylog.ListMessageSummaries(b.ctx, b.pool, "acme", f, req)
			require.NoError(t, err)
			require.Len(t, brief.Items, len(full.Items), "filter %+v", f)
			for i := range full.Items {
				require.Equal(t, full.Items[i].MessageSummary, brief.Items[i])
			}
			require.Equal(t, full.Next, brief.Next)
			if full.Next == nil {
				break
			}
			req.After = full.Next
		}
	}

	_, err := deliverylog.ListMessageSummaries(b.ctx, b.pool, "acme", deliverylog.MessageFilter{},
		page.Request{After: &page.Cursor{CreatedAt: t0, ID: "x"}})
	require.ErrorIs(t, err, page.ErrInvalidCursor)
}

func TestListDeliveriesOfMessages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	earlier := b.endpoint(t, "acme", "https://earlier.example/hook")
	later := b.endpoint(t, "acme", "https://later.example/hook")
	m1 := b.message(t, "acme", "invoice.paid", t0)
	m2 := b.message(t, "acme", "invoice.created", t0.Add(time.Minute))
	m1later := b.delivery(t, m1, later, deliverystatus.Succeeded)
	m1earlier := b.delivery(t, m1, earlier, deliverystatus.Failed)
	m2later := b.delivery(t, m2, later, deliverystatus.Pending)

	got, err := deliverylog.ListDeliveriesOfMessages(b.ctx, b.pool, "acme", []uuid.UUID{m1, m2})
	require.NoError(t, err)
	ids := make([]uuid.UUID, len(got))
	for i, d := range got {
		ids[i] = d.ID
	}
	require.Equal(t, []uuid.UUID{m1earlier, m1later, m2later}, ids, "in the order the endpoints were created")
	require.Equal(t, "https://earlier.example/hook", got[0].EndpointURL)
	require.Equal(t, "invoice.paid", got[0].EventType)
	require.True(t, got[0].PublishedAt.Equal(t0), "the message's publication, not the delivery's creation")
	require.Equal(t, deliverystatus.Failed, got[0].Status)
	require.Equal(t, "invoice.created", got[2].EventType)

	foreign, err := deliverylog.ListDeliveriesOfMessages(b.ctx, b.pool, "globex", []uuid.UUID{m1, m2})
	require.NoError(t, err)
	require.Empty(t, foreign, "another tenant's messages")
}

func TestListRecentDeliveries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e1 := b.endpoint(t, "acme", "https://one.example/hook")
	e2 := b.endpoint(t, "acme", "https://two.example/hook")
	var want []uuid.UUID
	for i := range 4 {
		m := b.message(t, "acme", "invoice.paid", t0.Add(time.Duration(i)*time.Minute))
		want = append([]uuid.UUID{b.delivery(t, m, e1, deliverystatus.Succeeded)}, want...)
		b.delivery(t, m, e2, deliverystatus.Succeeded)
	}

	got, err := deliverylog.ListRecentDeliveries(b.ctx, b.pool, "acme", e1, 3)
	require.NoError(t, err)
	ids := make([]uuid.UUID, len(got))
	for i, d := range got {
		ids[i] = d.ID
		require.Equal(t, e1, d.EndpointID)
		require.Equal(t, "https://one.example/hook", d.EndpointURL)
	}
	require.Equal(t, want[:3], ids, "the newest three, newest first")

	foreign, err := deliverylog.ListRecentDeliveries(b.ctx, b.pool, "globex", e1, 3)
	require.NoError(t, err)
	require.Empty(t, foreign, "another tenant's endpoint")
}

func TestGetDelivery(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e1 := b.endpoint(t, "acme", "https://one.example/hook")
	m := b.message(t, "acme", "invoice.paid", t0)
	id := b.delivery(t, m, e1, deliverystatus.Skipped)

	d, err := deliverylog.GetDelivery(b.ctx, b.pool, "acme", id)
	require.NoError(t, err)
	require.Equal(t, id, d.ID)
	require.Equal(t, m, d.MessageID)
	require.Equal(t, e1, d.EndpointID)
	require.Equal(t, deliverystatus.Skipped, d.Status)

	_, err = deliverylog.GetDelivery(b.ctx, b.pool, "globex", id)
	require.ErrorIs(t, err, deliverylog.ErrNotFound, "another tenant's delivery")
}

func TestListAttemptsByDelivery(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e1 := b.endpoint(t, "acme", "https://one.example/hook")
	e2 := b.endpoint(t, "acme", "https://two.example/hook")
	m := b.message(t, "acme", "invoice.paid", t0)
	d1 := b.delivery(t, m, e1, deliverystatus.Pending)
	d2 := b.delivery(t, m, e2, deliverystatus.Succeeded)
	d2a1 := b.attempt(t, d2, 1, t0, 200)
	d1a1 := b.attempt(t, d1, 1, t0.Add(time.Second), 500)
	d1a2 := b.attempt(t, d1, 2, t0.Add(time.Minute), 500)
	b.attempt(t, b.delivery(t, b.message(t, "acme", "invoice.paid", t0), e1, deliverystatus.Succeeded), 1, t0, 200)

	got, err := deliverylog.ListAttemptsByDelivery(b.ctx, b.pool, "acme", m)
	require.NoError(t, err)
	ids := make([]uuid.UUID, len(got))
	for i, a := range got {
		ids[i] = a.ID
	}
	// A message's deliveries share its id's milliseconds (historyid.Child),
	// so which of d1 and d2 sorts first is the luck of their random bits.
	want := []uuid.UUID{d1a1, d1a2, d2a1}
	if bytes.Compare(d2[:], d1[:]) < 0 {
		want = []uuid.UUID{d2a1, d1a1, d1a2}
	}
	require.Equal(t, want, ids, "by delivery, then by attempt number")
	require.Equal(t, 500, *got[slices.Index(ids, d1a1)].StatusCode)
	require.Equal(t, "retry", got[slices.Index(ids, d1a1)].Outcome)

	foreign, err := deliverylog.ListAttemptsByDelivery(b.ctx, b.pool, "globex", m)
	require.NoError(t, err)
	require.Empty(t, foreign, "another tenant's message")
}

func TestGetAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e1 := b.endpoint(t, "acme", "https://one.example/hook")
	m := b.message(t, "acme", "invoice.paid", t0)
	d := b.delivery(t, m, e1, deliverystatus.Succeeded)
	id := b.attempt(t, d, 1, t0, 204)

	a, err := deliverylog.GetAttempt(b.ctx, b.pool, "acme", id)
	require.NoError(t, err)
	require.Equal(t, id, a.ID)
	require.Equal(t, d, a.DeliveryID)
	require.Equal(t, m, a.MessageID)
	require.Equal(t, e1, a.EndpointID)
	require.Equal(t, 204, *a.StatusCode)
	require.Equal(t, "succeeded", a.Outcome)
	require.JSONEq(t, `{"webhook-id": "msg_x"}`, string(a.RequestHeaders))
	require.Equal(t, "ok", a.ResponseExcerpt)
	require.Equal(t, "https://one.example/hook", a.EndpointURL)
	require.Equal(t, "invoice.paid", a.EventType)

	listed, err := deliverylog.ListMessageAttempts(b.ctx, b.pool, "acme", m, deliverylog.AttemptFilter{}, page.Request{})
	require.NoError(t, err)
	require.Equal(t, []deliverylog.Attempt{a.Attempt}, listed.Items, "a page about an attempt shows it as lists do")

	_, err = deliverylog.GetAttempt(b.ctx, b.pool, "globex", id)
	require.ErrorIs(t, err, deliverylog.ErrNotFound, "another tenant's attempt")
}

// A filtered page reads at most ScanBudget messages (issue 16, item 3): when
// the one match lies further back, the first page is empty and names where
// it stopped, and paging on finds the match.
func TestListMessagesFilteredPageEndsAtScanBudget(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ep := b.endpoint(t, "acme", "https://acme.example/hook")
	oldest := b.message(t, "acme", "invoice.paid", t0)
	failed := b.delivery(t, oldest, ep, deliverystatus.Failed)
	b.exec(t, `INSERT INTO herald.messages (id, tenant_id, event_type, object_id, object_version, body, created_at)
SELECT herald.uuid_v7($1::timestamptz + make_interval(secs => i)), 'acme', 'invoice.paid', 'inv', i, '{}', $1::timestamptz + make_interval(secs => i)
FROM generate_series(1, $2::int) i`, t0, deliverylog.ScanBudget+10)

	req := page.Request{}
	var pages, found int
	for {
		p, err := deliverylog.ListMessages(b.ctx, b.pool, "acme", deliverylog.MessageFilter{Status: deliverystatus.Failed}, req)
		require.NoError(t, err)
		pages++
		for _, m := range p.Items {
			require.Equal(t, oldest, m.ID, "only the oldest message has a failed delivery (%s)", failed)
			found++
		}
		if p.Next == nil {
			break
		}
		if pages == 1 {
			require.Empty(t, p.Items, "the first page reads the newest ScanBudget messages, none of them a match")
		}
		req.After = p.Next
	}
	require.Equal(t, 1, found)
	require.Equal(t, 2, pages)
}
