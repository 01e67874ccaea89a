package metrics

import (
	"testing"

	"github.com/heraldhq/herald/internal/historyplan"
)

// A scrape reads no history (issue 16, item 4): the backlog comes from a
// partial index of undispatched messages, the outbox's own or the fair
// claim's (per tenant, migration 0038); the planner takes either.
func TestHistoryQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	pool, _ := historyplan.NewPool(t)
	historyplan.Check(t, pool, []historyplan.Query{
		{Name: "metrics: outbox backlog", SQL: outboxBacklog, Uses: []string{"messages_undispatched|messages_undispatched_tenant"}},
		{Name: "metrics: queue depth", SQL: queueDepth},
	})
}
