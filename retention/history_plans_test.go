package retention

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/historyid"
	"github.com/heraldhq/herald/internal/historyplan"
)

// The maintenance's queries on history go through indexes: the checks
// herald.drop_history_partitions runs on a partition before dropping it
// (as it runs them, on one partition of the filled history), and the
// pruning of publish idempotency keys, and the purge of a tenant's
// history past its own retention.
func TestHistoryQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	pool, s := historyplan.NewPool(t)
	var suffix string
	if err := pool.QueryRow(t.Context(), `SELECT suffix FROM herald.history_partitions WHERE upper_at <= $1 ORDER BY upper_at DESC LIMIT 1`, s.End).Scan(&suffix); err != nil {
		t.Fatalf("pick a partition of the filled history: %v", err)
	}
	horizon := s.End.Add(-10 * 24 * time.Hour)
	// A purge's batch: the tenant's oldest purgeBatch messages, as
	// walkTenant walks them (for the hot tenant, hours of one partition;
	// for a quieter one, days of several), and their deliveries.
	hot := oldestMessages(t, pool, s.TenantID)
	quiet := oldestMessages(t, pool, quietTenant(t, pool))
	spread := historyplan.Partitions(t, pool, "messages", quiet)
	purging := []string{planOnce}
	if spread < 3 {
		t.Fatalf("a quiet tenant's batch spans %d partitions; want several", spread)
	}
	historyplan.Check(t, pool, []historyplan.Query{
		{Name: "retention: sets past the horizon", SQL: selectDue, Args: []any{horizon}},
		// Any partial index of undispatched messages answers it:
		// messages_undispatched or ordered delivery's (migration 0030).
		{Name: "retention: drop check, undispatched", SQL: `SELECT EXISTS (SELECT FROM herald.messages_p` + suffix + ` WHERE dispatched_at IS NULL)`},
		{Name: "retention: drop check, pending", SQL: `SELECT EXISTS (SELECT FROM herald.deliveries_p` + suffix + ` WHERE status = 'pending')`,
			Uses: []string{"deliveries_pending"}},
		{Name: "retention: walk a tenant's history", SQL: walkTenant, Args: []any{s.TenantID, time.Time{}, uuid.Nil, horizon, historyid.Bound(horizon), purgeBatch},
			Uses: []string{"messages_tenant_created"}},
		{Name: "retention: walk a tenant's history, next batch", SQL: walkTenant, Args: []any{s.TenantID, s.DeliveryAt, s.MessageID, horizon, historyid.Bound(horizon), purgeBatch},
			IndexConds: []string{"ROW(created_at, id) > ROW("}},
		{Name: "retention: lock a batch's deliveries", SQL: lockPurgeDeliveries, Args: []any{hot}, Setup: purging, OnePartition: []string{"deliveries"}},
		{Name: "retention: purge a batch's deliveries", SQL: purgeDeliveries, Args: []any{hot}, Setup: purging, OnePartition: []string{"deliveries"}},
		{Name: "retention: purge a batch's attempts", SQL: purgeAttempts, Args: []any{hot}, Setup: purging, OnePartition: []string{"attempts"}},
		{Name: "retention: purge a batch's replay records", SQL: purgeReplayDeliveries, Args: []any{deliveriesOf(t, pool, hot)}, Setup: purging, OnePartition: []string{"replay_deliveries"}},
		{Name: "retention: purge a batch's messages", SQL: purgeMessages, Args: []any{hot}, Setup: purging, OnePartition: []string{"messages"}},
		{Name: "retention: lock a quiet tenant's batch's deliveries", SQL: lockPurgeDeliveries, Args: []any{quiet}, Setup: purging, OnePartition: []string{"deliveries"}},
		{Name: "retention: purge a quiet tenant's batch's deliveries", SQL: purgeDeliveries, Args: []any{quiet}, Setup: purging, OnePartition: []string{"deliveries"}, Spread: spread},
		{Name: "retention: purge a quiet tenant's batch's attempts", SQL: purgeAttempts, Args: []any{quiet}, Setup: purging, OnePartition: []string{"attempts"}, Spread: spread},
		{Name: "retention: purge a quiet tenant's batch's replay records", SQL: purgeReplayDeliveries, Args: []any{deliveriesOf(t, pool, quiet)}, Setup: purging, OnePartition: []string{"replay_deliveries"}, Spread: spread},
		{Name: "retention: purge a quiet tenant's batch's messages", SQL: purgeMessages, Args: []any{quiet}, Setup: purging, OnePartition: []string{"messages"}, Spread: spread},
		{Name: "retention: prune publish idempotency keys", SQL: pruneIdempotencyKeys, Args: []any{horizon, pruneBatch},
			Uses: []string{"publish_idempotency_keys_created"}},
	})
}

// oldestMessages returns the oldest purgeBatch messages of tenant, the
// first batch a purge of its history walks.
func oldestMessages(t *testing.T, pool *pgxpool.Pool, tenant string) []uuid.UUID {
	t.Helper()
	return historyplan.Batch(t, pool, purgeBatch, `SELECT id FROM herald.messages WHERE tenant_id = $1 AND dispatched_at IS NOT NULL
ORDER BY created_at, id LIMIT $2`, tenant, purgeBatch)
}

// quietTenant returns a tenant of the filled history with the fewest
// messages, whose purge batch spans days.
func quietTenant(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	var tenant string
	if err := pool.QueryRow(t.Context(), `SELECT tenant_id FROM herald.messages GROUP BY tenant_id HAVING count(*) >= $1 ORDER BY count(*), tenant_id LIMIT 1`, purgeBatch).Scan(&tenant); err != nil {
		t.Fatalf("pick a quiet tenant: %v", err)
	}
	return tenant
}

// deliveriesOf returns the deliveries of messages, as purgeDeliveries
// returns them.
func deliveriesOf(t *testing.T, pool *pgxpool.Pool, messages []uuid.UUID) []uuid.UUID {
	t.Helper()
	rows, err := pool.Query(t.Context(), `SELECT d.id FROM unnest($1::uuid[]) AS m(id)
CROSS JOIN LATERAL (SELECT d.id FROM herald.deliveries d WHERE d.message_id = m.id
                    AND d.id >= herald.history_lower(m.id) AND d.id < herald.history_upper(m.id)) d`, messages)
	if err != nil {
		t.Fatalf("the deliveries of a batch: %v", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil || len(ids) < len(messages) {
		t.Fatalf("the deliveries of a batch: %d of %d messages, %v", len(ids), len(messages), err)
	}
	return ids
}
