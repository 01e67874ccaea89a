package replay

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/internal/historyplan"
)

// Every query of resend and replay on history has an index path (issue 16,
// item 3): replay walks the endpoint's deliveries by keyset, whatever the
// size of the history.
func TestHistoryQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	pool, s := historyplan.NewPool(t)
	since, until := s.DeliveryAt.Add(-7*24*time.Hour), s.DeliveryAt.Add(7*24*time.Hour)
	historyplan.Check(t, pool, []historyplan.Query{
		{Name: "resend: lock the message", SQL: selectResendTarget, Args: []any{s.MessageID, s.EndpointID}},
		{Name: "resend: lock the delivery", SQL: lockDelivery, Args: []any{s.MessageID, s.EndpointID}, OnePartition: []string{"deliveries"}},
		{Name: "replay: count the selection", SQL: insertReplay, Args: []any{uuid.New(), s.TenantID, s.EndpointID, since, until, false}},
		{Name: "replay: count the failed selection", SQL: insertReplay, Args: []any{uuid.New(), s.TenantID, s.EndpointID, since, until, true}},
		{Name: "replay: first batch", SQL: nextBatch, Args: []any{s.EndpointID, since.Add(-time.Microsecond), uuid.Max, until, DefaultBatchSize, false}, IndexConds: []string{"ROW(created_at, id) > ROW("}},
		{Name: "replay: next batch, only failed", SQL: nextBatch, Args: []any{s.EndpointID, s.DeliveryAt, s.DeliveryID, until, DefaultBatchSize, true}, IndexConds: []string{"ROW(created_at, id) > ROW("}},
		// Its done count walks the endpoint's pending deliveries, not
		// every delivery of the replay.
		{Name: "replay: progress", SQL: selectReplay, Args: []any{s.TenantID, s.EndpointID, s.ReplayID}, Uses: []string{"deliveries_pending"}},
		{Name: "replay: watch the drain", SQL: selectDrain, Args: []any{s.ReplayID}},
		{Name: "resend: requeue the delivery", SQL: requeueDelivery, Args: []any{uuid.New(), s.MessageID, s.EndpointID, s.TenantID}, OnePartition: []string{"deliveries"}},
		{Name: "replay: requeue a batch", SQL: requeueBatch, Args: []any{[]uuid.UUID{s.DeliveryID}}, OnePartition: []string{"deliveries"}},
	})
}
