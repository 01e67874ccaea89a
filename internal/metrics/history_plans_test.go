package metrics

import (
	"testing"

	"github.com/heraldhq/herald/internal/historyplan"
)

// A scrape reads no history (issue 16, item 4): the backlog comes from the
// partial index of undispatched messages.
func TestHistoryQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	pool, _ := historyplan.NewPool(t)
	historyplan.Check(t, pool, []historyplan.Query{
		{Name: "metrics: outbox backlog", SQL: outboxBacklog, Uses: []string{"messages_undispatched"}},
		{Name: "metrics: queue depth", SQL: queueDepth},
	})
}
