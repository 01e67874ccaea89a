package dispatcher_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/internal/deliverystatus"
	"github.com/heraldhq/herald/internal/testfactory"
	"github.com/heraldhq/herald/migrations"
)

// inserter returns a River client that only inserts jobs, as the API does.
func (b *testBundle) inserter(t *testing.T) *river.Client[pgx.Tx] {
	t.Helper()
	client, err := river.NewClient(riverpgxv5.New(b.pool), &river.Config{Schema: migrations.Schema})
	require.NoError(t, err)
	return client
}

// deliveryRow inserts a delivery of a new, dispatched message to endpoint,
// without a job.
func (b *testBundle) deliveryRow(t *testing.T, endpoint uuid.UUID, status deliverystatus.Status) uuid.UUID {
	t.Helper()
	dispatched := time.Now()
	m := testfactory.Message(t, b.pool, &testfactory.MessageOpts{TenantID: tenant, DispatchedAt: &dispatched})
	return testfactory.Delivery(t, b.pool, &testfactory.DeliveryOpts{MessageID: m.ID, EndpointID: endpoint, Status: status}).ID
}

// discardedJob inserts a job for the delivery and discards it, as River
// does when the job's attempts run out.
func (b *testBundle) discardedJob(t *testing.T, ctx context.Context, jobs *river.Client[pgx.Tx], id, endpoint uuid.UUID) {
	t.Helper()
	res, err := jobs.Insert(ctx, delivery.Args{DeliveryID: id, EndpointID: endpoint}, nil)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `UPDATE herald.river_job SET state = 'discarded', finalized_at = now() WHERE id = $1`, res.Job.ID)
	require.NoError(t, err)
}

// liveJobs counts the delivery's jobs that River will still run.
func (b *testBundle) liveJobs(t *testing.T, ctx context.Context, id uuid.UUID) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM herald.river_job
WHERE kind = $1 AND args->>'delivery_id' = $2::text AND finalized_at IS NULL`, delivery.Kind, id).Scan(&n))
	return n
}

func (b *testBundle) statusOf(t *testing.T, ctx context.Context, id uuid.UUID) deliverystatus.Status {
	t.Helper()
	var status deliverystatus.Status
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT status FROM herald.deliveries WHERE id = $1`, id).Scan(&status))
	return status
}

func (b *testBundle) messageOf(t *testing.T, ctx context.Context, id uuid.UUID) uuid.UUID {
	t.Helper()
	var message uuid.UUID
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT message_id FROM herald.deliveries WHERE id = $1`, id).Scan(&message))
	return message
}

// waitDelivery waits until the delivery has status.
func (b *testBundle) waitDelivery(t *testing.T, ctx context.Context, id uuid.UUID, status deliverystatus.Status, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got := b.statusOf(t, ctx, id)
		if got == status {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s, delivery %s is %s with %d live jobs; want %s", within, id, got, b.liveJobs(t, ctx, id), status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
