package relay

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/pgtest"
)

// The relay's queries on a source follow an index, whatever the size of
// its outbox: claiming walks the unrelayed rows and their objects' lower
// versions, retention the relayed rows and the old keys, and none scans a
// table whole (a join on ids or keys once let the planner do so).
func TestSourceQueriesFollowIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPoolFrom(t, ProducerTemplate)
	_, err := pool.Exec(ctx, `INSERT INTO herald.outbox (id, tenant_id, event_type, object_id, object_version, body, created_at, relayed_at)
SELECT herald.uuid_v7(now() - g * interval '1 ms'), 't' || (g % 10), 'x', 'o' || (g % 5000), g, '{}', now(),
    CASE WHEN g > 2000 THEN now() - interval '1 hour' END
FROM generate_series(1, 50000) g;
INSERT INTO herald.publish_idempotency_keys
SELECT 't', 'k' || g, gen_random_uuid(), 1, now() - g * interval '1 s' FROM generate_series(1, 50000) g;
ANALYZE herald.outbox, herald.publish_idempotency_keys`)
	require.NoError(t, err)
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	for name, q := range map[string][]any{
		claimOutbox:   {DefaultBatchSize, []uuid.UUID{uuid.New()}},
		deleteRelayed: {DefaultRelayedGrace.Seconds(), PruneBatch},
		deleteOldKeys: {time.Now().Add(-time.Hour), PruneBatch},
	} {
		plan := explain(t, tx, "EXPLAIN "+name, q...)
		require.NotContains(t, plan, "Seq Scan", "%s\n%s", name, plan)
	}
}

// Waking the fan-out after a relay's insert looks the batch's messages up
// along messages_pkey, in each partition the ids fall in.
func TestHeraldQueriesFollowIndexes(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPoolFrom(t, pgtest.Herald)
	plan := explain(t, pool, "EXPLAIN "+wakeFanOut, []uuid.UUID{uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())})
	require.NotContains(t, plan, "Seq Scan", plan)
	require.Contains(t, plan, "messages_", plan)
}

// explain runs an EXPLAIN statement on q and returns its plan, a line
// each.
func explain(t *testing.T, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, sql string, args ...any) string {
	t.Helper()
	rows, err := q.Query(context.Background(), sql, args...)
	require.NoError(t, err)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return strings.Join(lines, "\n")
}
