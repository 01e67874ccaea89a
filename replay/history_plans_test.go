package replay

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/historyplan"
)

// Every query of resend and replay on history has an index path (issue 16,
// item 3): replay walks the endpoint's deliveries by keyset, whatever the
// size of the history.
func TestHistoryQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	pool, s := historyplan.NewPool(t)
	since, until := s.DeliveryAt.Add(-7*24*time.Hour), s.DeliveryAt.Add(7*24*time.Hour)
	// A replay's batch: the next DefaultBatchSize deliveries of its
	// endpoint by creation, as nextBatch walks them: hours of the hot
	// endpoint's, days of a quiet one's, in as many partitions.
	hot := replayBatch(t, pool, s.EndpointID, s.DeliveryAt)
	quiet := replayBatch(t, pool, quietEndpoint(t, pool), time.Time{})
	hotSpread, quietSpread := historyplan.Partitions(t, pool, "deliveries", hot), historyplan.Partitions(t, pool, "deliveries", quiet)
	if quietSpread < 10 {
		t.Fatalf("a quiet endpoint's replay batch spans %d partitions; want many", quietSpread)
	}
	historyplan.Check(t, pool, []historyplan.Query{
		{Name: "resend: lock the message", SQL: selectResendTarget, Args: []any{s.MessageID, s.EndpointID}},
		{Name: "resend: lock the delivery", SQL: lockDelivery, Args: []any{s.MessageID, s.EndpointID}, OnePartition: []string{"deliveries"}},
		{Name: "replay: count the selection", SQL: insertReplay, Args: []any{uuid.New(), s.TenantID, s.EndpointID, since, until, false}},
		{Name: "replay: count the failed selection", SQL: insertReplay, Args: []any{uuid.New(), s.TenantID, s.EndpointID, since, until, true}},
		{Name: "replay: first batch", SQL: nextBatch, Args: []any{s.EndpointID, since.Add(-time.Microsecond), uuid.Max, until, DefaultBatchSize, false, DefaultQuietAfter.Seconds()}, IndexConds: []string{"ROW(created_at, id) > ROW("}},
		{Name: "replay: next batch, only failed", SQL: nextBatch, Args: []any{s.EndpointID, s.DeliveryAt, s.DeliveryID, until, DefaultBatchSize, true, DefaultQuietAfter.Seconds()}, IndexConds: []string{"ROW(created_at, id) > ROW("}},
		// Its done count walks the endpoint's pending deliveries, not
		// every delivery of the replay.
		{Name: "replay: progress", SQL: selectReplay, Args: []any{s.TenantID, s.EndpointID, s.ReplayID}, Uses: []string{"deliveries_pending"}},
		{Name: "replay: watch the drain", SQL: selectDrain, Args: []any{s.ReplayID}},
		{Name: "resend: requeue the delivery", SQL: requeueDelivery, Args: []any{uuid.New(), s.MessageID, s.EndpointID, s.TenantID}, OnePartition: []string{"deliveries"}},
		{Name: "replay: record a batch", SQL: recordReplayDeliveries, Args: []any{s.ReplayID, hot}},
		{Name: "replay: requeue a batch", SQL: requeueBatch, Args: []any{hot}, OnePartition: []string{"deliveries"}, Spread: hotSpread},
		{Name: "replay: requeue a quiet endpoint's batch", SQL: requeueBatch, Args: []any{quiet}, OnePartition: []string{"deliveries"}, Spread: quietSpread},
	})
}

// replayBatch returns the DefaultBatchSize deliveries of endpoint created
// after after, in the order nextBatch walks them.
func replayBatch(t *testing.T, pool *pgxpool.Pool, endpoint uuid.UUID, after time.Time) []uuid.UUID {
	t.Helper()
	return historyplan.Batch(t, pool, DefaultBatchSize, `SELECT id FROM herald.deliveries WHERE endpoint_id = $1 AND created_at > $2
ORDER BY created_at, id LIMIT $3`, endpoint, after, DefaultBatchSize)
}

// quietEndpoint returns an endpoint of the filled history with the fewest
// deliveries, at least a batch of them, whose replay's batch spans days.
func quietEndpoint(t *testing.T, pool *pgxpool.Pool) uuid.UUID {
	t.Helper()
	var id uuid.UUID
	if err := pool.QueryRow(t.Context(), `SELECT endpoint_id FROM herald.deliveries GROUP BY endpoint_id
HAVING count(*) >= $1 ORDER BY count(*), endpoint_id LIMIT 1`, DefaultBatchSize).Scan(&id); err != nil {
		t.Fatalf("pick a quiet endpoint: %v", err)
	}
	return id
}
