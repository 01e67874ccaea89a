package historyfill_test

import (
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/historyfill"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/testfactory"
)

// The filled rows are consistent: every foreign key holds although the
// fill skipped its triggers, streams get exactly their share, and the
// history spans what was asked.
func TestFillWritesConsistentHistory(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := t.Context()
	ep := testfactory.Endpoint(t, pool, nil)
	end := time.Now().Truncate(time.Second)

	res, err := historyfill.Fill(ctx, pool, historyfill.Spec{
		Deliveries: 3_000, Tenants: 3, EndpointsPerTenant: 2, Span: 24 * time.Hour, End: end,
		Streams: []historyfill.Stream{{TenantID: ep.TenantID, EndpointID: ep.ID, Deliveries: 1_000}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Messages != 4_000 || res.Deliveries != 4_000 || res.Attempts < 4_000 {
		t.Fatalf("loaded %d messages, %d deliveries, %d attempts; want 4000, 4000 and at least 4000", res.Messages, res.Deliveries, res.Attempts)
	}

	var replayed int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM herald.replay_deliveries`).Scan(&replayed); err != nil {
		t.Fatal(err)
	}
	if replayed == 0 {
		t.Fatal("the history has no replayed deliveries; want some, so that queries on replay_deliveries meet rows")
	}

	var broken int
	err = pool.QueryRow(ctx, `SELECT
  (SELECT count(*) FROM herald.deliveries d WHERE NOT EXISTS (SELECT FROM herald.messages m WHERE m.id = d.message_id AND m.tenant_id = d.tenant_id))
+ (SELECT count(*) FROM herald.deliveries d WHERE NOT EXISTS (SELECT FROM herald.endpoints e WHERE e.id = d.endpoint_id AND e.tenant_id = d.tenant_id))
+ (SELECT count(*) FROM herald.attempts a WHERE NOT EXISTS (SELECT FROM herald.deliveries d WHERE d.id = a.delivery_id AND d.message_id = a.message_id AND d.endpoint_id = a.endpoint_id))
+ (SELECT count(*) FROM herald.deliveries d WHERE d.attempt_count <> (SELECT count(*) FROM herald.attempts a WHERE a.delivery_id = d.id))
+ (SELECT count(*) FROM herald.replay_deliveries rd WHERE NOT EXISTS (SELECT FROM herald.deliveries d WHERE d.id = rd.delivery_id))
+ (SELECT count(*) FROM herald.idempotency_records r WHERE NOT EXISTS (SELECT FROM herald.messages m WHERE m.tenant_id = r.tenant_id AND m.idempotency_key = r.key))`).Scan(&broken)
	if err != nil {
		t.Fatal(err)
	}
	if broken != 0 {
		t.Fatalf("%d filled rows break a reference", broken)
	}

	var streamed, succeeded int
	var first, last time.Time
	if err := pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE status = 'succeeded'), min(created_at), max(created_at)
FROM herald.deliveries WHERE endpoint_id = $1`, ep.ID).Scan(&streamed, &succeeded, &first, &last); err != nil {
		t.Fatal(err)
	}
	if streamed != 1_000 || succeeded != 1_000 {
		t.Fatalf("the stream's endpoint has %d deliveries, %d succeeded; want 1000 succeeded", streamed, succeeded)
	}
	if first.Before(end.Add(-24*time.Hour)) || last.After(end) || last.Sub(first) < 23*time.Hour {
		t.Fatalf("the stream's deliveries run from %s to %s; want them spread over the day before %s", first, last, end)
	}
}
