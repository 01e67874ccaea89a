package relay

import (
	"testing"

	"github.com/heraldhq/herald/internal/historyplan"
)

// Waking the fan-out after a relay's insert looks the batch's messages up
// in Herald's history: checked with a step's batch, the newest
// DefaultBatchSize messages, as a relay inserts them.
func TestHistoryQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	pool, _ := historyplan.NewPool(t)
	batch := historyplan.Newest(t, pool, "messages", DefaultBatchSize)
	historyplan.Check(t, pool, []historyplan.Query{
		{Name: "relay: wake the fan-out", SQL: wakeFanOut, Args: []any{batch}, OnePartition: []string{"messages"}},
	})
}
