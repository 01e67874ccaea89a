package ratelimit_test

import (
	"context"
	"slices"
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

	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/ratelimit"
	"github.com/heraldhq/herald/internal/testclock"
	"github.com/heraldhq/herald/migrations"
)

type sendArgs struct {
	Endpoint  uuid.UUID `json:"endpoint"`
	PerSecond float64   `json:"per_second"`
}

func (sendArgs) Kind() string { return "ratelimit_test_send" }

// sendWorker stands in for the delivery worker: it asks the limiter, and
// records the (stubbed) time of every send it is allowed to make.
type sendWorker struct {
	river.WorkerDefaults[sendArgs]
	limiter *ratelimit.Limiter
	mu      sync.Mutex
	sent    []time.Time
}

func (w *sendWorker) Work(ctx context.Context, job *river.Job[sendArgs]) error {
	if err := w.limiter.Admit(ctx, job.JobRow, job.Args.Endpoint, job.Args.PerSecond); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sent = append(w.sent, w.limiter.Now())
	return nil
}

type admitBundle struct {
	clock   *testclock.Clock
	worker  *sendWorker
	testing *rivertest.Worker[sendArgs, pgx.Tx]
	tx      pgx.Tx
}

func setupAdmit(t *testing.T) *admitBundle {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })

	clock := testclock.New(t0)
	limiter := ratelimit.NewLimiter(nil)
	limiter.Now = clock.Now
	worker := &sendWorker{limiter: limiter}
	config := &river.Config{Schema: migrations.Schema, Test: river.TestConfig{Time: clock}}
	return &admitBundle{
		clock:   clock,
		worker:  worker,
		testing: rivertest.NewWorker(t, riverpgxv5.New(nil), config, river.Worker[sendArgs](worker)),
		tx:      tx,
	}
}

// Fifty deliveries to an endpoint limited to 5/s are all picked up at once:
// one is sent, 49 are snoozed to slots 200 ms apart, so the job schedule
// spans about 10 s. Run again at their scheduled times, each is sent
// without being snoozed a second time.
func TestAdmitSnoozesDeliveriesAcrossTheSchedule(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bundle := setupAdmit(t)
	args := sendArgs{Endpoint: uuid.New(), PerSecond: 5}

	var snoozed []*rivertype.JobRow
	for range 50 {
		result, err := bundle.testing.Work(ctx, t, bundle.tx, args, nil)
		require.NoError(t, err)
		if result.EventKind == river.EventKindJobSnoozed {
			snoozed = append(snoozed, result.Job)
		}
	}
	require.Len(t, bundle.worker.sent, 1, "one delivery goes out at once")
	require.Len(t, snoozed, 49)

	offsets := make([]time.Duration, len(snoozed))
	for i, job := range snoozed {
		offsets[i] = job.ScheduledAt.Sub(t0)
	}
	slices.Sort(offsets)
	for i, offset := range offsets {
		require.Equal(t, time.Duration(i+1)*200*time.Millisecond, offset, "snoozed delivery %d", i)
	}
	require.Equal(t, 9800*time.Millisecond, offsets[len(offsets)-1], "the schedule spans about 10 s")

	slices.SortFunc(snoozed, func(a, b *rivertype.JobRow) int { return a.ScheduledAt.Compare(b.ScheduledAt) })
	for _, job := range snoozed {
		bundle.clock.Set(job.ScheduledAt)
		result, err := bundle.testing.WorkJob(ctx, t, bundle.tx, job)
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobCompleted, result.EventKind, "a job that wakes at its slot is sent")
	}
	require.Len(t, bundle.worker.sent, 50)
	for i := 1; i < len(bundle.worker.sent); i++ {
		require.Equal(t, 200*time.Millisecond, bundle.worker.sent[i].Sub(bundle.worker.sent[i-1]), "send %d", i)
	}
}

func TestAdmitKeepsTheReservedSlotWhenWokenEarly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bundle := setupAdmit(t)
	args := sendArgs{Endpoint: uuid.New(), PerSecond: 1}

	_, err := bundle.testing.Work(ctx, t, bundle.tx, args, nil)
	require.NoError(t, err)
	result, err := bundle.testing.Work(ctx, t, bundle.tx, args, nil)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, result.EventKind)
	require.Equal(t, t0.Add(time.Second), result.Job.ScheduledAt)

	bundle.clock.Set(t0.Add(400 * time.Millisecond))
	result, err = bundle.testing.WorkJob(ctx, t, bundle.tx, result.Job)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, result.EventKind)
	require.Equal(t, t0.Add(time.Second), result.Job.ScheduledAt, "snoozed to the same slot, not a new one")

	bundle.clock.Set(t0.Add(time.Second))
	third, err := bundle.testing.Work(ctx, t, bundle.tx, args, nil)
	require.NoError(t, err)
	require.Equal(t, t0.Add(2*time.Second), third.Job.ScheduledAt, "the early wake-up took no slot")
}

func TestAdmitLetsUnlimitedEndpointsThrough(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bundle := setupAdmit(t)
	for range 20 {
		result, err := bundle.testing.Work(ctx, t, bundle.tx, sendArgs{Endpoint: uuid.New()}, nil)
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobCompleted, result.EventKind)
	}
}
