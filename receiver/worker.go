package receiver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// HandleFunc applies one event's effects using tx, the transaction that
// also marks the event processed. Return nil to commit both; return an
// error (or panic) to roll both back and have the event retried later.
// Events arrive in any order and the same object's events may be processed
// by several workers at once: order updates with ApplyIfNewer. Do not commit
// or roll back tx, and honour ctx: it is cancelled when the Worker stops.
//
// Effects outside the database (an email, another API) are not undone by a
// rollback; give them the downstream service's idempotency key, such as
// Event.WebhookID.
type HandleFunc func(ctx context.Context, tx pgx.Tx, ev Event) error

// Defaults of WorkerConfig.
const (
	// DefaultBatchSize is how many events one transaction claims.
	DefaultBatchSize = 10
	// DefaultMaxAttempts is how many failures make an event a dead letter.
	DefaultMaxAttempts = 5
	// DefaultPollInterval is the pause between looks at an idle inbox.
	DefaultPollInterval = time.Second
	// DefaultPruneInterval is how often a running Worker calls Prune.
	DefaultPruneInterval = time.Hour
)

// WorkerConfig configures a Worker. The zero value is ready to use.
type WorkerConfig struct {
	// BatchSize is how many events one transaction claims and processes.
	// Defaults to 10. Zero means the default.
	BatchSize int

	// MaxAttempts is how many times an event is tried before it becomes a
	// dead letter. Defaults to 5. Zero means the default.
	MaxAttempts int

	// PollInterval is how long the worker waits before looking for events
	// again after it found fewer than a full batch. Defaults to 1 s. Zero
	// means the default.
	PollInterval time.Duration

	// RetryDelay says how long to wait before attempt+1 after failed
	// attempt number attempt (1 after the first failure). Defaults to
	// DefaultRetryDelay. Nil means the default.
	RetryDelay func(attempt int) time.Duration

	// Retention is how long Prune keeps processed events' keys when the
	// worker runs it. Defaults to 30 days (DefaultRetention). Zero means
	// the default; below 7 days NewWorker refuses it (see Prune).
	Retention time.Duration

	// PruneInterval is how often Run calls Prune, starting when Run
	// starts. Defaults to 1 h. Zero means the default; negative means this
	// worker never prunes (run Prune elsewhere then). Several workers
	// pruning at once is harmless.
	PruneInterval time.Duration

	// Logger receives failures, dead letters and prune results. Defaults
	// to slog.Default(). Nil means the default.
	Logger *slog.Logger
}

// Worker processes the inbox: it claims due events with FOR UPDATE SKIP
// LOCKED, so any number of workers in any number of processes share the
// work without taking the same event, and calls its HandleFunc for each in
// the transaction that marks the event processed. A process that dies
// mid-batch leaves its events unprocessed for the next claim: nothing is
// lost and nothing is applied twice.
//
// A failing event is retried after RetryDelay and becomes a dead letter
// after MaxAttempts; it never holds back the events behind it.
type Worker struct {
	db     DB
	handle HandleFunc
	cfg    WorkerConfig
}

// NewWorker returns a Worker that applies events with handle. db is
// normally a *pgxpool.Pool. It fails when handle is nil or cfg has a
// negative count or a retention below MinRetention.
func NewWorker(db DB, handle HandleFunc, cfg WorkerConfig) (*Worker, error) {
	if db == nil || handle == nil {
		return nil, errors.New("new worker: the database and the HandleFunc are required")
	}
	if cfg.BatchSize < 0 || cfg.MaxAttempts < 0 || cfg.PollInterval < 0 {
		return nil, fmt.Errorf("new worker: BatchSize (%d), MaxAttempts (%d) and PollInterval (%s) must not be negative; zero means the default",
			cfg.BatchSize, cfg.MaxAttempts, cfg.PollInterval)
	}
	retention, err := checkRetention(cfg.Retention)
	if err != nil {
		return nil, fmt.Errorf("new worker: %w", err)
	}
	cfg.Retention = retention
	if cfg.BatchSize == 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.RetryDelay == nil {
		cfg.RetryDelay = DefaultRetryDelay
	}
	if cfg.PruneInterval == 0 {
		cfg.PruneInterval = DefaultPruneInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Worker{db: db, handle: handle, cfg: cfg}, nil
}

// DefaultRetryDelay waits 30 s after the first failure and doubles with
// each further one, up to 1 h, drawing each delay at random from its upper
// half so that events which failed together do not retry together. With
// the default 5 attempts an event is a dead letter about 7 minutes after
// its first failure.
func DefaultRetryDelay(attempt int) time.Duration {
	const base, maxDelay = 30 * time.Second, time.Hour
	d := maxDelay
	if attempt < 1 {
		attempt = 1
	}
	if attempt <= 8 {
		d = min(maxDelay, base<<(attempt-1))
	}
	return d/2 + rand.N(d/2)
}

// Run processes events until ctx is cancelled, then returns nil. Database
// errors are logged and retried after PollInterval; Run returns an error
// only when the receiver's tables do not exist (call Migrate first). It
// also prunes every PruneInterval.
func (w *Worker) Run(ctx context.Context) error {
	var pruneTick <-chan time.Time
	if w.cfg.PruneInterval > 0 {
		ticker := time.NewTicker(w.cfg.PruneInterval)
		defer ticker.Stop()
		pruneTick = ticker.C
		w.prune(ctx)
	}
	poll := time.NewTimer(0)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-pruneTick:
			w.prune(ctx)
		case <-poll.C:
			n, err := w.ProcessBatch(ctx)
			switch {
			case ctx.Err() != nil:
				return nil
			case isMissingTable(err):
				return fmt.Errorf("worker: %w; call receiver.Migrate when the program starts", err)
			case err != nil:
				w.cfg.Logger.ErrorContext(ctx, "webhook worker: batch failed; retrying", "error", err, "retry_in", w.cfg.PollInterval)
			}
			next := w.cfg.PollInterval
			if err == nil && n == w.cfg.BatchSize {
				next = 0 // a full batch: more are probably waiting
			}
			poll.Reset(next)
		}
	}
}

func (w *Worker) prune(ctx context.Context) {
	deleted, err := Prune(ctx, w.db, w.cfg.Retention)
	if err != nil {
		if ctx.Err() == nil {
			w.cfg.Logger.ErrorContext(ctx, "webhook worker: prune failed", "error", err)
		}
		return
	}
	if deleted > 0 {
		w.cfg.Logger.InfoContext(ctx, "webhook worker: pruned old keys", "deleted", deleted, "retention", w.cfg.Retention)
	}
}

// ProcessBatch claims up to BatchSize due events in one transaction and
// handles each in a savepoint of it, then commits. Events are handled in
// order of source, object ID and version, so that concurrent batches lock
// the same objects in the same order. It returns how many
// events it handled, succeeded or failed; 0 means none was due. A failing
// event does not fail the batch: its savepoint is rolled back and the
// failure recorded. The error is for the batch itself (the database, also
// when its connection broke while an event was handled, which counts
// against no event) or ctx. Run calls it in a loop; call it directly to process the inbox from
// a scheduler of your own.
func (w *Worker) ProcessBatch(ctx context.Context) (int, error) {
	tx, err := w.db.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("process batch: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	events, err := claimDue(ctx, tx, w.cfg.BatchSize)
	if err != nil {
		return 0, err
	}
	for i := range events {
		ev := &events[i]
		runErr := w.runInSavepoint(ctx, tx, ev)
		if runErr == nil {
			continue
		}
		if ctx.Err() != nil {
			// Stopping is not the event's fault: roll back, count nothing.
			return 0, ctx.Err()
		}
		if tx.Conn().IsClosed() {
			// Nor is a connection that broke (the database restarted):
			// the batch is claimed again once the database is back.
			return 0, fmt.Errorf("process batch: the database connection broke while handling event %d: %w", ev.ID, runErr)
		}
		if err := w.recordFailure(ctx, tx, ev, runErr); err != nil {
			// The batch transaction is unusable. Give up on it, then count
			// the attempt on its own so that an event which breaks the
			// transaction still reaches the dead letters.
			_ = tx.Rollback(ctx)
			if err := w.recordFailure(ctx, w.db, ev, runErr); err != nil {
				return 0, fmt.Errorf("process batch: record failure of event %d: %w", ev.ID, err)
			}
			return 0, fmt.Errorf("process batch: event %d broke the transaction, batch rolled back: %w", ev.ID, runErr)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("process batch: commit: %w", err)
	}
	return len(events), nil
}

// claimDue claims up to limit due events and returns them in the order
// they are to be applied: by source, object and version. Handlers lock
// per-object rows (ApplyIfNewer does) until the batch commits; taking them
// in one order in every batch means two workers whose batches share objects
// wait for each other instead of deadlocking, which would fail an event
// for no fault of its own.
func claimDue(ctx context.Context, tx pgx.Tx, limit int) ([]Event, error) {
	rows, err := tx.Query(ctx, claimEvents, limit)
	if err != nil {
		return nil, fmt.Errorf("process batch: claim: %w", err)
	}
	events, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Event, error) {
		var ev Event
		err := row.Scan(&ev.ID, &ev.Source, &ev.WebhookID, &ev.ObjectID, &ev.Version, &ev.Payload, &ev.ReceivedAt, &ev.Attempts)
		return ev, err
	})
	if err != nil {
		return nil, fmt.Errorf("process batch: claim: %w", err)
	}
	slices.SortStableFunc(events, func(a, b Event) int {
		return cmp.Or(cmp.Compare(a.Source, b.Source), cmp.Compare(a.ObjectID, b.ObjectID), cmp.Compare(a.Version, b.Version))
	})
	return events, nil
}

// runInSavepoint applies ev and marks it processed in a savepoint of tx,
// releasing it on success and rolling back to it on failure.
func (w *Worker) runInSavepoint(ctx context.Context, tx pgx.Tx, ev *Event) error {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return fmt.Errorf("savepoint: %w", err)
	}
	err = w.apply(ctx, sp, ev)
	if err == nil {
		err = sp.Commit(ctx)
	}
	if err != nil {
		if rbErr := sp.Rollback(ctx); rbErr != nil && !errors.Is(rbErr, pgx.ErrTxClosed) {
			return errors.Join(err, fmt.Errorf("roll back to savepoint: %w", rbErr))
		}
	}
	return err
}

func (w *Worker) apply(ctx context.Context, tx pgx.Tx, ev *Event) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
			w.cfg.Logger.ErrorContext(ctx, "webhook worker: handler panicked",
				"source", ev.Source, "webhook_id", ev.WebhookID, "panic", r, "stack", string(debug.Stack()))
		}
	}()
	if err := decodePayload(ev.Payload, ev); err != nil {
		return err
	}
	if err := w.handle(ctx, tx, *ev); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, markProcessed, ev.ID); err != nil {
		return fmt.Errorf("mark processed: %w", err)
	}
	return nil
}

// execer is the part of DB and pgx.Tx that recordFailure needs.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

func (w *Worker) recordFailure(ctx context.Context, db execer, ev *Event, runErr error) error {
	attempt := ev.Attempts + 1
	dead := attempt >= w.cfg.MaxAttempts
	delay := max(0, w.cfg.RetryDelay(attempt))
	if _, err := db.Exec(ctx, recordFailure, ev.ID, storableText(runErr.Error()), delay.Seconds(), dead); err != nil {
		return err
	}
	log := w.cfg.Logger.With("source", ev.Source, "webhook_id", ev.WebhookID, "type", ev.Type,
		"attempt", attempt, "max_attempts", w.cfg.MaxAttempts, "error", runErr)
	if dead {
		log.ErrorContext(ctx, "webhook worker: event failed its last attempt and is now a dead letter; fix the cause, then redrive it")
	} else {
		log.WarnContext(ctx, "webhook worker: event failed; will retry", "retry_in", delay)
	}
	return nil
}

// storableText makes an error message fit a Postgres text column, which
// rejects NUL bytes and invalid UTF-8.
func storableText(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
}

func isMissingTable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "42P01" || pgErr.Code == "3F000")
}
