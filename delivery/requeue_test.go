package delivery_test

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/internal/webhooktest"
	"github.com/heraldhq/herald/migrations"
	"github.com/heraldhq/herald/replay"
	"github.com/heraldhq/herald/schedule"
	"github.com/heraldhq/herald/signing"
)

// hourly retries within the hour: a job that failed sleeps long enough for
// a test to disable, enable and requeue its delivery meanwhile.
var hourly = schedule.Policy{Base: time.Hour, Cap: time.Hour, Window: 24 * time.Hour}

// requeues are the two ways a person sends a delivery again.
var requeues = []string{"resend", "replay"}

// requeue sends the message's delivery to endpoint again, as the api does:
// a resend, or a replay of what failed in the last hour, walked to its end.
func (b *testBundle) requeue(t *testing.T, ctx context.Context, jobs replay.Inserter, how string, message, endpoint uuid.UUID) {
	t.Helper()
	if how == "resend" {
		require.NoError(t, pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
			_, err := replay.ResendTx(ctx, tx, jobs, message, endpoint)
			return err
		}))
		return
	}
	var started replay.Replay
	require.NoError(t, pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		var err error
		started, err = replay.StartTx(ctx, tx, jobs, replay.Params{EndpointID: endpoint, Since: time.Now().Add(-time.Hour), OnlyFailed: true})
		return err
	}))
	w := replay.NewWorker(b.pool, 0, 0, slog.New(slog.DiscardHandler))
	for more := true; more; {
		var err error
		more, err = w.Step(ctx, jobs, started.ID)
		require.NoError(t, err)
	}
}

// workRequeued works the newest job of the delivery that is ready to run,
// the one a requeue inserted: an Args job for a resend, a batch job for a
// replay.
func (b *steppedBundle) workRequeued(t *testing.T, ctx context.Context, id uuid.UUID) (*rivertest.WorkResult, error) {
	t.Helper()
	var jobID int64
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT id FROM herald.river_job
WHERE ((kind = $1 AND (args->>'delivery_id')::uuid = $3) OR (kind = $2 AND args->'delivery_ids' ? $3::text))
  AND state = 'available' ORDER BY id DESC LIMIT 1`, delivery.Kind, delivery.BatchKind, id).Scan(&jobID))
	job, err := b.jobs.JobGet(ctx, jobID)
	require.NoError(t, err)
	if job.Kind == delivery.BatchKind {
		return b.batch.WorkJob(ctx, t, b.tx, job)
	}
	return b.worker.WorkJob(ctx, t, b.tx, job)
}

// jobsOf counts the delivery jobs, single or batch, that carry id.
func (b *testBundle) jobsOf(t *testing.T, ctx context.Context, id uuid.UUID) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM herald.river_job
WHERE (kind = $1 AND (args->>'delivery_id')::uuid = $3) OR (kind = $2 AND args->'delivery_ids' ? $3::text)`,
		delivery.Kind, delivery.BatchKind, id).Scan(&n))
	return n
}

func (b *testBundle) triggers(t *testing.T, ctx context.Context, id uuid.UUID) []string {
	t.Helper()
	var triggers []string
	for _, a := range b.attempts(t, ctx, id) {
		triggers = append(triggers, a.Trigger)
	}
	return triggers
}

// A delivery fails and its job sleeps until the retry; a 410 to another
// delivery disables the endpoint, which cancels the delivery; the owner
// enables the endpoint and resends the delivery, or replays what failed.
// The old job, woken before its time (a restart, a rescue, or simply its
// retry coming round), must end without sending: the requeue's job alone
// works the delivery.
func TestRequeueFencesOutTheSleepingJob(t *testing.T) {
	t.Parallel()
	for _, how := range requeues {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			b, ctx := setupStepped(t, delivery.Config{Policy: hourly})
			r := webhooktest.NewReceiver(t, webhooktest.Status(500, http.StatusGone, 200))
			endpoint := b.endpoint(t, ctx, r.URL)
			message := b.message(t, ctx)
			id := b.pendingDelivery(t, ctx, message, endpoint)

			old, err := b.worker.Work(ctx, t, b.tx, delivery.Args{DeliveryID: id, EndpointID: endpoint}, nil)
			require.NoError(t, err)
			require.Equal(t, river.EventKindJobSnoozed, old.EventKind, "the failed delivery's job sleeps until its retry")
			gone := b.pendingDelivery(t, ctx, b.message(t, ctx), endpoint)
			_, err = b.worker.Work(ctx, t, b.tx, delivery.Args{DeliveryID: gone, EndpointID: endpoint}, nil)
			require.NoError(t, err)
			require.Equal(t, "cancelled", b.delivery(t, ctx, id).Status, "the 410 disabled the endpoint and cancelled its pending delivery")

			_, err = b.store.EnableEndpoint(ctx, endpoint)
			require.NoError(t, err)
			b.requeue(t, ctx, b.jobs, how, message, endpoint)

			woken, err := b.worker.WorkJob(ctx, t, b.tx, old.Job)
			require.NoError(t, err)
			require.Equal(t, 2, r.Count(), "the old job must not send the requeued delivery")
			require.Equal(t, river.EventKindJobCompleted, woken.EventKind, "the old job ends")
			require.Len(t, b.attempts(t, ctx, id), 1)

			result, err := b.workRequeued(t, ctx, id)
			require.NoError(t, err)
			require.Equal(t, river.EventKindJobCompleted, result.EventKind)
			require.Len(t, b.attempts(t, ctx, id), 2, "the requeue's job sent it once")
			d := b.delivery(t, ctx, id)
			require.Equal(t, "succeeded", d.Status)
			require.Equal(t, 2, d.AttemptCount)
			require.Equal(t, []string{"scheduled", triggerOf(how)}, b.triggers(t, ctx, id))
		})
	}
}

// A batch job that has not run yet when its delivery is cancelled and
// requeued leaves the delivery to the requeue's job.
func TestRequeueTakesTheDeliveryFromItsBatchJob(t *testing.T) {
	t.Parallel()
	for _, how := range requeues {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			b, ctx := setupStepped(t, delivery.Config{Policy: hourly})
			r := webhooktest.NewReceiver(t, webhooktest.Status(http.StatusGone, 200))
			endpoint := b.endpoint(t, ctx, r.URL)
			message := b.message(t, ctx)
			id := b.pendingDelivery(t, ctx, message, endpoint)
			inserted, err := b.jobs.InsertTx(ctx, b.tx, delivery.BatchArgs{EndpointID: endpoint, DeliveryIDs: []uuid.UUID{id}}, nil)
			require.NoError(t, err)

			gone := b.pendingDelivery(t, ctx, b.message(t, ctx), endpoint)
			_, err = b.worker.Work(ctx, t, b.tx, delivery.Args{DeliveryID: gone, EndpointID: endpoint}, nil)
			require.NoError(t, err)
			require.Equal(t, "cancelled", b.delivery(t, ctx, id).Status)
			_, err = b.store.EnableEndpoint(ctx, endpoint)
			require.NoError(t, err)
			b.requeue(t, ctx, b.jobs, how, message, endpoint)

			result, err := b.batch.WorkJob(ctx, t, b.tx, inserted.Job)
			require.NoError(t, err)
			require.Equal(t, 1, r.Count(), "the batch job must not send the requeued delivery")
			require.Equal(t, river.EventKindJobCompleted, result.EventKind)
			require.Equal(t, 1, b.jobsOf(t, ctx, id), "nor hand it off: the requeue's job is its only one")

			_, err = b.workRequeued(t, ctx, id)
			require.NoError(t, err)
			require.Len(t, b.attempts(t, ctx, id), 1, "the requeue's job sent it")
			require.Equal(t, "succeeded", b.delivery(t, ctx, id).Status)
			require.Equal(t, []string{triggerOf(how)}, b.triggers(t, ctx, id))
		})
	}
}

// The sequence of TestRequeueFencesOutTheSleepingJob with real River
// clients: the old job, asleep for an hour after a 503 with Retry-After, is
// woken in the resend's own transaction, so both jobs run at once. Only the
// resend's job may send; the receiver sees each attempt once.
func TestRequeuedDeliveryIsSentByOneJob(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, delivery.Config{Policy: schedule.Policy{Base: 50 * time.Millisecond, Cap: 50 * time.Millisecond, Window: 24 * time.Hour}})
	message, goneMessage := b.message(t, ctx), b.message(t, ctx)
	var (
		mu   sync.Mutex
		seen = map[string]int{}
	)
	r := webhooktest.NewReceiver(t, func(_ int, w http.ResponseWriter, req *http.Request) {
		id := req.Header.Get(signing.HeaderID)
		mu.Lock()
		seen[id]++
		n := seen[id]
		mu.Unlock()
		switch {
		case id == delivery.MessageHeaderID(goneMessage):
			w.WriteHeader(http.StatusGone)
		case n == 1:
			w.Header().Set("Retry-After", "3600")
			w.WriteHeader(http.StatusServiceUnavailable)
		case n <= 3:
			w.WriteHeader(http.StatusInternalServerError)
		default:
			w.WriteHeader(http.StatusOK)
		}
	})
	endpoint := b.endpoint(t, ctx, r.URL)

	id := b.enqueue(t, ctx, message, endpoint)
	var oldJob int64
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT id FROM herald.river_job WHERE kind = $1 AND (args->>'delivery_id')::uuid = $2`,
		delivery.Kind, id).Scan(&oldJob))
	b.waitJob(t, ctx, oldJob, rivertype.JobStateScheduled)
	gone := b.enqueue(t, ctx, goneMessage, endpoint)
	b.waitStatus(t, ctx, gone, "failed")
	b.waitStatus(t, ctx, id, "cancelled")
	_, err := b.store.EnableEndpoint(ctx, endpoint)
	require.NoError(t, err)

	require.NoError(t, pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "UPDATE herald.river_job SET state = 'available', scheduled_at = now() WHERE id = $1", oldJob); err != nil {
			return err
		}
		_, err := replay.ResendTx(ctx, tx, b.client, message, endpoint)
		return err
	}))
	d := b.waitStatus(t, ctx, id, "succeeded")
	b.waitJob(t, ctx, oldJob, rivertype.JobStateCompleted)

	require.Equal(t, []string{"scheduled", "manual", "manual", "manual"}, b.triggers(t, ctx, id),
		"after the resend only the resend's job sends: 500, 500, 200")
	require.Equal(t, 4, d.AttemptCount)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 4, seen[delivery.MessageHeaderID(message)], "the receiver got each attempt once")
}

// A delivery fails until its three-day window is spent, and is then resent
// (or replayed), and fails again. The requeue gives it a fresh window and a
// fresh schedule: its retry comes within the first retry's bound (5 s), not
// within the 10 h a retry so many attempts in may wait. The attempts keep
// their numbers, and attempt_count counts them all.
func TestRequeueStartsTheScheduleAgain(t *testing.T) {
	t.Parallel()
	for _, how := range requeues {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			// Seeded: each subtest draws its delays alone, in order.
			policy := schedule.Policy{Rand: rand.New(rand.NewPCG(17, 29))}
			b, ctx := setupStepped(t, delivery.Config{Policy: policy})
			r := webhooktest.NewReceiver(t, webhooktest.Status(http.StatusInternalServerError))
			endpoint := b.endpoint(t, ctx, r.URL)
			message := b.message(t, ctx)
			id := b.pendingDelivery(t, ctx, message, endpoint)

			result, err := b.worker.Work(ctx, t, b.tx, delivery.Args{DeliveryID: id, EndpointID: endpoint}, nil)
			require.NoError(t, err)
			for result.EventKind == river.EventKindJobSnoozed {
				b.clock.Set(result.Job.ScheduledAt)
				result, err = b.worker.WorkJob(ctx, t, b.tx, result.Job)
				require.NoError(t, err)
			}
			spent := b.delivery(t, ctx, id)
			require.Equal(t, "failed", spent.Status, "the window is spent")
			require.Greater(t, spent.AttemptCount, 15)

			b.requeue(t, ctx, b.jobs, how, message, endpoint)
			result, err = b.workRequeued(t, ctx, id)
			require.NoError(t, err)
			if how == "replay" {
				require.Equal(t, river.EventKindJobCompleted, result.EventKind, "the replay's batch job handed the retry to a job of the delivery's own")
				require.Equal(t, 1, b.ownJobs(t, ctx, []uuid.UUID{id}), "a job of its own for the retry")
			} else {
				require.Equal(t, river.EventKindJobSnoozed, result.EventKind, "the requeued delivery failed and will be retried")
			}
			d := b.delivery(t, ctx, id)
			require.Equal(t, "pending", d.Status)
			require.Equal(t, spent.AttemptCount+1, d.AttemptCount, "attempt_count counts every attempt")
			require.Equal(t, *d.LastAttemptAt, *d.FirstAttemptAt, "the window starts at the requeue's first attempt")
			require.LessOrEqual(t, d.NextAttemptAt.Sub(*d.LastAttemptAt), schedule.DefaultBase,
				"the first retry after a requeue waits at most the schedule's base")
			attempts := b.attempts(t, ctx, id)
			require.Len(t, attempts, d.AttemptCount)
			require.Equal(t, d.AttemptCount, attempts[len(attempts)-1].Number, "attempt numbers go on increasing")
			require.Equal(t, "exhausted", attempts[len(attempts)-2].Outcome)
			require.Equal(t, "retry", attempts[len(attempts)-1].Outcome)
		})
	}
}

// A delivery's attempt failed and its job sleeps until a retry up to an hour
// away; its owner, having fixed the endpoint, resends it. The resend goes out
// at once, and the sleeping job, when its time comes, sends nothing.
func TestResendOfPendingDeliveryTriesNow(t *testing.T) {
	t.Parallel()
	b, ctx := setupStepped(t, delivery.Config{Policy: hourly})
	r := webhooktest.NewReceiver(t, webhooktest.Status(http.StatusInternalServerError, http.StatusOK))
	endpoint := b.endpoint(t, ctx, r.URL)
	message := b.message(t, ctx)
	id := b.pendingDelivery(t, ctx, message, endpoint)
	old, err := b.worker.Work(ctx, t, b.tx, delivery.Args{DeliveryID: id, EndpointID: endpoint}, nil)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, old.EventKind)

	b.requeue(t, ctx, b.jobs, "resend", message, endpoint)
	d := b.delivery(t, ctx, id)
	require.Equal(t, "pending", d.Status)
	require.False(t, d.NextAttemptAt.After(time.Now()), "the next attempt is due now")
	result, err := b.workRequeued(t, ctx, id)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, result.EventKind)
	require.Equal(t, 2, r.Count(), "the resend was sent at once")
	require.Equal(t, "succeeded", b.delivery(t, ctx, id).Status)

	b.clock.Set(old.Job.ScheduledAt)
	woken, err := b.worker.WorkJob(ctx, t, b.tx, old.Job)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, woken.EventKind)
	require.Equal(t, 2, r.Count(), "the job that slept until the retry sent nothing")
	require.Equal(t, []string{"scheduled", "manual"}, b.triggers(t, ctx, id))
}

// A resend while the delivery's attempt is in flight, from a delivery job
// or from a batch job making first attempts, and a replay of a delivery
// cancelled while its attempt was in flight (its endpoint disabled and
// enabled again meanwhile): the requeue's job waits for that attempt to end
// before it sends, so the receiver never has two requests of one delivery
// at once. The first attempt's job records nothing (its delivery moved to
// the next generation meanwhile); the requeue's job sends the delivery and
// records it. The receiver got two requests with one webhook-id, one after
// the other, which it dedupes.
func TestRequeueDuringAnAttemptWaitsForIt(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, how, job string }{
		{"resend from a delivery job", "resend", "delivery"},
		{"resend from a batch job", "resend", "batch"},
		{"replay of a cancelled delivery", "replay", "delivery"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b, ctx := setup(t, delivery.Config{Policy: fast})
			// Queues the replay's job, which no worker here runs: the test
			// walks the replay itself.
			jobs, err := river.NewClient(riverpgxv5.New(b.pool), &river.Config{Schema: migrations.Schema})
			require.NoError(t, err)
			message := b.message(t, ctx)
			var (
				endpoint, id   uuid.UUID
				mu             sync.Mutex
				inFlight, most int
			)
			r := webhooktest.NewReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
				mu.Lock()
				inFlight++
				most = max(most, inFlight)
				mu.Unlock()
				defer func() {
					mu.Lock()
					inFlight--
					mu.Unlock()
				}()
				if n == 1 {
					if c.how == "replay" {
						// As a 410 to another delivery does: the endpoint
						// disabled, its pending deliveries cancelled; then
						// enabled again by its owner.
						if _, err := b.pool.Exec(ctx, "UPDATE herald.deliveries SET status = 'cancelled', completed_at = now() WHERE id = $1", id); err != nil {
							t.Errorf("cancel the delivery: %v", err)
						}
					}
					b.requeue(t, ctx, jobs, c.how, message, endpoint)
					// Long enough for the requeue's job to start and send,
					// were it not to wait.
					time.Sleep(1500 * time.Millisecond)
				}
				w.WriteHeader(http.StatusOK)
			})
			endpoint = b.endpoint(t, ctx, r.URL)
			id = b.pendingDelivery(t, ctx, message, endpoint)
			var args river.JobArgs = delivery.Args{DeliveryID: id, EndpointID: endpoint}
			if c.job == "batch" {
				args = delivery.BatchArgs{EndpointID: endpoint, DeliveryIDs: []uuid.UUID{id}}
			}
			_, err = b.client.Insert(ctx, args, nil)
			require.NoError(t, err)

			d := b.waitStatus(t, ctx, id, "succeeded")
			require.Eventually(t, func() bool { return r.Count() >= 2 }, 20*time.Second, 20*time.Millisecond)
			require.Equal(t, 1, d.AttemptCount, "only the requeue's attempt is recorded")
			require.Equal(t, []string{triggerOf(c.how)}, b.triggers(t, ctx, id))
			require.Equal(t, 2, r.Count())
			mu.Lock()
			defer mu.Unlock()
			require.Equal(t, 1, most, "the requeue's attempt went out while the first was in flight")
		})
	}
}

// triggerOf is the trigger the attempts of a requeue record.
func triggerOf(how string) string {
	if how == "resend" {
		return string(delivery.TriggerManual)
	}
	return string(delivery.TriggerReplay)
}
