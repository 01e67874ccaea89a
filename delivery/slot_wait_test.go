package delivery

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/testfactory"
	"github.com/heraldhq/herald/internal/webhooktest"
)

// A job at an answering endpoint may wait for a slot (takeSlots) after it
// loaded its delivery and checked its generation. A resend in that wait
// gives the delivery to the resend's job, so the waiting job must send
// nothing once the slot frees. On the old code it sent the old
// generation's request and its recording was fenced: the receiver got a
// request that no attempt row records, which the chaos run flagged in 2
// of 8 runs on 2026-12-05.
func TestRequeueWhileWaitingForASlotSendsNothing(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{Kind, BatchKind} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool := pgtest.NewPool(t)
			r := webhooktest.NewReceiver(t, webhooktest.Status(200))
			w, err := NewWorker(Config{
				DB: pool, Secrets: &countingSecrets{}, Logger: slog.New(slog.DiscardHandler),
				Transport: webhooktest.Transport(), MaxInflightPerEndpoint: 1,
			})
			require.NoError(t, err)
			endpoint := testfactory.Endpoint(t, pool, &testfactory.EndpointOpts{URL: r.URL})
			d := testfactory.Delivery(t, pool, &testfactory.DeliveryOpts{EndpointID: endpoint.ID})
			w.inflight.learn(endpoint.ID, endpoint.TenantID, 0, 0)
			w.inflight.observe(endpoint.ID, true)

			// Another attempt holds the endpoint's one slot.
			holder, got := w.inflight.acquireUpTo(endpoint.ID, endpoint.TenantID, 1)
			require.Equal(t, 1, got)
			worked := make(chan error, 1)
			go func() {
				job := &rivertype.JobRow{ID: 1, Kind: kind}
				if kind == Kind {
					worked <- w.Work(ctx, &river.Job[Args]{JobRow: job, Args: Args{DeliveryID: d.ID, EndpointID: endpoint.ID, Alone: true}})
					return
				}
				worked <- w.BatchWorker().Work(ctx, &river.Job[BatchArgs]{JobRow: job, Args: BatchArgs{EndpointID: endpoint.ID, DeliveryIDs: []uuid.UUID{d.ID}}})
			}()
			waiting := func() bool {
				w.inflight.mu.Lock()
				defer w.inflight.mu.Unlock()
				return len(w.inflight.waiting[endpoint.ID]) == 1
			}
			// The job waits for room before it loads (checkRoom); the slot
			// frees and is taken again at once, as by a job woken with it,
			// so the job loads its delivery and waits for a slot again
			// (takeSlots).
			require.Eventually(t, waiting, 10*time.Second, time.Millisecond, "the job waits for room")
			holder()
			holder, got = w.inflight.acquireUpTo(endpoint.ID, endpoint.TenantID, 1)
			require.Equal(t, 1, got, "the slot was retaken before the job loaded its delivery")
			require.Eventually(t, waiting, 10*time.Second, time.Millisecond, "the loaded job waits for a slot")

			// A resend, as far as the waiting job can tell.
			_, err = pool.Exec(ctx, "UPDATE herald.deliveries SET generation = generation + 1 WHERE id = $1", d.ID)
			require.NoError(t, err)
			holder()
			require.NoError(t, <-worked)
			require.Zero(t, r.Count(), "the job sent a delivery requeued while it waited for a slot")
		})
	}
}
