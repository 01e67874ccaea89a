package delivery

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/internal/historyplan"
)

// What a delivery job reads and writes it finds by primary key, whatever
// the history holds (issue 16, item 3).
func TestHistoryQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	pool, s := historyplan.NewPool(t)
	now := time.Now()
	ids := []uuid.UUID{s.DeliveryID}
	record := []any{s.DeliveryID, "pending", 0, "succeeded", nil, now, uuid.New(), s.MessageID, s.EndpointID, "scheduled",
		now, 12, "{}", 200, nil, "", "succeeded", 0}
	arrays := []any{ids, []string{"pending"}, []int32{0}, []string{"succeeded"}, []*time.Time{nil}, []time.Time{now},
		[]uuid.UUID{uuid.New()}, []uuid.UUID{s.MessageID}, []uuid.UUID{s.EndpointID}, []string{"scheduled"}, []time.Time{now},
		[]int32{12}, []string{"{}"}, []int32{200}, []*string{nil}, []string{""}, []string{"succeeded"}, []int32{0}}
	historyplan.Check(t, pool, []historyplan.Query{
		{Name: "delivery: load", SQL: loadDeliveries, Args: []any{ids, now}, Setup: []string{lookUpByIndex, planOnce, inOneProcess}, OnePartition: []string{"deliveries", "messages"}, Backlog: []string{"lower"}},
		{Name: "delivery: cancel one", SQL: cancelDelivery, Args: []any{s.DeliveryID, now, 0}},
		{Name: "delivery: cancel a batch's", SQL: cancelDeliveries, Args: []any{ids, now, 1}, OnePartition: []string{"deliveries"}},
		{Name: "delivery: hand off", SQL: handOff, Args: []any{ids, now, 1}, OnePartition: []string{"deliveries"}},
		{Name: "delivery: reload progress", SQL: reloadProgress, Args: []any{s.DeliveryID}},
		{Name: "delivery: record an attempt", SQL: recordAttempt, Args: record, OnePartition: []string{"deliveries"}},
		{Name: "delivery: record attempts", SQL: recordAttempts, Args: arrays, Setup: []string{lookUpByIndex}, OnePartition: []string{"deliveries"}},
		{Name: "delivery: lock settling lines", SQL: lockSettlingLines, Args: []any{ids, []uuid.UUID{s.EndpointID}, []string{"obj_1"}}},
	})
}
