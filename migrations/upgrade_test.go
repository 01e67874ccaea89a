package migrations_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/historyfill"
	"github.com/heraldhq/herald/internal/historyid"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/migrations"
)

// lastUnpartitioned is the newest migration before history was partitioned.
const lastUnpartitioned = 21

// The tables whose every row the upgrade must keep.
var keptTables = []string{"tenants", "endpoints", "messages", "deliveries", "attempts", "replays", "replay_deliveries",
	"publish_idempotency_keys", "object_versions", "idempotency_records"}

func snapshot(t *testing.T, pool *pgxpool.Pool) map[string]string {
	t.Helper()
	s := make(map[string]string, len(keptTables))
	for _, table := range keptTables {
		var n int
		var sum *string
		require.NoError(t, pool.QueryRow(t.Context(),
			`SELECT count(*), md5(string_agg(t::text, E'\n' ORDER BY t::text)) FROM herald.`+table+` t`).Scan(&n, &sum))
		require.NotZero(t, n, "the filled database has rows in %s", table)
		s[table] = *sum
	}
	return s
}

func TestUpgradeFromUnpartitionedHistoryKeepsEveryRowAndPartitionsIt(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.NewPoolFrom(t, pgtest.Empty)
	require.NoError(t, migrations.ApplyThrough(ctx, pool, lastUnpartitioned))

	// A filled history, as today's schema holds it, plus events published
	// through the SQL API with idempotency keys and not yet fanned out.
	endpoint := uuid.Must(uuid.NewV7())
	_, err := pool.Exec(ctx, `INSERT INTO herald.tenants (id) VALUES ('acme');
INSERT INTO herald.endpoints (id, tenant_id, url) VALUES ('`+endpoint.String()+`', 'acme', 'https://acme.invalid/hook')`)
	require.NoError(t, err)
	fill, err := historyfill.Fill(ctx, pool, historyfill.Spec{Deliveries: 3000, Tenants: 4, EndpointsPerTenant: 2, Span: 10 * 24 * time.Hour,
		Streams: []historyfill.Stream{{TenantID: "acme", EndpointID: endpoint, Deliveries: 500}}})
	require.NoError(t, err)
	require.EqualValues(t, 3500, fill.Deliveries)
	var keyed uuid.UUID
	require.NoError(t, pool.QueryRow(ctx, `SELECT message_id FROM herald.publish('acme', 'invoice.paid', 'inv_1', '{"amount": 1}', idempotency_key => 'pay_1')`).Scan(&keyed))
	_, err = pool.Exec(ctx, `SELECT * FROM herald.publish_many('acme', '[{"type": "invoice.paid", "object_id": "inv_2", "data": {}, "idempotency_key": "pay_2"}]')`)
	require.NoError(t, err)
	// A delivery and an attempt made before their ids carried their
	// message's time: seconds after it, as the old fan-out and recording
	// made them.
	var early uuid.UUID
	require.NoError(t, pool.QueryRow(ctx, `SELECT message_id FROM herald.publish('acme', 'invoice.paid', 'inv_4', '{}')`).Scan(&early))
	lateDelivery := uuid.Must(historyid.Child(historyid.Bound(time.Now().Add(2 * time.Second))))
	lateAttempt := uuid.Must(historyid.Child(historyid.Bound(time.Now().Add(3 * time.Second))))
	_, err = pool.Exec(ctx, `INSERT INTO herald.deliveries (id, message_id, endpoint_id, tenant_id, status, attempt_count)
VALUES ($1, $2, $3, 'acme', 'succeeded', 1)`, lateDelivery, early, endpoint)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO herald.attempts (id, delivery_id, message_id, endpoint_id, attempt_number, trigger, started_at, duration_ms, status_code, outcome)
VALUES ($1, $2, $3, $4, 1, 'scheduled', now(), 5, 200, 'succeeded')`, lateAttempt, lateDelivery, early, endpoint)
	require.NoError(t, err)
	before := snapshot(t, pool)

	// Later migrations may add columns; the rows are compared as 0024 left them.
	require.NoError(t, migrations.ApplyThrough(ctx, pool, 24))
	require.Equal(t, before, snapshot(t, pool), "every row of every table is kept, unchanged")
	require.NoError(t, migrations.Apply(ctx, pool))
	require.NoError(t, migrations.Check(ctx, pool))

	t.Run("history tables are partitioned, legacy first", func(t *testing.T) {
		for _, table := range []string{"messages", "deliveries", "attempts", "replay_deliveries"} {
			var kind string
			require.NoError(t, pool.QueryRow(ctx, `SELECT relkind::text FROM pg_class WHERE oid = ('herald.' || $1)::regclass`, table).Scan(&kind))
			require.Equal(t, "p", kind, "%s is partitioned", table)
			var legacy, total int
			require.NoError(t, pool.QueryRow(ctx, `SELECT count(*), (SELECT count(*) FROM herald.`+table+`) FROM herald.`+table+`_p_legacy`).Scan(&legacy, &total))
			require.Equal(t, total, legacy, "every existing row of %s is in its legacy partition", table)
		}
	})

	t.Run("every partition has every index of its table", func(t *testing.T) {
		rows, err := pool.Query(ctx, `
SELECT parent.relname, part.relname, pi.relname
FROM pg_inherits inh
JOIN pg_class parent ON parent.oid = inh.inhparent
JOIN pg_class part ON part.oid = inh.inhrelid
JOIN pg_namespace n ON n.oid = parent.relnamespace AND n.nspname = 'herald'
JOIN pg_index pidx ON pidx.indrelid = parent.oid
JOIN pg_class pi ON pi.oid = pidx.indexrelid
WHERE parent.relkind = 'p' AND NOT EXISTS (
  SELECT FROM pg_index cidx JOIN pg_inherits ii ON ii.inhrelid = cidx.indexrelid AND ii.inhparent = pidx.indexrelid
  WHERE cidx.indrelid = part.oid)`)
		require.NoError(t, err)
		missing, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ Table, Partition, Index string }])
		require.NoError(t, err)
		require.Empty(t, missing, "partitions lacking an index of their table")

		var parents []string
		rows, err = pool.Query(ctx, `SELECT i.indexname FROM pg_indexes i WHERE i.schemaname = 'herald' AND i.tablename IN ('messages', 'deliveries', 'attempts', 'replay_deliveries') ORDER BY 1`)
		require.NoError(t, err)
		parents, err = pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		require.Subset(t, parents, []string{"attempts_delivery", "attempts_endpoint_started", "attempts_message", "attempts_pkey",
			"deliveries_endpoint_created", "deliveries_pending", "deliveries_pkey",
			"messages_pkey", "messages_tenant_created", "messages_undispatched",
			"replay_deliveries_delivery", "replay_deliveries_pkey"}, "later migrations may add indexes, not take these away")

		var withoutPair []string
		rows, err = pool.Query(ctx, `
SELECT part.relname FROM pg_inherits inh JOIN pg_class part ON part.oid = inh.inhrelid
WHERE inh.inhparent = 'herald.deliveries'::regclass AND NOT EXISTS (
  SELECT FROM pg_index x WHERE x.indrelid = part.oid AND x.indisunique
    AND pg_get_indexdef(x.indexrelid) LIKE '%(message_id, endpoint_id)')`)
		require.NoError(t, err)
		withoutPair, err = pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		require.Empty(t, withoutPair, "every deliveries partition keeps (message, endpoint) unique")
	})

	t.Run("foreign keys lead only to the small tables, and hold", func(t *testing.T) {
		rows, err := pool.Query(ctx, `
SELECT c.conrelid::regclass::text || ' -> ' || c.confrelid::regclass::text || ' ' || c.convalidated::text
FROM pg_constraint c
WHERE c.contype = 'f' AND c.conparentid = 0
  AND (c.conrelid IN ('herald.messages'::regclass, 'herald.deliveries'::regclass, 'herald.attempts'::regclass, 'herald.replay_deliveries'::regclass)
    OR c.confrelid IN ('herald.messages'::regclass, 'herald.deliveries'::regclass, 'herald.attempts'::regclass, 'herald.replay_deliveries'::regclass))
ORDER BY 1`)
		require.NoError(t, err)
		fks, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		require.Equal(t, []string{
			"herald.attempts -> herald.endpoints true",
			"herald.deliveries -> herald.endpoints true",
			"herald.messages -> herald.tenants true",
			"herald.replay_deliveries -> herald.replays true",
		}, fks)
		var orphans int
		require.NoError(t, pool.QueryRow(ctx, `SELECT
  (SELECT count(*) FROM herald.deliveries d WHERE NOT EXISTS (SELECT FROM herald.messages m WHERE m.id = d.message_id))
+ (SELECT count(*) FROM herald.attempts a WHERE NOT EXISTS (SELECT FROM herald.deliveries d WHERE d.id = a.delivery_id))
+ (SELECT count(*) FROM herald.replay_deliveries r WHERE NOT EXISTS (SELECT FROM herald.deliveries d WHERE d.id = r.delivery_id))`).Scan(&orphans))
		require.Zero(t, orphans, "the relations the dropped foreign keys stated still hold")
	})

	t.Run("publishing goes on: old keys are duplicates, new events go to a timed partition", func(t *testing.T) {
		var again uuid.UUID
		require.NoError(t, pool.QueryRow(ctx, `SELECT message_id FROM herald.publish('acme', 'invoice.paid', 'inv_1', '{"amount": 1}', idempotency_key => 'pay_1')`).Scan(&again))
		require.Equal(t, keyed, again, "a key published before the upgrade is still a duplicate")
		// The legacy partition reaches to the second after its newest row.
		var legacyEnd time.Time
		require.NoError(t, pool.QueryRow(ctx, `SELECT upper_at FROM herald.history_partitions WHERE suffix = '_legacy'`).Scan(&legacyEnd))
		time.Sleep(time.Until(legacyEnd) + 10*time.Millisecond)
		var fresh uuid.UUID
		require.NoError(t, pool.QueryRow(ctx, `SELECT message_id FROM herald.publish('acme', 'invoice.paid', 'inv_3', '{}')`).Scan(&fresh))
		var partition string
		require.NoError(t, pool.QueryRow(ctx, `SELECT tableoid::regclass::text FROM herald.messages WHERE id = $1`, fresh).Scan(&partition))
		require.Regexp(t, `^herald\.messages_p\d{8}_\d{6}$`, partition)
	})

	// The delivery log looks a message's deliveries and attempts up
	// between herald.history_lower and history_upper of its id (migration
	// 0046): for a legacy message that is the whole legacy partition, for
	// a later one its millisecond.
	t.Run("a message's history is within its lookup bounds, legacy or not", func(t *testing.T) {
		var deliveries, attempts int
		require.NoError(t, pool.QueryRow(ctx, `SELECT
  (SELECT count(*) FROM herald.deliveries WHERE message_id = $1 AND id >= herald.history_lower($1) AND id < herald.history_upper($1)),
  (SELECT count(*) FROM herald.attempts WHERE message_id = $1 AND id >= herald.history_lower($1) AND id < herald.history_upper($1))`, early).Scan(&deliveries, &attempts))
		require.Equal(t, 1, deliveries, "the legacy delivery made seconds after its message")
		require.Equal(t, 1, attempts, "the legacy attempt made seconds after its message")
		var missed int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM herald.deliveries d
WHERE NOT (d.id >= herald.history_lower(d.message_id) AND d.id < herald.history_upper(d.message_id))`).Scan(&missed))
		require.Zero(t, missed, "no delivery lies outside its message's bounds")

		later := uuid.Must(historyid.Child(historyid.Bound(time.Now().Add(time.Hour))))
		var lower, upper uuid.UUID
		require.NoError(t, pool.QueryRow(ctx, `SELECT herald.history_lower($1), herald.history_upper($1)`, later).Scan(&lower, &upper))
		at := historyid.Time(later)
		require.Equal(t, historyid.Bound(at), lower, "a later message's history starts at its millisecond")
		require.Equal(t, historyid.Bound(at.Add(time.Millisecond)), upper, "and ends before the next")
	})

	t.Run("a legacy delivery's pair stays unique", func(t *testing.T) {
		var message, end uuid.UUID
		require.NoError(t, pool.QueryRow(ctx, `SELECT message_id, endpoint_id FROM herald.deliveries_p_legacy LIMIT 1`).Scan(&message, &end))
		tag, err := pool.Exec(ctx, `INSERT INTO herald.deliveries (id, message_id, endpoint_id, tenant_id, status)
SELECT $3, $1, $2, tenant_id, 'pending' FROM herald.endpoints WHERE id = $2 ON CONFLICT DO NOTHING`,
			message, end, uuid.Must(historyid.Child(message)))
		require.NoError(t, err)
		require.Zero(t, tag.RowsAffected(), "a second delivery of the pair is refused")
	})

	t.Run("the legacy partition is not dropped while it holds undispatched messages", func(t *testing.T) {
		var outcome string
		require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			return tx.QueryRow(ctx, `SELECT herald.drop_history_partitions('_legacy', 'infinity')`).Scan(&outcome)
		}))
		require.Equal(t, "undispatched", outcome)
	})
}

func TestUpgradeOfAnEmptyDatabaseMakesNoLegacyPartition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPoolFrom(t, pgtest.Empty)
	require.NoError(t, migrations.ApplyThrough(ctx, pool, lastUnpartitioned))
	require.NoError(t, migrations.Apply(ctx, pool))
	var legacy bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT to_regclass('herald.messages_p_legacy') IS NOT NULL`).Scan(&legacy))
	require.False(t, legacy)
}
