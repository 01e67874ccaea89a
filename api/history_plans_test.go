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
	since, until := time.Now().Add(-DefaultStatsRange), time.Now()
	historyplan.Check(t, pool, []historyplan.Query{
		{Name: "stats: attempt series", SQL: endpointAttemptSeries, Args: []any{s.EndpointID, since, until, 3600.0}},
		{Name: "stats: delivery counts", SQL: endpointDeliveryCounts, Args: []any{s.EndpointID, since, until}},
		{Name: "idempotency: look up a record", SQL: selectIdempotencyRecord, Args: []any{s.TenantID, "key_1"}},
		{Name: "idempotency: prune", SQL: pruneIdempotencyRecords, Args: []any{(time.Since(s.End) + IdempotencyRetention).Seconds()},
			Uses: []string{"idempotency_records_created"}},
	})
}
