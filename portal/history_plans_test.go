package portal

import (
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/historyplan"
)

// The portal's own queries on history go through indexes (issue 16, item
// 3); its delivery log reads through package deliverylog, checked there.
func TestHistoryQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	pool, s := historyplan.NewPool(t)
	historyplan.Check(t, pool, []historyplan.Query{
		{Name: "portal: endpoints with a day's counts", SQL: listEndpoints, Args: []any{s.TenantID}},
		{Name: "portal: endpoint", SQL: selectEndpoint, Args: []any{s.EndpointID, s.TenantID}},
		{Name: "portal: held-back objects of an ordered endpoint", SQL: selectHeldBack, Args: []any{s.EndpointID, s.TenantID, 20}},
		{Name: "portal: endpoint's hourly outcomes", SQL: selectHourlyOutcomes, Args: []any{s.EndpointID, time.Now().Add(-7 * 24 * time.Hour), s.TenantID}},
		{Name: "portal: event types seen", SQL: selectEventTypesSeen, Args: []any{s.TenantID}},
	})
}
