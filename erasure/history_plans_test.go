package erasure

import (
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
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
	// The batch a statement deletes lies in the partitions it spans: the
	// delete may look it up in each of those, by its array, and no other.
	// The walk that picks the batch (aliases a, d, m and x) reads the
	// endpoint's or tenant's index partition after partition until it has
	// the batch (its LIMIT), so it is left out of that count, as a read of
	// the backlog is, and checked by Uses.
	walk := []string{"a", "d", "m"}
	spread := func(table, sql string, arg any) int {
		return historyplan.Partitions(t, pool, table, historyplan.Batch(t, pool, DefaultBatchSize, sql, arg, DefaultBatchSize))
	}
	attempts := spread("attempts", `SELECT a.id FROM herald.attempts a WHERE a.endpoint_id = $1 LIMIT $2`, s.EndpointID)
	deliveries := spread("deliveries", `SELECT d.id FROM herald.deliveries d WHERE d.endpoint_id = $1 LIMIT $2`, s.EndpointID)
	// The filled history's replay recorded fewer than a batch.
	rows, err := pool.Query(t.Context(), `SELECT x.delivery_id FROM herald.replay_deliveries x
WHERE x.replay_id = ANY (ARRAY(SELECT r.id FROM herald.replays r WHERE r.endpoint_id = $1)) LIMIT $2`, replayed, DefaultBatchSize)
	require.NoError(t, err)
	recorded, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	require.NoError(t, err)
	replayRecords := historyplan.Partitions(t, pool, "replay_deliveries", recorded)
	messages := spread("messages", `SELECT m.id FROM herald.messages m WHERE m.tenant_id = $1 LIMIT $2`, s.TenantID)
	historyplan.Check(t, pool, []historyplan.Query{
		{Name: "erasure: attempts of an endpoint", SQL: deleteAttempts, Args: []any{s.EndpointID, DefaultBatchSize},
			Uses: []string{"attempts_endpoint_started", "attempts_pkey"}, OnePartition: []string{"attempts"}, Backlog: walk, Spread: attempts},
		{Name: "erasure: replay records of an endpoint", SQL: deleteReplayDeliveries, Args: []any{replayed, DefaultBatchSize}, OnePartition: []string{"replay_deliveries"}, Backlog: []string{"x"}, Spread: replayRecords},
		{Name: "erasure: deliveries of an endpoint", SQL: deleteDeliveries, Args: []any{s.EndpointID, DefaultBatchSize},
			Uses: []string{"deliveries_endpoint_created", "deliveries_pkey"}, OnePartition: []string{"deliveries"}, Backlog: walk, Spread: deliveries},
		{Name: "erasure: messages of a tenant", SQL: deleteMessages, Args: []any{s.TenantID, DefaultBatchSize},
			Uses: []string{"messages_tenant_created", "messages_pkey"}, OnePartition: []string{"messages"}, Backlog: walk, Spread: messages},
		{Name: "erasure: publish idempotency keys of a tenant", SQL: deletePublishKeys, Args: []any{s.TenantID, DefaultBatchSize}},
		{Name: "erasure: idempotency records of a tenant", SQL: deleteIdempotencyRecords, Args: []any{s.TenantID, DefaultBatchSize}},
	})
}
