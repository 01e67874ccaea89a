package retention

import (
	"testing"
	"time"

	"github.com/google/uuid"

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
	batch := []any{[]uuid.UUID{s.MessageID}}
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
		{Name: "retention: lock a batch's deliveries", SQL: lockPurgeDeliveries, Args: batch, OnePartition: []string{"deliveries"}},
		{Name: "retention: purge a batch's deliveries", SQL: purgeDeliveries, Args: batch, OnePartition: []string{"deliveries"}},
		{Name: "retention: purge a batch's attempts", SQL: purgeAttempts, Args: batch, OnePartition: []string{"attempts"}},
		{Name: "retention: purge a batch's replay records", SQL: purgeReplayDeliveries, Args: []any{[]uuid.UUID{s.DeliveryID}}},
		{Name: "retention: purge a batch's messages", SQL: purgeMessages, Args: []any{[]uuid.UUID{s.MessageID}}},
		{Name: "retention: prune publish idempotency keys", SQL: pruneIdempotencyKeys, Args: []any{horizon, pruneBatch},
			Uses: []string{"publish_idempotency_keys_created"}},
	})
}
