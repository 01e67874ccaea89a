package dispatcher_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/dispatcher"
	"github.com/heraldhq/herald/internal/webhooktest"
	"github.com/heraldhq/herald/outbox"
	"github.com/heraldhq/herald/store"
)

// Filters and channels decide at fan-out: a message that an endpoint's
// filter refuses, or whose channels it does not subscribe to, creates no
// delivery for it, not even a skipped one for a disabled endpoint. The
// table is payloads × endpoints, each endpoint a filter and channels, run
// through a real dispatcher against Postgres and a receiver on loopback.
func TestFanOutAppliesFiltersAndChannels(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	r := webhooktest.NewReceiver(t, webhooktest.Status(200))

	endpoints := []struct {
		name     string
		filter   string
		channels []string
		disabled bool
	}{
		{name: "big", filter: `data.amount >= 100`},
		{name: "currency", filter: `data.currency in ["EUR", "USD"]`},
		{name: "vip", filter: `data.tags contains "vip"`},
		{name: "refund", filter: `exists(data.refund)`},
		{name: "not-de", filter: `not (data.customer.country == "DE")`},
		{name: "paid", filter: `type == "invoice.paid" and data.amount > 0`},
		{name: "eu", channels: []string{"eu"}},
		{name: "eu-us-small", filter: `data.amount < 50`, channels: []string{"eu", "us"}},
		{name: "all"},
		{name: "disabled-big", filter: `data.amount >= 100`, disabled: true},
	}
	messages := []struct {
		name     string
		typ      string
		data     map[string]any
		channels []string
		want     []string
	}{
		{
			name: "m1", typ: "invoice.paid", data: map[string]any{"amount": 150, "currency": "EUR", "tags": []string{"vip"}, "customer": map[string]any{"country": "DE"}},
			want: []string{"big", "currency", "vip", "paid", "all", "disabled-big"},
		},
		{
			name: "m2", typ: "invoice.paid", data: map[string]any{"amount": 20, "currency": "GBP"}, channels: []string{"eu"},
			want: []string{"not-de", "paid", "eu", "eu-us-small", "all"},
		},
		{
			name: "m3", typ: "invoice.refunded", data: map[string]any{"amount": 0, "refund": nil, "customer": map[string]any{"country": "FR"}}, channels: []string{"us", "asia"},
			want: []string{"refund", "not-de", "eu-us-small", "all"},
		},
		{
			name: "m4", typ: "invoice.paid", data: map[string]any{"amount": "150", "tags": "vip"}, channels: []string{"asia"},
			want: []string{"not-de", "all"},
		},
	}

	ids := map[uuid.UUID]string{}
	byName := map[string]uuid.UUID{}
	for _, e := range endpoints {
		created, err := b.store.CreateEndpoint(ctx, store.NewEndpoint{TenantID: tenant, URL: r.URL + "?e=" + e.name, Filter: e.filter, Channels: e.channels})
		require.NoError(t, err, e.name)
		require.Equal(t, e.filter, created.Filter)
		if e.disabled {
			_, err := b.store.DisableEndpoint(ctx, created.ID, "disabled by its owner")
			require.NoError(t, err)
		}
		ids[created.ID] = e.name
		byName[e.name] = created.ID
	}
	b.start(t, dispatcher.Config{})

	want := map[string]bool{}
	published := map[uuid.UUID]string{}
	for _, m := range messages {
		id := b.publish(t, ctx, outbox.Message{Tenant: tenant, Type: m.typ, ObjectID: "inv_" + m.name, Data: m.data, Channels: m.channels})
		published[id] = m.name
		for _, e := range m.want {
			want[m.name+" → "+e] = true
		}
	}
	b.waitDispatched(t, ctx, len(messages), 20*time.Second)
	b.waitSucceeded(t, ctx, len(want)-1, 20*time.Second) // disabled-big's is skipped

	got := b.deliveryPairs(t, ctx, published, ids)
	require.Equal(t, want, got)
	require.Equal(t, "skipped", b.deliveryStatus(t, ctx, firstKey(published, "m1"), byName["disabled-big"]))
	require.Len(t, r.Requests(), len(want)-1, "the receiver got one request per delivery, and nothing filtered out")

	// A changed filter is compiled again: the next message meets the new one.
	newFilter := `data.amount < 100`
	_, err := b.store.UpdateEndpoint(ctx, byName["big"], store.EndpointUpdate{Filter: &newFilter})
	require.NoError(t, err)
	id := b.publish(t, ctx, outbox.Message{Tenant: tenant, Type: "invoice.paid", ObjectID: "inv_m5", Data: map[string]any{"amount": 5}})
	b.waitDispatched(t, ctx, len(messages)+1, 20*time.Second)
	require.Equal(t, "pending", cmpStatus(b.deliveryStatus(t, ctx, id, byName["big"])), "the new filter lets the message through")
}

// cmpStatus folds the statuses of a delivery that was created into
// "pending", for checks that it exists whatever its progress.
func cmpStatus(status string) string {
	if status == "" {
		return ""
	}
	return "pending"
}

func firstKey(m map[uuid.UUID]string, value string) uuid.UUID {
	for k, v := range m {
		if v == value {
			return k
		}
	}
	panic(fmt.Sprintf("no key for %q", value))
}

// waitDispatched waits until n messages have been fanned out.
func (b *testBundle) waitDispatched(t *testing.T, ctx context.Context, n int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var dispatched int
		require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM herald.messages WHERE dispatched_at IS NOT NULL").Scan(&dispatched))
		if dispatched >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s, %d messages dispatched; want %d", within, dispatched, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// deliveryPairs returns every delivery as "message → endpoint", named by
// messages and endpoints.
func (b *testBundle) deliveryPairs(t *testing.T, ctx context.Context, messages, endpoints map[uuid.UUID]string) map[string]bool {
	t.Helper()
	rows, err := b.pool.Query(ctx, "SELECT message_id, endpoint_id FROM herald.deliveries")
	require.NoError(t, err)
	defer rows.Close()
	pairs := map[string]bool{}
	for rows.Next() {
		var m, e uuid.UUID
		require.NoError(t, rows.Scan(&m, &e))
		pairs[messages[m]+" → "+endpoints[e]] = true
	}
	require.NoError(t, rows.Err())
	return pairs
}
