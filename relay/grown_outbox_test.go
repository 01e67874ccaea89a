package relay_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/relay"
)

// A source's outbox swings between empty and a backlog (Herald down for an
// hour) faster than ANALYZE follows it. Statements prepared once and
// planned generically while the outbox was small kept that plan as it
// grew: in a split bench run the claim and the mark scanned the whole
// outbox, 12 to 14 ms a step by the end of the minute, and the latency
// climbed with it. Every relay statement is planned for the outbox as it
// is: none runs on a generic plan.
func TestRelayPlansEachStepForTheOutboxAsItIs(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	stop := run(t, b.newRelay(t, nil))
	relayed := func(i int) {
		id := b.publish(t, ctx, invoice(i))[0].ID
		eventually(t, 10*time.Second, "the message marked relayed", func() bool {
			return count(t, b.producer, "SELECT count(*) FROM herald.outbox WHERE id = $1 AND relayed_at IS NOT NULL", id) == 1
		})
	}
	// Small: more steps than Postgres plans for their arguments before it
	// weighs a generic plan.
	for i := range 12 {
		relayed(i)
	}
	_, err := b.producer.Exec(ctx, `INSERT INTO herald.outbox (id, tenant_id, event_type, object_id, object_version, body, created_at, relayed_at)
SELECT herald.uuid_v7(now() - g * interval '1 ms'), 'acme', 'invoice.paid', 'grown_' || g, 1, '{}', now(), now()
FROM generate_series(1, 50000) g`)
	require.NoError(t, err)
	for i := range 3 {
		relayed(100 + i)
	}
	stop()

	var generic []string
	for _, conn := range b.source.AcquireAllIdle(ctx) {
		rows, err := conn.Query(ctx, "SELECT left(statement, 60) FROM pg_prepared_statements WHERE generic_plans > 0")
		require.NoError(t, err)
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		conn.Release()
		require.NoError(t, err)
		generic = append(generic, names...)
	}
	require.Empty(t, generic, "these relay statements ran on generic plans")
}

// On an outbox ANALYZE never saw with rows in it, the planner takes the
// partial indexes for empty (their row count is that of their creation)
// and looked each claimed message's lower versions up along
// outbox_unrelayed, the whole backlog for each: 3.6 s for a claim of 500
// over 50,000 waiting, against 3.3 ms once analyzed. The relay analyzes
// such an outbox the first time a claim finds rows, as autovacuum would
// after its first 50 changes and a server without autovacuum never does;
// the retention pass, once a minute, came too late for a bench's minute.
func TestRelayAnalyzesAnOutboxWithoutStatistics(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	run(t, b.newRelay(t, nil))
	time.Sleep(200 * time.Millisecond) // the relay's first drain and retention pass find the outbox empty

	_, err := b.producer.Exec(ctx, `INSERT INTO herald.outbox (id, tenant_id, event_type, object_id, object_version, body, created_at)
SELECT herald.uuid_v7(now() + g * interval '1 ms'), 'acme', 'invoice.paid', 'inv_' || (g % 1000), g / 1000 + 1, '{}', now()
FROM generate_series(1, 20000) g`)
	require.NoError(t, err)
	eventually(t, 20*time.Second, "the outbox analyzed", func() bool {
		return count(t, b.producer, "SELECT count(*) FROM pg_stats WHERE schemaname = 'herald' AND tablename = 'outbox'") > 0
	})
	plan := relay.ExplainClaim(t, b.source)
	require.Contains(t, plan, "outbox_unrelayed_object", plan)
}
