package receiver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
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
// A handler that kills its process (os.Exit, a crash, running out of
// memory) counts as a failed attempt too: see Worker.
//
// Effects outside the database (an email, another API) are not undone by a
// rollback; give them the downstream service's idempotency key, such as
// Event.WebhookID.
type HandleFunc func(ctx context.Context, tx pgx.Tx, ev Event) error

// Defaults of WorkerConfig.
const (
	// DefaultBatchSize is how many events one lease claims.
	DefaultBatchSize = 10
	// DefaultMaxAttempts is how many failures make an event a dead letter.
	DefaultMaxAttempts = 5
	// DefaultLeaseDuration is how long a claim reserves its events.
	DefaultLeaseDuration = time.Minute
	// DefaultPollInterval is the pause between looks at an idle inbox.
	DefaultPollInterval = time.Second
	// DefaultPruneInterval is how often a running Worker calls Prune.
	DefaultPruneInterval = time.Hour
)

// WorkerConfig configures a Worker. The zero value is ready to use.
type WorkerConfig struct {
	// BatchSize is how many events one lease claims; each is then applied
	// in a transaction of its own. Defaults to 10. Zero means the default.
	BatchSize int

	// MaxAttempts is how many times an event is tried before it becomes a
	// dead letter: attempts whose handler failed or panicked, and attempts
	// during which the event, handled alone, killed its process. Defaults
	// to 5. Zero means the default.
	MaxAttempts int

	// LeaseDuration is how long a claim reserves its events for this
	// worker. When the worker dies, its events are claimed again after
	// this long, so it is also the pause between the deaths an event that
	// kills its process causes. Make it longer than a batch takes to apply:
	// an event whose lease lapses before its turn in the batch goes to
	// another worker (never applied twice, but retried alone). Defaults to
	// 1 min (DefaultLeaseDuration). Zero means the default.
	LeaseDuration time.Duration

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

// Worker processes the inbox. It leases a batch of due events with FOR
// UPDATE SKIP LOCKED, so any number of workers in any number of processes
// share the work without taking the same event, counting an attempt on each
// and committing before it applies any. It then calls its HandleFunc for
// each event in a transaction of the event's own, the one that marks it
// processed: nothing is lost and nothing is applied twice.
//
// A failing event is retried after RetryDelay and becomes a dead letter
// after MaxAttempts; it never holds back the events behind it. Neither does
// an event that kills its process: the lease has counted the attempt, so
// after LeaseDuration the event is retried alone and after MaxAttempts such
// deaths it is a dead letter, while the events leased with it are retried
// without being charged (see lease.go for why this holds).
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
	if cfg.BatchSize < 0 || cfg.MaxAttempts < 0 || cfg.PollInterval < 0 || cfg.LeaseDuration < 0 {
		return nil, fmt.Errorf("new worker: BatchSize (%d), MaxAttempts (%d), PollInterval (%s) and LeaseDuration (%s) must not be negative; zero means the default",
			cfg.BatchSize, cfg.MaxAttempts, cfg.PollInterval, cfg.LeaseDuration)
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
	if cfg.LeaseDuration == 0 {
		cfg.LeaseDuration = DefaultLeaseDuration
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
			_, more, err := w.processBatch(ctx)
			switch {
			case ctx.Err() != nil:
				return nil
			case isMissingTable(err):
				return fmt.Errorf("worker: %w; call receiver.Migrate when the program starts", err)
			case err != nil:
				w.cfg.Logger.ErrorContext(ctx, "webhook worker: batch failed; retrying", "error", err, "retry_in", w.cfg.PollInterval)
			}
			next := w.cfg.PollInterval
			if err == nil && more {
				next = 0
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

// ProcessBatch leases up to BatchSize due events and commits, then applies
// each in a transaction of its own that marks it processed. It returns how
// many events it handled, succeeded or failed; 0 means none was due (or
// the only ones due had lapsed on their last attempt and are now dead
// letters). A failing event does not fail the batch: its transaction is
// rolled back and the failure recorded. The error is for the batch itself
// (the database, also when its connection broke while an event was
// handled, which counts against no event) or ctx; the events not yet
// applied are then released, due at once and uncharged. Run calls it in a
// loop; call it directly to process the inbox from a scheduler of your own.
func (w *Worker) ProcessBatch(ctx context.Context) (int, error) {
	n, _, err := w.processBatch(ctx)
	return n, err
}

// processBatch is ProcessBatch; more reports that other events may be due
// already.
func (w *Worker) processBatch(ctx context.Context) (handled int, more bool, err error) {
	events, more, err := w.claimLeases(ctx)
	if err != nil {
		return 0, false, fmt.Errorf("process batch: %w", err)
	}
	for i := range events {
		if err := w.applyLeased(ctx, &events[i]); err != nil {
			w.release(ctx, events[i:])
			return handled, false, fmt.Errorf("process batch: %w", err)
		}
		handled++
	}
	return handled, more, nil
}

// applyLeased applies one leased event in its own transaction and records the
// outcome. It returns an error only when the failure is not the event's:
// ctx is done or the database failed.
func (w *Worker) applyLeased(ctx context.Context, ev *leasedEvent) error {
	if err := decodePayload(ev.Payload, &ev.Event); err != nil {
		return w.recordFailure(ctx, ev, err)
	}
	tx, err := w.db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("event %d: begin: %w", ev.ID, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	tag, err := tx.Exec(ctx, markProcessed, ev.ID, ev.lease)
	if err != nil {
		return fmt.Errorf("event %d: mark processed: %w", ev.ID, err)
	}
	if tag.RowsAffected() == 0 {
		w.cfg.Logger.WarnContext(ctx, "webhook worker: event's lease lapsed and another worker took it before this one applied it; skipping it",
			"source", ev.Source, "webhook_id", ev.WebhookID, "lease_duration", w.cfg.LeaseDuration)
		return nil
	}
	runErr := w.callHandler(ctx, tx, &ev.Event)
	if runErr == nil {
		runErr = tx.Commit(ctx)
	}
	switch {
	case runErr == nil:
		return nil
	case ctx.Err() != nil:
		// Stopping is not the event's fault: roll back, count nothing.
		return ctx.Err()
	case tx.Conn().IsClosed():
		// Nor is a connection that broke (the database restarted).
		return fmt.Errorf("the database connection broke while handling event %d: %w", ev.ID, runErr)
	}
	_ = tx.Rollback(ctx)
	return w.recordFailure(ctx, ev, runErr)
}

// callHandler runs the handler, turning a panic into an error.
func (w *Worker) callHandler(ctx context.Context, tx pgx.Tx, ev *Event) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
			w.cfg.Logger.ErrorContext(ctx, "webhook worker: handler panicked",
				"source", ev.Source, "webhook_id", ev.WebhookID, "panic", r, "stack", string(debug.Stack()))
		}
	}()
	return w.handle(ctx, tx, *ev)
}

// recordFailure ends ev's lease with a failed attempt, which the lease
// counted, and schedules the retry or makes ev a dead letter.
func (w *Worker) recordFailure(ctx context.Context, ev *leasedEvent, runErr error) error {
	attempt := ev.Attempts + 1
	dead := attempt >= w.cfg.MaxAttempts
	delay := max(0, w.cfg.RetryDelay(attempt))
	if _, err := w.db.Exec(ctx, recordFailure, ev.ID, ev.lease, storableText(runErr.Error()), delay.Seconds(), dead); err != nil {
		return fmt.Errorf("record failure of event %d: %w", ev.ID, err)
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
