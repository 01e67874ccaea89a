package dispatcher_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/dispatcher"
	"github.com/heraldhq/herald/internal/deliverystatus"
	"github.com/heraldhq/herald/internal/webhooktest"
)

// A delivery whose job River discarded (after its job errors ran out, say)
// stays pending with nothing to work it: resend answers 409 and replay
// counts it as already pending. The reconciler gives it a job and it is
// delivered. A pending delivery whose job is merely waiting is not
// stranded, and a settled one is left alone.
func TestReconcilerGivesStrandedDeliveryAJob(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	r := webhooktest.NewReceiver(t, webhooktest.Status(200))
	endpoint, _ := b.endpoint(t, ctx, tenant, r.URL)
	jobs := b.inserter(t)

	stranded := b.deliveryRow(t, endpoint, deliverystatus.Pending)
	b.discardedJob(t, ctx, jobs, stranded, endpoint)
	// Discarded once, then given a job that sleeps for an hour.
	waiting := b.deliveryRow(t, endpoint, deliverystatus.Pending)
	b.discardedJob(t, ctx, jobs, waiting, endpoint)
	_, err := jobs.Insert(ctx, delivery.Args{DeliveryID: waiting, EndpointID: endpoint},
		&river.InsertOpts{ScheduledAt: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	settled := b.deliveryRow(t, endpoint, deliverystatus.Succeeded)
	b.discardedJob(t, ctx, jobs, settled, endpoint)

	b.start(t, dispatcher.Config{})

	b.waitDelivery(t, ctx, stranded, deliverystatus.Succeeded, 30*time.Second)
	require.Equal(t, map[string]int{headerID(b.messageOf(t, ctx, stranded)): 1}, webhookIDs(r.Requests()))
	require.Equal(t, deliverystatus.Pending, b.statusOf(t, ctx, waiting))
	require.Equal(t, 1, b.liveJobs(t, ctx, waiting), "a delivery whose job is waiting gets no second job")
	require.Zero(t, b.liveJobs(t, ctx, settled))
}

// A requeued delivery whose new job was discarded is stranded even though
// the job of its earlier generation still sleeps: that job is fenced out
// and would send nothing when it woke, so it does not count as live.
func TestReconcilerDoesNotCountJobsOfAnEarlierGeneration(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	r := webhooktest.NewReceiver(t, webhooktest.Status(200))
	endpoint, _ := b.endpoint(t, ctx, tenant, r.URL)
	jobs := b.inserter(t)

	requeued := b.deliveryRow(t, endpoint, deliverystatus.Pending)
	_, err := jobs.Insert(ctx, delivery.Args{DeliveryID: requeued, EndpointID: endpoint},
		&river.InsertOpts{ScheduledAt: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, "UPDATE herald.deliveries SET generation = 1 WHERE id = $1", requeued)
	require.NoError(t, err)
	res, err := jobs.Insert(ctx, delivery.Args{DeliveryID: requeued, EndpointID: endpoint, Generation: 1}, nil)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `UPDATE herald.river_job SET state = 'discarded', finalized_at = now() WHERE id = $1`, res.Job.ID)
	require.NoError(t, err)

	b.start(t, dispatcher.Config{})

	b.waitDelivery(t, ctx, requeued, deliverystatus.Succeeded, 30*time.Second)
	require.Equal(t, map[string]int{headerID(b.messageOf(t, ctx, requeued)): 1}, webhookIDs(r.Requests()))
}

// Jobs that end while the dispatcher runs are found by the next pass: a
// batch job cancelled with its deliveries unsent, a scheduled retry
// cancelled through River, and a discarded job behind more ended jobs than
// one step of a pass reads. Each delivery is sent once and ends with no
// live job.
func TestReconcilerRepairsJobsThatEndLater(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	r := webhooktest.NewReceiver(t, webhooktest.Status(200))
	endpoint, _ := b.endpoint(t, ctx, tenant, r.URL)
	jobs := b.inserter(t)
	b.start(t, dispatcher.Config{ReconcileInterval: 200 * time.Millisecond})

	// More ended jobs of settled deliveries than a step reads, ahead of the
	// stranded ones.
	for range 3 {
		settled := b.deliveryRow(t, endpoint, deliverystatus.Succeeded)
		_, err := b.pool.Exec(ctx, `INSERT INTO herald.river_job (state, finalized_at, args, kind, queue, max_attempts)
SELECT 'discarded', now(), jsonb_build_object('delivery_id', $1::uuid, 'endpoint_id', $2::uuid), $3, $4, 100
FROM generate_series(1, 200)`, settled, endpoint, delivery.Kind, delivery.Queue)
		require.NoError(t, err)
	}

	first, second := b.deliveryRow(t, endpoint, deliverystatus.Pending), b.deliveryRow(t, endpoint, deliverystatus.Pending)
	batch, err := jobs.Insert(ctx, delivery.BatchArgs{EndpointID: endpoint, DeliveryIDs: []uuid.UUID{first, second}},
		&river.InsertOpts{ScheduledAt: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	_, err = jobs.JobCancel(ctx, batch.Job.ID)
	require.NoError(t, err)

	retrying := b.deliveryRow(t, endpoint, deliverystatus.Pending)
	retry, err := jobs.Insert(ctx, delivery.Args{DeliveryID: retrying, EndpointID: endpoint},
		&river.InsertOpts{ScheduledAt: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	_, err = jobs.JobCancel(ctx, retry.Job.ID)
	require.NoError(t, err)

	discarded := b.deliveryRow(t, endpoint, deliverystatus.Pending)
	b.discardedJob(t, ctx, jobs, discarded, endpoint)

	want := map[string]int{}
	for _, id := range []uuid.UUID{first, second, retrying, discarded} {
		b.waitDelivery(t, ctx, id, deliverystatus.Succeeded, 30*time.Second)
		want[headerID(b.messageOf(t, ctx, id))] = 1
	}
	time.Sleep(time.Second) // a few more passes
	require.Equal(t, want, webhookIDs(r.Requests()), "each delivery is sent once")
	for _, id := range []uuid.UUID{first, second, retrying, discarded} {
		require.Zero(t, b.liveJobs(t, ctx, id))
	}
	var behind time.Duration
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT (extract(epoch FROM now() - examined_until) * 1e9)::bigint FROM herald.reconciler`).Scan(&behind))
	require.Less(t, behind, time.Hour, "the passes record how far they got")
}
