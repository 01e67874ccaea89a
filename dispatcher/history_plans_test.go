package dispatcher

import (
	"testing"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/internal/historyplan"
)

// The fan-out and the reconciler find history rows through indexes (issue
// 16, item 3): undispatched messages through their partial index, the rest
// by key.
func TestHistoryQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	pool, s := historyplan.NewPool(t)
	ids := []uuid.UUID{s.DeliveryID}
	historyplan.Check(t, pool, []historyplan.Query{
		{Name: "fan-out: claim messages", SQL: claimMessages, Args: []any{500, 2000}},
		{Name: "fan-out: insert deliveries", SQL: insertDeliveries, Args: []any{[]uuid.UUID{uuid.New()}, []uuid.UUID{s.MessageID},
			[]uuid.UUID{s.EndpointID}, []string{s.TenantID}, []string{"pending"}}},
		{Name: "reconciler: stranded deliveries", SQL: strandedDeliveries, Args: []any{ids}, OnePartition: []string{"deliveries"}},
		{Name: "reconciler: lock pending", SQL: lockPending, Args: []any{ids}, OnePartition: []string{"deliveries"}},
		{Name: "reconciler: take over", SQL: takeOver, Args: []any{ids}, OnePartition: []string{"deliveries"}},
	})
}
