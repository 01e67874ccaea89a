package receiver_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/receiver"
)

// noDelay retries at once, so tests need not wait for backoff.
func noDelay(int) time.Duration { return 0 }

func newWorker(t *testing.T, bundle *testBundle, handle receiver.HandleFunc, cfg receiver.WorkerConfig) *receiver.Worker {
	t.Helper()
	if cfg.RetryDelay == nil {
		cfg.RetryDelay = noDelay
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	w, err := receiver.NewWorker(bundle.pool, handle, cfg)
	require.NoError(t, err)
	return w
}

func TestWorker(t *testing.T) {
	t.Parallel()

	t.Run("AppliesEachEventOnceAndMarksItProcessed", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		for i := range 25 {
			bundle.storeEvent(t, "acme", fmt.Sprintf("msg_%d", i), "account.credited", creditData{Account: "acct_1", Amount: 100})
		}
		w := newWorker(t, bundle, creditHandler, receiver.WorkerConfig{BatchSize: 10})

		require.Equal(t, 25, drain(t, bundle.ctx, w))
		require.Zero(t, drain(t, bundle.ctx, w), "processed events are not claimed again")
		require.EqualValues(t, 2500, bundle.credits(t, "acct_1"))

		var unprocessed int
		require.NoError(t, bundle.pool.QueryRow(bundle.ctx, `SELECT count(*) FROM webhook_inbox.events WHERE processed_at IS NULL`).Scan(&unprocessed))
		require.Zero(t, unprocessed)
	})

	t.Run("DecodesTheEvent", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		payload := `{"type":"plan.changed","timestamp":"2026-12-02T12:00:00Z","object":{"id":"acct_9","version":7},"data":{"plan":"pro"}}`
		_, err := bundle.pool.Exec(bundle.ctx, `INSERT INTO webhook_inbox.events (source, webhook_id, type, payload) VALUES ('acme', 'msg_1', 'plan.changed', $1)`, []byte(payload))
		require.NoError(t, err)

		var got receiver.Event
		w := newWorker(t, bundle, func(_ context.Context, _ pgx.Tx, ev receiver.Event) error {
			got = ev
			return nil
		}, receiver.WorkerConfig{})
		require.Equal(t, 1, drain(t, bundle.ctx, w))

		require.Equal(t, "acme", got.Source)
		require.Equal(t, "msg_1", got.WebhookID)
		require.Equal(t, "plan.changed", got.Type)
		require.Equal(t, time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC), got.Timestamp)
		require.Equal(t, "acct_9", got.ObjectID)
		require.EqualValues(t, 7, got.Version)
		require.JSONEq(t, `{"plan":"pro"}`, string(got.Data))
		require.Equal(t, payload, string(got.Payload))
		require.Zero(t, got.Attempts)
		require.NotZero(t, got.ID)
		require.False(t, got.ReceivedAt.IsZero())
	})

	// The article's eighth check: one event fails every time; it must end
	// as a dead letter while every event behind it is applied.
	t.Run("PoisonEventBecomesDeadLetterWithoutBlockingOthers", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		bundle.storeEvent(t, "acme", "msg_poison", "account.credited", creditData{Account: "acct_bad", Amount: 100})
		for i := range 12 {
			bundle.storeEvent(t, "acme", fmt.Sprintf("msg_%d", i), "account.credited", creditData{Account: "acct_1", Amount: 100})
		}
		handle := func(ctx context.Context, tx pgx.Tx, ev receiver.Event) error {
			if ev.WebhookID == "msg_poison" {
				if err := credit(ctx, tx, "acct_bad", 100); err != nil {
					return err
				}
				return errors.New("account acct_bad is closed")
			}
			return creditHandler(ctx, tx, ev)
		}
		w := newWorker(t, bundle, handle, receiver.WorkerConfig{BatchSize: 5, MaxAttempts: 3})

		drain(t, bundle.ctx, w)

		require.EqualValues(t, 1200, bundle.credits(t, "acct_1"), "events behind the poison one are applied")
		require.Zero(t, bundle.credits(t, "acct_bad"), "a failed attempt's writes are rolled back")
		letters, err := receiver.ListDeadLetters(bundle.ctx, bundle.pool, 0)
		require.NoError(t, err)
		require.Len(t, letters, 1)
		require.Equal(t, "msg_poison", letters[0].WebhookID)
		require.Equal(t, "account.credited", letters[0].Type)
		require.Equal(t, 3, letters[0].Attempts)
		require.Equal(t, "account acct_bad is closed", letters[0].LastError)
		require.False(t, letters[0].DeadAt.IsZero())
	})

	t.Run("RedriveRunsADeadLetterAgain", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		bundle.storeEvent(t, "acme", "msg_1", "account.credited", creditData{Account: "acct_1", Amount: 100})
		broken := true
		handle := func(ctx context.Context, tx pgx.Tx, ev receiver.Event) error {
			if broken {
				return errors.New("bug")
			}
			return creditHandler(ctx, tx, ev)
		}
		w := newWorker(t, bundle, handle, receiver.WorkerConfig{MaxAttempts: 2})
		drain(t, bundle.ctx, w)
		letters, err := receiver.ListDeadLetters(bundle.ctx, bundle.pool, 0)
		require.NoError(t, err)
		require.Len(t, letters, 1)

		broken = false
		ok, err := receiver.Redrive(bundle.ctx, bundle.pool, "acme", "msg_nonexistent")
		require.NoError(t, err)
		require.False(t, ok)
		ok, err = receiver.Redrive(bundle.ctx, bundle.pool, "acme", "msg_1")
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, 1, drain(t, bundle.ctx, w))

		require.EqualValues(t, 100, bundle.credits(t, "acct_1"))
		letters, err = receiver.ListDeadLetters(bundle.ctx, bundle.pool, 0)
		require.NoError(t, err)
		require.Empty(t, letters)
	})

	t.Run("RedriveAll", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		for i := range 3 {
			bundle.storeEvent(t, "acme", fmt.Sprintf("msg_%d", i), "account.credited", creditData{Account: "acct_1", Amount: 100})
		}
		w := newWorker(t, bundle, func(context.Context, pgx.Tx, receiver.Event) error { return errors.New("bug") }, receiver.WorkerConfig{MaxAttempts: 1})
		drain(t, bundle.ctx, w)

		n, err := receiver.RedriveAll(bundle.ctx, bundle.pool)
		require.NoError(t, err)
		require.EqualValues(t, 3, n)
		w = newWorker(t, bundle, creditHandler, receiver.WorkerConfig{})
		require.Equal(t, 3, drain(t, bundle.ctx, w))
		require.EqualValues(t, 300, bundle.credits(t, "acct_1"))
	})

	t.Run("PanicIsAFailedAttempt", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		bundle.storeEvent(t, "acme", "msg_panic", "account.credited", creditData{Account: "acct_1", Amount: 100})
		bundle.storeEvent(t, "acme", "msg_fine", "account.credited", creditData{Account: "acct_2", Amount: 100})
		handle := func(ctx context.Context, tx pgx.Tx, ev receiver.Event) error {
			if ev.WebhookID == "msg_panic" {
				_ = credit(ctx, tx, "acct_1", 100)
				panic("nil map")
			}
			return creditHandler(ctx, tx, ev)
		}
		w := newWorker(t, bundle, handle, receiver.WorkerConfig{MaxAttempts: 2})
		drain(t, bundle.ctx, w)

		require.Zero(t, bundle.credits(t, "acct_1"))
		require.EqualValues(t, 100, bundle.credits(t, "acct_2"))
		letters, err := receiver.ListDeadLetters(bundle.ctx, bundle.pool, 0)
		require.NoError(t, err)
		require.Len(t, letters, 1)
		require.Equal(t, "panic: nil map", letters[0].LastError)
	})

	t.Run("SQLErrorInHandlerDoesNotSpoilTheBatch", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		bundle.storeEvent(t, "acme", "msg_bad_sql", "account.credited", creditData{Account: "acct_1", Amount: 100})
		bundle.storeEvent(t, "acme", "msg_fine", "account.credited", creditData{Account: "acct_2", Amount: 100})
		handle := func(ctx context.Context, tx pgx.Tx, ev receiver.Event) error {
			if ev.WebhookID == "msg_bad_sql" {
				_, err := tx.Exec(ctx, `INSERT INTO no_such_table VALUES (1)`)
				return err
			}
			return creditHandler(ctx, tx, ev)
		}
		w := newWorker(t, bundle, handle, receiver.WorkerConfig{MaxAttempts: 1})
		require.Equal(t, 2, drain(t, bundle.ctx, w))
		require.EqualValues(t, 100, bundle.credits(t, "acct_2"))
	})

	// A connection that breaks under a batch (the database restarts) is not
	// the event's fault: nothing counts towards its dead letter, and the
	// next batch applies it.
	t.Run("BrokenConnectionIsNotTheEventsFailure", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		bundle.storeEvent(t, "acme", "msg_1", "account.credited", creditData{Account: "acct_1", Amount: 100})
		broken := false
		handle := func(ctx context.Context, tx pgx.Tx, ev receiver.Event) error {
			if !broken {
				broken = true
				_, err := tx.Exec(ctx, `SELECT pg_terminate_backend(pg_backend_pid())`)
				return err
			}
			return creditHandler(ctx, tx, ev)
		}
		w := newWorker(t, bundle, handle, receiver.WorkerConfig{MaxAttempts: 1})

		_, err := w.ProcessBatch(bundle.ctx)
		require.ErrorContains(t, err, "connection")
		// The terminated backend may hold the event's row lock for a moment
		// after the client saw its connection fail, and batches skip locked
		// rows: drain again until the lock is gone.
		applied := drain(t, bundle.ctx, w)
		for deadline := time.Now().Add(10 * time.Second); applied == 0 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
			applied += drain(t, bundle.ctx, w)
		}
		require.Equal(t, 1, applied)

		require.EqualValues(t, 100, bundle.credits(t, "acct_1"))
		var attempts int
		require.NoError(t, bundle.pool.QueryRow(bundle.ctx, `SELECT attempts FROM webhook_inbox.events WHERE webhook_id = 'msg_1'`).Scan(&attempts))
		require.Zero(t, attempts, "the broken connection must not count as a failed attempt")
	})

	// A worker that stops mid-batch keeps what it applied and hands the
	// rest back at once, uncharged, instead of letting their lease lapse.
	t.Run("StoppingReleasesTheEventsItDidNotApply", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		for i := range 3 {
			bundle.storeEvent(t, "acme", fmt.Sprintf("msg_%d", i), "account.credited", creditData{Account: "acct_1", Amount: 100})
		}
		ctx, cancel := context.WithCancel(bundle.ctx)
		defer cancel()
		handle := func(ctx context.Context, tx pgx.Tx, ev receiver.Event) error {
			if ev.WebhookID == "msg_1" {
				cancel()
				return ctx.Err()
			}
			return creditHandler(ctx, tx, ev)
		}
		w := newWorker(t, bundle, handle, receiver.WorkerConfig{LeaseDuration: time.Hour})

		_, err := w.ProcessBatch(ctx)
		require.ErrorIs(t, err, context.Canceled)
		require.EqualValues(t, 100, bundle.credits(t, "acct_1"), "msg_0 committed in its own transaction")
		var charged, leased int
		require.NoError(t, bundle.pool.QueryRow(bundle.ctx, `SELECT count(*) FILTER (WHERE attempts > 0), count(*) FILTER (WHERE lease_expires_at IS NOT NULL)
FROM webhook_inbox.events WHERE processed_at IS NULL`).Scan(&charged, &leased))
		require.Zero(t, charged, "stopping is not the events' fault")
		require.Zero(t, leased)

		next := newWorker(t, bundle, creditHandler, receiver.WorkerConfig{})
		require.Equal(t, 2, drain(t, bundle.ctx, next), "released events are due at once, not when the hour-long lease would lapse")
		require.EqualValues(t, 300, bundle.credits(t, "acct_1"))
	})

	// A worker slower than its lease loses the events it had not started
	// to another worker, and then applies nothing of theirs.
	t.Run("ALeaseTakenOverIsNotAppliedTwice", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		bundle.storeEvent(t, "acme", "msg_1", "account.credited", creditData{Account: "acct_1", Amount: 100})
		bundle.storeEvent(t, "acme", "msg_2", "account.credited", creditData{Account: "acct_1", Amount: 100})
		entered, proceed := make(chan struct{}), make(chan struct{})
		slow := newWorker(t, bundle, func(ctx context.Context, tx pgx.Tx, ev receiver.Event) error {
			if ev.WebhookID == "msg_1" {
				close(entered)
				<-proceed // msg_2 waits behind msg_1 while their lease lapses
			}
			return creditHandler(ctx, tx, ev)
		}, receiver.WorkerConfig{BatchSize: 2, LeaseDuration: 200 * time.Millisecond})
		done := make(chan error, 1)
		go func() { _, err := slow.ProcessBatch(bundle.ctx); done <- err }()
		<-entered

		// msg_1 is locked by the transaction applying it; msg_2 is free
		// once the lease lapses.
		other := newWorker(t, bundle, creditHandler, receiver.WorkerConfig{})
		require.Eventually(t, func() bool {
			n, err := other.ProcessBatch(bundle.ctx)
			require.NoError(t, err)
			return n == 1
		}, 10*time.Second, 20*time.Millisecond)
		close(proceed)
		require.NoError(t, <-done)

		require.EqualValues(t, 200, bundle.credits(t, "acct_1"), "each event applied once")
		var unprocessed, charged int
		require.NoError(t, bundle.pool.QueryRow(bundle.ctx, `SELECT count(*) FILTER (WHERE processed_at IS NULL), count(*) FILTER (WHERE attempts > 0)
FROM webhook_inbox.events`).Scan(&unprocessed, &charged))
		require.Zero(t, unprocessed)
		require.Zero(t, charged, "a lapse of a batch's lease charges no event")
	})

	t.Run("FailedEventWaitsForItsRetryDelay", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		bundle.storeEvent(t, "acme", "msg_1", "account.credited", creditData{Account: "acct_1", Amount: 100})
		attempts := 0
		handle := func(ctx context.Context, tx pgx.Tx, ev receiver.Event) error {
			attempts++
			return errors.New("downstream unavailable")
		}
		w := newWorker(t, bundle, handle, receiver.WorkerConfig{RetryDelay: func(int) time.Duration { return time.Hour }})

		drain(t, bundle.ctx, w)
		require.Equal(t, 1, attempts, "the retry is an hour away")
		var failures int
		var lastError string
		require.NoError(t, bundle.pool.QueryRow(bundle.ctx, `SELECT attempts, last_error FROM webhook_inbox.events WHERE webhook_id = 'msg_1'`).Scan(&failures, &lastError))
		require.Equal(t, 1, failures)
		require.Equal(t, "downstream unavailable", lastError)
	})

	// Two workers whose batches hold events of the same objects in
	// crossing orders (b then a, a then b) must not deadlock on the
	// version guard's row locks, which would fail an event for nothing.
	t.Run("WorkersSharingObjectsDoNotDeadlock", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		bundle.storeObjectEvent(t, "msg_1", "b", 1)
		bundle.storeObjectEvent(t, "msg_2", "a", 1)
		bundle.storeObjectEvent(t, "msg_3", "a", 2)
		bundle.storeObjectEvent(t, "msg_4", "b", 2)

		// Each worker, once it applied its first event, waits a moment for
		// the other to apply its own first event while holding the lock.
		applied := [2]chan struct{}{make(chan struct{}), make(chan struct{})}
		worker := func(i int) *receiver.Worker {
			var once sync.Once
			return newWorker(t, bundle, func(ctx context.Context, tx pgx.Tx, ev receiver.Event) error {
				if _, err := receiver.ApplyIfNewer(ctx, tx, ev.Source, ev.ObjectID, ev.Version); err != nil {
					return err
				}
				once.Do(func() {
					close(applied[i])
					select {
					case <-applied[1-i]:
					case <-time.After(500 * time.Millisecond):
					}
				})
				return nil
			}, receiver.WorkerConfig{BatchSize: 2})
		}
		first, second := worker(0), worker(1)
		errs := make(chan error, 2)
		go func() { _, err := first.ProcessBatch(bundle.ctx); errs <- err }()
		<-applied[0] // the first worker claimed msg_1 and msg_2
		go func() { _, err := second.ProcessBatch(bundle.ctx); errs <- err }()
		require.NoError(t, <-errs)
		require.NoError(t, <-errs)

		var failed, unprocessed int
		require.NoError(t, bundle.pool.QueryRow(bundle.ctx, `SELECT count(*) FILTER (WHERE attempts > 0), count(*) FILTER (WHERE processed_at IS NULL)
FROM webhook_inbox.events`).Scan(&failed, &unprocessed))
		require.Zero(t, failed, "no event may fail: a deadlock between the workers fails one")
		require.Zero(t, unprocessed)
		var a, b int64
		require.NoError(t, bundle.pool.QueryRow(bundle.ctx, `SELECT
    (SELECT version FROM webhook_inbox.object_versions WHERE object_id = 'a'),
    (SELECT version FROM webhook_inbox.object_versions WHERE object_id = 'b')`).Scan(&a, &b))
		require.EqualValues(t, 2, a)
		require.EqualValues(t, 2, b)
	})

	t.Run("RunProcessesUntilCancelled", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		for i := range 30 {
			bundle.storeEvent(t, "acme", fmt.Sprintf("msg_%d", i), "account.credited", creditData{Account: "acct_1", Amount: 100})
		}
		ctx, cancel := context.WithCancel(bundle.ctx)
		defer cancel()

		// Three workers share the inbox, as three processes would.
		done := make(chan error, 3)
		for range 3 {
			w := newWorker(t, bundle, creditHandler, receiver.WorkerConfig{BatchSize: 4, PollInterval: 10 * time.Millisecond})
			go func() { done <- w.Run(ctx) }()
		}
		require.Eventually(t, func() bool { return bundle.credits(t, "acct_1") == 3000 }, 30*time.Second, 20*time.Millisecond)
		cancel()
		for range 3 {
			require.NoError(t, <-done)
		}
		require.EqualValues(t, 3000, bundle.credits(t, "acct_1"))
	})

	t.Run("RunWithoutMigrateSaysSo", func(t *testing.T) {
		t.Parallel()
		bundle := &testBundle{ctx: t.Context(), pool: emptyPool(t)}
		w := newWorker(t, bundle, creditHandler, receiver.WorkerConfig{PruneInterval: -1})
		err := w.Run(bundle.ctx)
		require.ErrorContains(t, err, "receiver.Migrate")
	})

	t.Run("RejectsBadConfig", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		_, err := receiver.NewWorker(bundle.pool, nil, receiver.WorkerConfig{})
		require.ErrorContains(t, err, "HandleFunc are required")
		_, err = receiver.NewWorker(bundle.pool, creditHandler, receiver.WorkerConfig{BatchSize: -1})
		require.ErrorContains(t, err, "must not be negative")
		_, err = receiver.NewWorker(bundle.pool, creditHandler, receiver.WorkerConfig{LeaseDuration: -time.Second})
		require.ErrorContains(t, err, "must not be negative")
		_, err = receiver.NewWorker(bundle.pool, creditHandler, receiver.WorkerConfig{Retention: 24 * time.Hour})
		require.ErrorIs(t, err, receiver.ErrRetentionTooShort)
	})
}

func TestDefaultRetryDelay(t *testing.T) {
	t.Parallel()
	for attempt, upper := range map[int]time.Duration{1: 30 * time.Second, 2: time.Minute, 4: 4 * time.Minute, 8: time.Hour, 50: time.Hour} {
		for range 100 {
			d := receiver.DefaultRetryDelay(attempt)
			require.GreaterOrEqual(t, d, upper/2, "attempt %d", attempt)
			require.Less(t, d, upper, "attempt %d", attempt)
		}
	}
}
