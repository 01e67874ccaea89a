package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/deliverystatus"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/testfactory"
	"github.com/heraldhq/herald/migrations"
	"github.com/heraldhq/herald/replay"
)

type testBundle struct {
	ctx      context.Context
	pool     *pgxpool.Pool
	jobs     *river.Client[pgx.Tx]
	endpoint uuid.UUID
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	jobs, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Schema: migrations.Schema})
	require.NoError(t, err)
	for _, id := range []string{"acme", "globex"} {
		testfactory.Tenant(t, pool, &testfactory.TenantOpts{ID: id})
	}
	endpoint := testfactory.Endpoint(t, pool, &testfactory.EndpointOpts{TenantID: "acme"})
	return &testBundle{ctx: ctx, pool: pool, jobs: jobs, endpoint: endpoint.ID}
}

func (b *testBundle) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	_, err := b.pool.Exec(b.ctx, sql, args...)
	require.NoError(t, err)
}

// message inserts a message of tenant published (and fanned out) at
// createdAt and, when status is not empty, its delivery to the bundle's
// endpoint, first attempted then and settled unless pending.
func (b *testBundle) message(t *testing.T, tenant string, createdAt time.Time, status string) (message, delivery uuid.UUID) {
	t.Helper()
	message = testfactory.Message(t, b.pool, &testfactory.MessageOpts{TenantID: tenant, CreatedAt: &createdAt, DispatchedAt: &createdAt}).ID
	if status == "" {
		return message, uuid.Nil
	}
	opts := &testfactory.DeliveryOpts{MessageID: message, EndpointID: b.endpoint, Status: deliverystatus.Status(status), FirstAttemptAt: &createdAt, CreatedAt: &createdAt}
	if opts.Status != deliverystatus.Pending {
		now := time.Now()
		opts.CompletedAt = &now
	}
	return message, testfactory.Delivery(t, b.pool, opts).ID
}

func (b *testBundle) status(t *testing.T, delivery uuid.UUID) string {
	t.Helper()
	var s string
	require.NoError(t, b.pool.QueryRow(b.ctx, "SELECT status FROM herald.deliveries WHERE id = $1", delivery).Scan(&s))
	return s
}

// deliveryJobs selects the delivery jobs, single or batch, that carry the
// delivery $1.
const deliveryJobs = `FROM herald.river_job
WHERE (kind = 'herald.delivery' AND (args->>'delivery_id')::uuid = $1)
   OR (kind = 'herald.delivery_batch' AND args->'delivery_ids' ? $1::text)`

// queued returns the triggers of the delivery jobs queued for delivery.
func (b *testBundle) queued(t *testing.T, delivery uuid.UUID) []string {
	t.Helper()
	rows, err := b.pool.Query(b.ctx, `SELECT args->>'trigger' `+deliveryJobs+` ORDER BY id`, delivery)
	require.NoError(t, err)
	triggers, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return triggers
}

// generations returns the delivery's generation and those its delivery jobs
// were queued for.
func (b *testBundle) generations(t *testing.T, delivery uuid.UUID) (current int, queued []int) {
	t.Helper()
	require.NoError(t, b.pool.QueryRow(b.ctx, "SELECT generation FROM herald.deliveries WHERE id = $1", delivery).Scan(&current))
	rows, err := b.pool.Query(b.ctx, `SELECT coalesce((args->>'generation')::int, 0) `+deliveryJobs+` ORDER BY id`, delivery)
	require.NoError(t, err)
	queued, err = pgx.CollectRows(rows, pgx.RowTo[int])
	require.NoError(t, err)
	return current, queued
}

func (b *testBundle) resend(t *testing.T, message, endpoint uuid.UUID) (replay.Resent, error) {
	t.Helper()
	var r replay.Resent
	err := pgx.BeginFunc(b.ctx, b.pool, func(tx pgx.Tx) error {
		var err error
		r, err = replay.ResendTx(b.ctx, tx, b.jobs, message, endpoint)
		return err
	})
	return r, err
}

func TestResendQueuesOneManualAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	msg, d := b.message(t, "acme", time.Now(), "failed")

	r, err := b.resend(t, msg, b.endpoint)
	require.NoError(t, err)
	require.Equal(t, replay.Resent{DeliveryID: d, PreviousStatus: "failed"}, r)
	require.Equal(t, "pending", b.status(t, d))
	require.Equal(t, []string{"manual"}, b.queued(t, d))
	var first *time.Time
	require.NoError(t, b.pool.QueryRow(b.ctx, "SELECT first_attempt_at FROM herald.deliveries WHERE id = $1", d).Scan(&first))
	require.Nil(t, first, "a resend gets a fresh retry window")
	current, queued := b.generations(t, d)
	require.Equal(t, 1, current, "a requeue moves the delivery to its next generation")
	require.Equal(t, []int{1}, queued, "the resend's job is of that generation")

	r, err = b.resend(t, msg, b.endpoint)
	require.NoError(t, err, "resending a pending delivery tries it now")
	require.Equal(t, replay.Resent{DeliveryID: d, PreviousStatus: "pending"}, r)
	current, queued = b.generations(t, d)
	require.Equal(t, 2, current)
	require.Equal(t, []int{1, 2}, queued, "the first resend's job is fenced out by the second's generation")

	// A message never delivered to the endpoint gets its first delivery.
	fresh, _ := b.message(t, "acme", time.Now(), "")
	r, err = b.resend(t, fresh, b.endpoint)
	require.NoError(t, err)
	require.Empty(t, r.PreviousStatus)
	require.Equal(t, []string{"manual"}, b.queued(t, r.DeliveryID))

	other, _ := b.message(t, "globex", time.Now(), "")
	_, err = b.resend(t, other, b.endpoint)
	require.ErrorIs(t, err, replay.ErrNotFound, "a message of another tenant")

	b.exec(t, "UPDATE herald.endpoints SET enabled = false")
	done, _ := b.message(t, "acme", time.Now(), "succeeded")
	_, err = b.resend(t, done, b.endpoint)
	require.ErrorIs(t, err, replay.ErrEndpointDisabled)
}

// A pending delivery waiting hours for its next retry is resent: it is due
// now, with a fresh window and schedule, and the resend's job is of its next
// generation, so the job asleep until the retry finds nothing to do.
func TestResendOfPendingDeliveryTriesNow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	msg, d := b.message(t, "acme", time.Now().Add(-2*time.Hour), "pending")
	b.exec(t, "UPDATE herald.deliveries SET attempt_count = 6, next_attempt_at = now() + interval '10 hours' WHERE id = $1", d)

	r, err := b.resend(t, msg, b.endpoint)
	require.NoError(t, err)
	require.Equal(t, replay.Resent{DeliveryID: d, PreviousStatus: "pending"}, r)
	var (
		next, first *time.Time
		before      int
	)
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT next_attempt_at, first_attempt_at, attempts_before_requeue
FROM herald.deliveries WHERE id = $1`, d).Scan(&next, &first, &before))
	require.NotNil(t, next)
	require.False(t, next.After(time.Now()), "the next attempt is due now, not at %s", next)
	require.Nil(t, first, "a fresh window")
	require.Equal(t, 6, before, "a fresh schedule")
	require.Equal(t, "pending", b.status(t, d))
	require.Equal(t, []string{"manual"}, b.queued(t, d))
	current, queued := b.generations(t, d)
	require.Equal(t, 1, current)
	require.Equal(t, []int{1}, queued)
}

func (b *testBundle) start(t *testing.T, p replay.Params) replay.Replay {
	t.Helper()
	var r replay.Replay
	require.NoError(t, pgx.BeginFunc(b.ctx, b.pool, func(tx pgx.Tx) error {
		var err error
		r, err = replay.StartTx(b.ctx, tx, b.jobs, p)
		return err
	}))
	return r
}

// run steps a replay to its end, with a new worker (as after a restart)
// for every batch.
func (b *testBundle) run(t *testing.T, id uuid.UUID, batch int) replay.Replay {
	t.Helper()
	for {
		more, err := replay.NewWorker(b.pool, batch, 0, nil).Step(b.ctx, b.jobs, id)
		require.NoError(t, err)
		if !more {
			break
		}
	}
	r, err := replay.Get(b.ctx, b.pool, "acme", b.endpoint, id)
	require.NoError(t, err)
	return r
}

func TestReplayQueuesEverythingInRangeOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := time.Now()
	_, before := b.message(t, "acme", now.Add(-3*time.Hour), "failed")
	var inRange []uuid.UUID
	for _, status := range []string{"succeeded", "failed", "skipped", "cancelled", "succeeded"} {
		_, d := b.message(t, "acme", now.Add(-30*time.Minute), status)
		inRange = append(inRange, d)
	}
	_, pending := b.message(t, "acme", now.Add(-20*time.Minute), "pending")

	r := b.start(t, replay.Params{EndpointID: b.endpoint, Since: now.Add(-time.Hour)})
	require.Equal(t, "running", r.Status)
	require.Equal(t, 6, r.Total)
	require.Equal(t, 1, jobCount(t, b, replay.Kind))

	r = b.run(t, r.ID, 2)
	require.Equal(t, "completed", r.Status)
	require.Equal(t, 6, r.Total)
	require.Equal(t, 6, r.Enqueued)
	require.Equal(t, 0, r.Done, "nothing has been sent yet")
	for _, d := range inRange {
		require.Equal(t, "pending", b.status(t, d))
		require.Equal(t, []string{"replay"}, b.queued(t, d))
		current, queued := b.generations(t, d)
		require.Equal(t, 1, current)
		require.Equal(t, []int{1}, queued)
	}
	require.Empty(t, b.queued(t, pending), "an already pending delivery is not queued again")
	require.Empty(t, b.queued(t, before), "before since is out of range")
	require.Equal(t, "failed", b.status(t, before))

	// Replaying again while those are pending queues nothing more.
	again := b.run(t, b.start(t, replay.Params{EndpointID: b.endpoint, Since: now.Add(-time.Hour)}).ID, 10)
	require.Equal(t, 6, again.Enqueued)
	for _, d := range inRange {
		require.Len(t, b.queued(t, d), 1)
	}

	b.exec(t, "UPDATE herald.deliveries SET status = 'succeeded' WHERE id = ANY($1)", inRange[:3])
	r, err := replay.Get(b.ctx, b.pool, "acme", b.endpoint, r.ID)
	require.NoError(t, err)
	require.Equal(t, 3, r.Done)

	_, err = replay.Get(b.ctx, b.pool, "globex", b.endpoint, r.ID)
	require.ErrorIs(t, err, replay.ErrReplayNotFound)
}

// A replay's batch job is quiet (delivery.BatchArgs.Quiet: it sends
// without looking for an earlier attempt in flight) only when each of its
// deliveries was left alone for the worker's quiet period before the
// replay: one cancelled a moment ago may still be in flight in the job
// that had it when its endpoint was disabled.
func TestReplayBatchJobIsQuietOnlyForLongSettledDeliveries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := time.Now()
	_, old := b.message(t, "acme", now.Add(-3*time.Hour), "succeeded")
	b.exec(t, "UPDATE herald.deliveries SET updated_at = $2, completed_at = $2 WHERE id = $1", old, now.Add(-2*time.Hour))
	_, recent := b.message(t, "acme", now.Add(-2*time.Hour), "cancelled")

	r := b.run(t, b.start(t, replay.Params{EndpointID: b.endpoint, Since: now.Add(-4 * time.Hour)}).ID, 1)
	require.Equal(t, 2, r.Enqueued)
	for d, want := range map[uuid.UUID]bool{old: true, recent: false} {
		var quiet bool
		require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT coalesce((args->>'quiet')::bool, false) `+deliveryJobs, d).Scan(&quiet))
		require.Equal(t, want, quiet, "delivery settled at %s", map[bool]string{true: "two hours ago", false: "now"}[want])
	}
}

// A completed replay's job watches its deliveries drain and marks the
// replay drained when none is pending; its progress is then its enqueued
// count, read without counting the endpoint's pending deliveries (whose
// index keeps the drained deliveries' entries until vacuum: the portal's
// endpoint page took 2.1 s on the aged bench scenario). A delivery sent
// again afterwards does not take the progress back.
func TestCompletedReplayIsMarkedDrained(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := time.Now()
	var replayed []uuid.UUID
	for range 3 {
		_, d := b.message(t, "acme", now.Add(-30*time.Minute), "failed")
		replayed = append(replayed, d)
	}
	r := b.run(t, b.start(t, replay.Params{EndpointID: b.endpoint, Since: now.Add(-time.Hour)}).ID, 10)
	require.Equal(t, "completed", r.Status)
	w := replay.NewWorker(b.pool, 10, 0, nil)
	drained := func() bool {
		t.Helper()
		var at *time.Time
		require.NoError(t, b.pool.QueryRow(b.ctx, "SELECT drained_at FROM herald.replays WHERE id = $1", r.ID).Scan(&at))
		return at != nil
	}

	var snooze *river.JobSnoozeError
	require.ErrorAs(t, w.WatchDrain(b.ctx, r.ID), &snooze, "three pending: look again")
	require.Equal(t, time.Second, snooze.Duration, "a replay that completed just now is looked at again within a second")
	require.False(t, drained())

	b.exec(t, "UPDATE herald.deliveries SET status = 'succeeded' WHERE id = ANY($1)", replayed[:2])
	require.ErrorAs(t, w.WatchDrain(b.ctx, r.ID), &snooze, "one pending")
	b.exec(t, "UPDATE herald.replays SET completed_at = now() - interval '1 day' WHERE id = $1", r.ID)
	require.ErrorAs(t, w.WatchDrain(b.ctx, r.ID), &snooze)
	require.Equal(t, 5*time.Minute, snooze.Duration, "one that completed a day ago, every five minutes")
	got, err := replay.Get(b.ctx, b.pool, "acme", b.endpoint, r.ID)
	require.NoError(t, err)
	require.Equal(t, 2, got.Done)

	b.exec(t, "UPDATE herald.deliveries SET status = 'failed' WHERE id = $1", replayed[2])
	require.NoError(t, w.WatchDrain(b.ctx, r.ID), "none pending: the watch ends")
	require.True(t, drained())
	require.NoError(t, w.WatchDrain(b.ctx, r.ID), "and stays ended")

	b.exec(t, "UPDATE herald.deliveries SET status = 'pending' WHERE id = $1", replayed[0])
	got, err = replay.Get(b.ctx, b.pool, "acme", b.endpoint, r.ID)
	require.NoError(t, err)
	require.Equal(t, 3, got.Done, "a drained replay's progress is its enqueued count")
}

func TestReplayOnlyFailedAndUntil(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := time.Now()
	_, ok := b.message(t, "acme", now.Add(-50*time.Minute), "succeeded")
	_, failed := b.message(t, "acme", now.Add(-40*time.Minute), "failed")
	_, skipped := b.message(t, "acme", now.Add(-30*time.Minute), "skipped")
	_, late := b.message(t, "acme", now.Add(-5*time.Minute), "failed")

	r := b.start(t, replay.Params{EndpointID: b.endpoint, Since: now.Add(-time.Hour), Until: now.Add(-10 * time.Minute), OnlyFailed: true})
	require.Equal(t, 2, r.Total)
	r = b.run(t, r.ID, 100)
	require.Equal(t, 2, r.Enqueued)
	require.Equal(t, "succeeded", b.status(t, ok))
	require.Equal(t, "pending", b.status(t, failed))
	require.Equal(t, "pending", b.status(t, skipped))
	require.Equal(t, "failed", b.status(t, late))
}

func TestReplayRefusesDisabledEndpointsAndEmptyRanges(t *testing.T) {
	t.Parallel()
	b := setup(t)
	err := pgx.BeginFunc(b.ctx, b.pool, func(tx pgx.Tx) error {
		_, err := replay.StartTx(b.ctx, tx, b.jobs, replay.Params{EndpointID: b.endpoint, Since: time.Now().Add(time.Hour)})
		return err
	})
	require.ErrorIs(t, err, replay.ErrInvalidRange)
	b.exec(t, "UPDATE herald.endpoints SET enabled = false")
	err = pgx.BeginFunc(b.ctx, b.pool, func(tx pgx.Tx) error {
		_, err := replay.StartTx(b.ctx, tx, b.jobs, replay.Params{EndpointID: b.endpoint, Since: time.Now().Add(-time.Hour)})
		return err
	})
	require.ErrorIs(t, err, replay.ErrEndpointDisabled)
}

func jobCount(t *testing.T, b *testBundle, kind string) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(b.ctx, "SELECT count(*) FROM herald.river_job WHERE kind = $1", kind).Scan(&n))
	return n
}

// A replay may reach back to its tenant's retention horizon, not before:
// the global retention, or the tenant's own when shorter.
func TestReplayRefusesASinceBeforeTheRetentionHorizon(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := time.Now()
	start := func(since time.Time) error {
		return pgx.BeginFunc(b.ctx, b.pool, func(tx pgx.Tx) error {
			_, err := replay.StartTx(b.ctx, tx, b.jobs, replay.Params{EndpointID: b.endpoint, Since: since, Now: now})
			return err
		})
	}
	global := 30 * 24 * time.Hour
	require.NoError(t, start(now.Add(-global)), "the horizon itself is replayable")
	err := start(now.Add(-global - time.Second))
	require.ErrorIs(t, err, replay.ErrBeforeHorizon)
	var horizon *replay.BeforeHorizonError
	require.ErrorAs(t, err, &horizon)
	require.True(t, horizon.Earliest.Equal(now.Add(-global)), "earliest %s", horizon.Earliest)
	require.Equal(t, global, horizon.Retention)

	b.exec(t, "UPDATE herald.tenants SET retention = interval '7 days' WHERE id = 'acme'")
	require.NoError(t, start(now.Add(-7*24*time.Hour)))
	require.ErrorAs(t, start(now.Add(-8*24*time.Hour)), &horizon)
	require.True(t, horizon.Earliest.Equal(now.Add(-7*24*time.Hour)))
	require.Equal(t, 7*24*time.Hour, horizon.Retention)
}
