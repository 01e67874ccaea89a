package health

import (
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/historyplan"
)

// Disabling an endpoint cancels its pending deliveries through the partial
// index of pending ones, not a walk of its history (issue 16, item 3).
func TestHistoryQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	pool, s := historyplan.NewPool(t)
	historyplan.Check(t, pool, []historyplan.Query{
		{Name: "disable: cancel the pending deliveries", SQL: cancelPendingDeliveries, Args: []any{s.EndpointID, time.Now()},
			Uses: []string{"deliveries_pending"}},
		{Name: "exhausted: the delivery's event", SQL: selectExhausted, Args: []any{s.DeliveryID}},
	})
}
