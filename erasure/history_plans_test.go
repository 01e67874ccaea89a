package erasure

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/historyplan"
)

// Every statement of an erasure reads history through an index (issue 16,
// items 2 and 3): a batch finds its rows through the endpoint's or
// tenant's index and deletes them through the primary key, so it costs
// the same however long the history.
func TestHistoryQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	pool, s := historyplan.NewPool(t)
	var replayed uuid.UUID
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT endpoint_id FROM herald.replays WHERE id = $1`, s.ReplayID).Scan(&replayed))
	historyplan.Check(t, pool, []historyplan.Query{
		{Name: "erasure: attempts of an endpoint", SQL: deleteAttempts, Args: []any{s.EndpointID, DefaultBatchSize},
			Uses: []string{"attempts_endpoint_started", "attempts_pkey"}},
		{Name: "erasure: replay records of an endpoint", SQL: deleteReplayDeliveries, Args: []any{replayed, DefaultBatchSize}},
		{Name: "erasure: deliveries of an endpoint", SQL: deleteDeliveries, Args: []any{s.EndpointID, DefaultBatchSize},
			Uses: []string{"deliveries_endpoint_created", "deliveries_pkey"}},
		{Name: "erasure: messages of a tenant", SQL: deleteMessages, Args: []any{s.TenantID, DefaultBatchSize},
			Uses: []string{"messages_tenant_created", "messages_pkey"}},
		{Name: "erasure: publish idempotency keys of a tenant", SQL: deletePublishKeys, Args: []any{s.TenantID, DefaultBatchSize}},
		{Name: "erasure: idempotency records of a tenant", SQL: deleteIdempotencyRecords, Args: []any{s.TenantID, DefaultBatchSize}},
	})
}
