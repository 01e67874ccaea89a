package delivery_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/internal/webhooktest"
	"github.com/heraldhq/herald/signing"
)

// batch creates n pending deliveries to endpoint and one batch job for
// them, as the fan-out does, and returns the deliveries' ids and the job.
func (b *testBundle) batch(t *testing.T, ctx context.Context, endpoint uuid.UUID, n int) ([]uuid.UUID, int64) {
	t.Helper()
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i] = b.pendingDelivery(t, ctx, b.message(t, ctx), endpoint)
	}
	return ids, b.insertBatch(t, ctx, endpoint, ids)
}

func (b *testBundle) insertBatch(t *testing.T, ctx context.Context, endpoint uuid.UUID, ids []uuid.UUID) int64 {
	t.Helper()
	job, err := b.client.Insert(ctx, delivery.BatchArgs{EndpointID: endpoint, DeliveryIDs: ids}, nil)
	require.NoError(t, err)
	return job.Job.ID
}

// waitJob waits until the job reaches state and returns it.
func (b *testBundle) waitJob(t *testing.T, ctx context.Context, id int64, state rivertype.JobState) *rivertype.JobRow {
	t.Helper()
	var job *rivertype.JobRow
	require.Eventually(t, func() bool {
		var err error
		job, err = b.client.JobGet(ctx, id)
		require.NoError(t, err)
		return job.State == state
	}, 20*time.Second, 20*time.Millisecond, "job %d never became %s", id, state)
	return job
}

// ownJobs counts the delivery.Args jobs of the deliveries ids.
func (b *testBundle) ownJobs(t *testing.T, ctx context.Context, ids []uuid.UUID) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM herald.river_job
WHERE kind = $1 AND (args->>'delivery_id')::uuid = ANY($2)`, delivery.Kind, ids).Scan(&n))
	return n
}

func TestBatchSendsEveryDeliveryOnce(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, delivery.Config{Policy: fast})
	r := webhooktest.NewReceiver(t, webhooktest.Status(200))
	endpoint := b.endpoint(t, ctx, r.URL)
	secret := b.secret(t, ctx, endpoint)
	// A full job.
	ids, job := b.batch(t, ctx, endpoint, delivery.MaxBatch)

	b.waitJob(t, ctx, job, rivertype.JobStateCompleted)
	for _, id := range ids {
		d := b.delivery(t, ctx, id)
		require.Equal(t, "succeeded", d.Status)
		require.Equal(t, 1, d.AttemptCount)
		attempts := b.attempts(t, ctx, id)
		require.Len(t, attempts, 1)
		require.Equal(t, "scheduled", attempts[0].Trigger)
	}
	reqs := r.Requests()
	require.Len(t, reqs, len(ids), "one request per delivery")
	for _, req := range reqs {
		require.NoError(t, signing.Verifier{Secrets: []signing.Secret{secret}}.Verify(req.Header, req.Body))
	}
	require.LessOrEqual(t, r.PeakInflight(), delivery.DefaultMaxInflightPerEndpoint, "the endpoint's in-flight cap holds")
	require.Zero(t, b.ownJobs(t, ctx, ids), "nothing was handed off")

	// A batch job run again (its process died before River heard it
	// finish) sends nothing that was sent.
	again := b.insertBatch(t, ctx, endpoint, ids)
	b.waitJob(t, ctx, again, rivertype.JobStateCompleted)
	require.Equal(t, len(ids), r.Count())
}

func TestBatchHandsOffAtTheFirstFailure(t *testing.T) {
	t.Parallel()
	// One attempt at a time, so the batch stops right after the failure:
	// what it sent before is recorded, what comes after is handed off.
	b, ctx := setup(t, delivery.Config{Policy: fast, MaxInflightPerEndpoint: 1})
	const failAt, n = 25, 40
	codes := make([]int, failAt, failAt+2)
	for i := range codes {
		codes[i] = 200
	}
	r := webhooktest.NewReceiver(t, webhooktest.Status(append(codes, 500, 200)...))
	endpoint := b.endpoint(t, ctx, r.URL)
	ids, job := b.batch(t, ctx, endpoint, n)

	b.waitJob(t, ctx, job, rivertype.JobStateCompleted)
	for _, id := range ids {
		b.waitStatus(t, ctx, id, "succeeded")
	}
	for _, id := range ids[:failAt] {
		attempts := b.attempts(t, ctx, id)
		require.Len(t, attempts, 1, "sent by the batch")
		require.Equal(t, "scheduled", attempts[0].Trigger)
	}
	failed := b.attempts(t, ctx, ids[failAt])
	require.Len(t, failed, 2, "failed in the batch, then retried by a job of its own")
	require.Equal(t, "retry", failed[0].Outcome)
	require.Equal(t, 500, *failed[0].StatusCode)
	require.Equal(t, "succeeded", failed[1].Outcome)
	require.Equal(t, "scheduled", failed[1].Trigger)
	for _, id := range ids[failAt+1:] {
		attempts := b.attempts(t, ctx, id)
		require.Len(t, attempts, 1, "handed off unsent, then sent once")
		require.Equal(t, "scheduled", attempts[0].Trigger)
	}
	require.Equal(t, n+1, r.Count())
	require.Equal(t, n-failAt, b.ownJobs(t, ctx, ids), "the failed delivery and every unsent one got a job of its own")
	require.Zero(t, b.ownJobs(t, ctx, ids[:failAt]), "nothing sent by the batch got a job")
	var looking int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM herald.river_job
WHERE kind = $1 AND (args->>'delivery_id')::uuid = ANY($2) AND NOT coalesce((args->>'alone')::boolean, false)`, delivery.Kind, ids).Scan(&looking))
	require.Zero(t, looking, "the batch job knows no other attempt of them is in flight: their jobs need not look")
}

func TestBatchCancelsDeliveriesOfDisabledEndpoint(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, delivery.Config{Policy: fast})
	r := webhooktest.NewReceiver(t, webhooktest.Status(200))
	endpoint := b.endpoint(t, ctx, r.URL)
	_, err := b.pool.Exec(ctx, "UPDATE herald.endpoints SET enabled = false WHERE id = $1", endpoint)
	require.NoError(t, err)
	ids, job := b.batch(t, ctx, endpoint, 25)

	b.waitJob(t, ctx, job, rivertype.JobStateCompleted)
	for _, id := range ids {
		d := b.delivery(t, ctx, id)
		require.Equal(t, "cancelled", d.Status)
		require.NotNil(t, d.CompletedAt)
	}
	require.Zero(t, r.Count())
}

func TestBatchLeavesRateLimitedEndpointToOwnJobs(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, delivery.Config{Policy: fast})
	r := webhooktest.NewReceiver(t, webhooktest.Status(200))
	endpoint := b.endpoint(t, ctx, r.URL)
	_, err := b.pool.Exec(ctx, "UPDATE herald.endpoints SET rate_limit = 1000 WHERE id = $1", endpoint)
	require.NoError(t, err)
	ids, job := b.batch(t, ctx, endpoint, 25)

	b.waitJob(t, ctx, job, rivertype.JobStateCompleted)
	for _, id := range ids {
		b.waitStatus(t, ctx, id, "succeeded")
		require.Len(t, b.attempts(t, ctx, id), 1)
	}
	require.Equal(t, len(ids), b.ownJobs(t, ctx, ids), "each delivery went through a job of its own, which keeps to the limit")
	require.Equal(t, len(ids), r.Count())
}

func TestBatchWithoutDeliveriesIsCancelled(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, delivery.Config{Policy: fast})
	job := b.insertBatch(t, ctx, uuid.New(), nil)
	row := b.waitJob(t, ctx, job, rivertype.JobStateCancelled)
	require.Contains(t, row.Errors[0].Error, "1 to 100 deliveries")
}
