package dispatcher

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/deliverystatus"
	"github.com/heraldhq/herald/internal/historyid"
	"github.com/heraldhq/herald/internal/historyplan"
	"github.com/heraldhq/herald/internal/unnest"
)

// The fan-out and the reconciler find history rows through indexes (issue
// 16, item 3): undispatched messages through their partial index, the rest
// by key. Each statement on a batch is checked with a batch as big as the
// code makes it.
func TestHistoryQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	pool, s := historyplan.NewPool(t)
	fanOut := newestFanOut(t, pool)
	// A step of the reconciler reads reconcileBatch ended jobs and looks
	// at their deliveries: a fan-out's, made together, or retries', made
	// over the retry window (72 hours). The filled history's last
	// partition holds only the hours of its last day, and for a batch of
	// 500 of them takeOver's plan reads it whole, as it would any
	// partition of a few thousand rows (a day's first minutes): the
	// batches come from the full days before it.
	lastDay := s.End.UTC().Truncate(24 * time.Hour)
	ofFanOut := historyplan.Batch(t, pool, reconcileBatch, `SELECT id FROM herald.deliveries WHERE id < $1 ORDER BY id DESC LIMIT $2`,
		historyid.Bound(lastDay), reconcileBatch)
	ofRetries := historyplan.Batch(t, pool, reconcileBatch, `
SELECT id FROM (SELECT id, row_number() OVER (ORDER BY id) AS i, count(*) OVER () AS n FROM herald.deliveries
                WHERE id >= $1 AND id < $2) d
WHERE i % (n / $3) = 0
ORDER BY id LIMIT $3`, historyid.Bound(lastDay.Add(-72*time.Hour)), historyid.Bound(lastDay), reconcileBatch)
	spread := historyplan.Partitions(t, pool, "deliveries", ofRetries)
	historyplan.Check(t, pool, []historyplan.Query{
		{Name: "fan-out: claim messages", SQL: claimMessages, Args: []any{500, 2000}},
		{Name: "fan-out: insert deliveries", SQL: insertDeliveries, Args: fanOut},
		{Name: "reconciler: stranded deliveries", SQL: strandedDeliveries, Args: []any{ofFanOut}, Uses: []string{"deliveries_pkey"}, OnePartition: []string{"deliveries"}},
		{Name: "reconciler: lock pending", SQL: lockPending, Args: []any{ofFanOut}, Uses: []string{"deliveries_pkey"}, OnePartition: []string{"deliveries"}},
		{Name: "reconciler: take over", SQL: takeOver, Args: []any{ofFanOut}, OnePartition: []string{"deliveries"}},
		{Name: "reconciler: stranded retries", SQL: strandedDeliveries, Args: []any{ofRetries}, Uses: []string{"deliveries_pkey"}, OnePartition: []string{"deliveries"}, Spread: spread},
		{Name: "reconciler: lock pending retries", SQL: lockPending, Args: []any{ofRetries}, Uses: []string{"deliveries_pkey"}, OnePartition: []string{"deliveries"}, Spread: spread},
		{Name: "reconciler: take over retries", SQL: takeOver, Args: []any{ofRetries}, OnePartition: []string{"deliveries"}, Spread: spread},
	})
}

// newestFanOut returns insertDeliveries' arguments for a claim of the
// newest DefaultBatchSize messages: a delivery to each endpoint of their
// tenants, WideFanOutLimit deliveries at most, as claimMessages counts a
// claim. Their pairs that have a delivery already insert nothing, as when
// a fan-out runs again.
func newestFanOut(t *testing.T, pool *pgxpool.Pool) []any {
	t.Helper()
	rows, err := pool.Query(t.Context(), `
SELECT m.id, e.id, m.tenant_id
FROM (SELECT id, tenant_id FROM herald.messages ORDER BY id DESC LIMIT $1) m
JOIN herald.endpoints e ON e.tenant_id = m.tenant_id
ORDER BY m.id, e.id
LIMIT $2`, DefaultBatchSize, WideFanOutLimit)
	require.NoError(t, err)
	var (
		batch             []newDelivery
		message, endpoint uuid.UUID
		tenant            string
	)
	_, err = pgx.ForEachRow(rows, []any{&message, &endpoint, &tenant}, func() error {
		id, err := historyid.Child(message)
		batch = append(batch, newDelivery{id: id, messageID: message, endpointID: endpoint, tenantID: tenant, status: deliverystatus.Pending})
		return err
	})
	require.NoError(t, err)
	require.Greater(t, len(batch), DefaultBatchSize)
	return unnest.Arrays(batch, newDeliveryColumns...)
}
