package delivery

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/historyplan"
)

// What a delivery job reads and writes it finds by primary key, whatever
// the history holds (issue 16, item 3).
func TestHistoryQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	pool, s := historyplan.NewPool(t)
	now := time.Now()
	record := []any{s.DeliveryID, "pending", 0, "succeeded", nil, now, uuid.New(), s.MessageID, s.EndpointID, "scheduled",
		now, 12, "{}", 200, nil, "", "succeeded", 0}
	batch := newestDeliveries(t, pool, maxRoundTrip)
	arrays := batch.recordArrays(now)
	// A batch job of a replay of a quiet endpoint: MaxBatch of its
	// deliveries by creation, days of them.
	replayed := historyplan.Batch(t, pool, MaxBatch, `SELECT id FROM herald.deliveries WHERE endpoint_id = (
    SELECT endpoint_id FROM herald.deliveries GROUP BY endpoint_id HAVING count(*) >= $1 ORDER BY count(*), endpoint_id LIMIT 1)
ORDER BY created_at, id LIMIT $1`, MaxBatch)
	spread := historyplan.Partitions(t, pool, "deliveries", replayed)
	objects := make([]string, len(batch.ids))
	for i := range objects {
		objects[i] = fmt.Sprintf("obj_%d", i)
	}
	historyplan.Check(t, pool, []historyplan.Query{
		{Name: "delivery: load", SQL: loadDeliveries, Args: []any{batch.ids, now}, Setup: []string{lookUpByIndex, planOnce, inOneProcess}, OnePartition: []string{"deliveries", "messages"}, Backlog: []string{"lower"}},
		{Name: "delivery: cancel one", SQL: cancelDelivery, Args: []any{s.DeliveryID, now, 0}},
		{Name: "delivery: cancel a batch's", SQL: cancelDeliveries, Args: []any{batch.ids[:MaxBatch], now, 1}, Uses: []string{"deliveries_pkey"}, OnePartition: []string{"deliveries"}},
		{Name: "delivery: hand off", SQL: handOff, Args: []any{batch.ids[:MaxBatch], now, 1}, Uses: []string{"deliveries_pkey"}, OnePartition: []string{"deliveries"}},
		{Name: "delivery: reload progress", SQL: reloadProgress, Args: []any{s.DeliveryID}},
		{Name: "delivery: record an attempt", SQL: recordAttempt, Args: record, OnePartition: []string{"deliveries"}},
		{Name: "delivery: record attempts", SQL: recordAttempts, Args: arrays, Setup: []string{lookUpByIndex, planOnce}, OnePartition: []string{"deliveries"}},
		{Name: "delivery: still queued after a wait", SQL: selectStillQueued, Args: []any{batch.ids[:MaxBatch], 0}, Uses: []string{"deliveries_pkey"}, OnePartition: []string{"deliveries"}},
		{Name: "delivery: a replay's batch job still queued", SQL: selectStillQueued, Args: []any{replayed, 1}, Uses: []string{"deliveries_pkey"}, OnePartition: []string{"deliveries"}, Spread: spread},
		{Name: "delivery: lock settling lines", SQL: lockSettlingLines, Args: []any{batch.ids, batch.endpoints, objects}},
	})
}

// deliveryBatch is what a batch of recordings names of its deliveries.
type deliveryBatch struct {
	ids, messages, endpoints []uuid.UUID
	statuses                 []string
	attemptCounts            []int32
}

// newestDeliveries returns the newest n deliveries of the filled history:
// a batch as big as a round trip carries, as the recording of a burst
// names them. A batch of one, which the plans were first checked with,
// hid a merge join that read every partition's primary key whole once the
// batch was a few hundred (issue 16's aged steady run at 5,000,000).
func newestDeliveries(t *testing.T, pool *pgxpool.Pool, n int) deliveryBatch {
	t.Helper()
	rows, err := pool.Query(t.Context(), `SELECT id, message_id, endpoint_id, status, attempt_count
FROM herald.deliveries ORDER BY id DESC LIMIT $1`, n)
	require.NoError(t, err)
	var b deliveryBatch
	var (
		id, message, endpoint uuid.UUID
		status                string
		count                 int32
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &message, &endpoint, &status, &count}, func() error {
		b.ids, b.messages, b.endpoints = append(b.ids, id), append(b.messages, message), append(b.endpoints, endpoint)
		b.statuses, b.attemptCounts = append(b.statuses, status), append(b.attemptCounts, count)
		return nil
	})
	require.NoError(t, err)
	require.Len(t, b.ids, n)
	return b
}

// recordArrays are recordAttempts' arguments recording a success of each
// delivery of b at now.
func (b deliveryBatch) recordArrays(now time.Time) []any {
	n := len(b.ids)
	attempts := make([]uuid.UUID, n)
	for i := range attempts {
		attempts[i] = uuid.Must(uuid.NewV7())
	}
	text := func(v string) []string { return slices.Repeat([]string{v}, n) }
	number := func(v int32) []int32 { return slices.Repeat([]int32{v}, n) }
	at := slices.Repeat([]time.Time{now}, n)
	return []any{b.ids, b.statuses, b.attemptCounts, text("succeeded"), make([]*time.Time, n), at,
		attempts, b.messages, b.endpoints, text("scheduled"), at,
		number(12), text("{}"), number(200), make([]*string, n), text(""), text("succeeded"), make([]int32, n),
		slices.MinFunc(b.ids, compareUUID), slices.MaxFunc(b.ids, compareUUID)}
}
