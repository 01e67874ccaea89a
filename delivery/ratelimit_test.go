package delivery_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/internal/ratelimit"
	"github.com/heraldhq/herald/internal/webhooktest"
)

// Fifty deliveries to an endpoint limited to 5 messages per second, all
// picked up at once: one is sent and the others snooze, none for longer
// than MaxWait, so no worker waits. Worked in the order River runs them,
// each asking again when it wakes, all 50 are sent at the limit: 49
// intervals from the first to the last, less at most half an interval and
// within 10% more, and never two within half an interval.
func TestRateLimitSpreadsDeliveriesOverTheJobSchedule(t *testing.T) {
	t.Parallel()
	b, ctx := setupStepped(t, delivery.Config{Policy: fast})
	r := webhooktest.NewReceiver(t, webhooktest.Status(200))
	endpoint := b.endpoint(t, ctx, r.URL)
	setRateLimit(t, b.testBundle, endpoint, ptr(5.0))
	start := b.clock.Now()

	var snoozed []*rivertype.JobRow
	for range 50 {
		id := b.pendingDelivery(t, ctx, b.message(t, ctx), endpoint)
		result, err := b.worker.Work(ctx, t, b.tx, delivery.Args{DeliveryID: id, EndpointID: endpoint}, nil)
		require.NoError(t, err)
		if result.EventKind == river.EventKindJobSnoozed {
			require.LessOrEqual(t, result.Job.ScheduledAt.Sub(start), ratelimit.DefaultMaxWait)
			snoozed = append(snoozed, result.Job)
		}
	}
	require.Equal(t, 1, r.Count(), "one delivery goes out at once")
	require.Len(t, snoozed, 49)

	sent := []time.Time{start}
	for len(snoozed) > 0 {
		next := 0
		for i, job := range snoozed {
			if job.ScheduledAt.Before(snoozed[next].ScheduledAt) {
				next = i
			}
		}
		b.clock.Set(snoozed[next].ScheduledAt)
		result, err := b.worker.WorkJob(ctx, t, b.tx, snoozed[next])
		require.NoError(t, err)
		if result.EventKind == river.EventKindJobSnoozed {
			require.LessOrEqual(t, result.Job.ScheduledAt.Sub(b.clock.Now()), ratelimit.DefaultMaxWait)
			snoozed[next] = result.Job
			continue
		}
		require.Equal(t, river.EventKindJobCompleted, result.EventKind)
		sent = append(sent, b.clock.Now())
		snoozed = append(snoozed[:next], snoozed[next+1:]...)
	}
	require.Equal(t, 50, r.Count())
	for i := 1; i < len(sent); i++ {
		require.GreaterOrEqual(t, sent[i].Sub(sent[i-1]), 100*time.Millisecond, "send %d", i)
	}
	span := sent[len(sent)-1].Sub(start)
	require.GreaterOrEqual(t, span, 49*200*time.Millisecond-100*time.Millisecond, "never faster than 5/s")
	require.LessOrEqual(t, span, 49*200*time.Millisecond*11/10, "within 10% of 5/s")
	var succeeded int
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM herald.deliveries WHERE status = 'succeeded'").Scan(&succeeded))
	require.Equal(t, 50, succeeded)
}

// A delivery turned away by a limit of one message an hour does not sleep
// for an hour: it comes back within MaxWait and asks again. So when the
// limit is removed, or raised, meanwhile, it is sent as soon as it wakes;
// under the same limit it is turned away again.
func TestRateLimitChangeReachesAWaitingDelivery(t *testing.T) {
	t.Parallel()
	hourly, raised := 1.0/3600, 10.0
	for name, change := range map[string]struct {
		limit *float64
		want  river.EventKind
	}{
		"removed":   {nil, river.EventKindJobCompleted},
		"raised":    {&raised, river.EventKindJobCompleted},
		"unchanged": {&hourly, river.EventKindJobSnoozed},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b, ctx := setupStepped(t, delivery.Config{Policy: fast})
			r := webhooktest.NewReceiver(t, webhooktest.Status(200))
			endpoint := b.endpoint(t, ctx, r.URL)
			setRateLimit(t, b.testBundle, endpoint, &hourly)

			args := func() delivery.Args {
				return delivery.Args{DeliveryID: b.pendingDelivery(t, ctx, b.message(t, ctx), endpoint), EndpointID: endpoint}
			}
			result, err := b.worker.Work(ctx, t, b.tx, args(), nil)
			require.NoError(t, err)
			require.Equal(t, river.EventKindJobCompleted, result.EventKind, "the first delivery goes out at once")
			waiting, err := b.worker.Work(ctx, t, b.tx, args(), nil)
			require.NoError(t, err)
			require.Equal(t, river.EventKindJobSnoozed, waiting.EventKind, "the second is turned away")
			require.LessOrEqual(t, waiting.Job.ScheduledAt.Sub(b.clock.Now()), ratelimit.DefaultMaxWait,
				"it asks again within seconds, not at the next slot of an hourly limit")

			setRateLimit(t, b.testBundle, endpoint, change.limit)
			b.clock.Set(waiting.Job.ScheduledAt)
			result, err = b.worker.WorkJob(ctx, t, b.tx, waiting.Job)
			require.NoError(t, err)
			require.Equal(t, change.want, result.EventKind, "woken, it asks under the limit of now")
		})
	}
}

// setRateLimit sets an endpoint's messages per second; nil removes the
// limit.
func setRateLimit(t *testing.T, b *testBundle, endpoint uuid.UUID, perSecond *float64) {
	t.Helper()
	_, err := b.pool.Exec(t.Context(), "UPDATE herald.endpoints SET rate_limit = $2 WHERE id = $1", endpoint, perSecond)
	require.NoError(t, err)
}

func ptr[T any](v T) *T { return &v }
