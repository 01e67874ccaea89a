package api

import (
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/historyplan"
)

// The API's own queries on history go through indexes (issue 16, item 3);
// its message and attempt lists read through package deliverylog, checked
// there.
func TestHistoryQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	pool, s := historyplan.NewPool(t)
	// A stats window in the middle of the history, among whole days of
	// every endpoint's deliveries. Ending at now, it read the day's
	// partition, then a few hours of mostly the hot endpoint's deliveries,
	// which the planner rightly read whole: the check failed or passed by
	// the time of day the test ran.
	since, until := s.DeliveryAt.Add(-DefaultStatsRange/2), s.DeliveryAt.Add(DefaultStatsRange/2)
	historyplan.Check(t, pool, []historyplan.Query{
		{Name: "stats: attempt series", SQL: endpointAttemptSeries, Args: []any{s.EndpointID, since, until, 3600.0}},
		{Name: "stats: delivery counts", SQL: endpointDeliveryCounts, Args: []any{s.EndpointID, since, until}},
		{Name: "idempotency: look up a record", SQL: selectIdempotencyRecord, Args: []any{s.TenantID, "key_1"}},
		{Name: "idempotency: prune", SQL: pruneIdempotencyRecords, Args: []any{(time.Since(s.End) + IdempotencyRetention).Seconds()},
			Uses: []string{"idempotency_records_created"}},
	})
}
