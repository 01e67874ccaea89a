// Package retention keeps Herald's history within its retention: it creates
// the time partitions of history ahead of need and drops them once they are
// past retention and settled (migrations/0024_history_partitions.sql says
// how history is partitioned).
//
// A Maintainer's pass does the whole job once; the dispatchers run a pass
// as a River periodic job (Worker), which River's leader schedules and one
// dispatcher works at a time, so any number of dispatchers may run with the
// same settings.
//
// A partition set is dropped when its range ended at least the retention
// before now and it holds no undispatched message and no pending delivery.
// One that is past retention but not settled is kept and looked at again
// every pass: it goes as soon as its last delivery settles (succeeds,
// exhausts its retry window, or is cancelled when its endpoint is disabled
// or deleted). Nothing pending is dropped, however old.
//
// A tenant may be given a shorter retention of its own (tenants.retention,
// set by an operator through the api; Settings.CheckTenant says which are
// allowed). Each pass then purges that tenant's settled history past its
// own horizon in bounded batches (purge.go), and records the pass's
// settings for the api (Settings).
package retention

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Defaults of Config.
const (
	// DefaultInterval is the time range one partition covers.
	DefaultInterval = 24 * time.Hour
	// DefaultRetention is how long history is kept.
	DefaultRetention = 30 * 24 * time.Hour
	// MinInterval is the shortest partition interval.
	MinInterval = time.Minute
	// DefaultLockTimeout bounds the wait for the locks that creating or
	// dropping a partition set takes; history's readers and writers queue
	// behind the wait, so it is short. A pass that times out tries again next time.
	DefaultLockTimeout = 500 * time.Millisecond
	// pruneBatch is how many publish idempotency keys one statement prunes.
	pruneBatch = 5000
	// maxPruneBatches bounds a pass's pruning; the rest waits for the next.
	maxPruneBatches = 20
	// rollUpBatch is how many outcome deltas one statement moves into
	// the hourly counts; a pass moves at most maxPruneBatches of them.
	rollUpBatch = 10000
)

// Config configures a Maintainer.
type Config struct {
	// Pool holds Herald's tables. Required.
	Pool *pgxpool.Pool
	// Interval is the time range of each new partition, aligned to the unix
	// epoch (a day: UTC midnights). Changing it changes only the partitions
	// made from then on. Defaults to 1 day; at least MinInterval, in whole
	// seconds. Zero means the default.
	Interval time.Duration
	// Retention is how long history is kept: a partition set is dropped
	// once it ended this long ago and is settled. Defaults to 30 days. Zero
	// means the default.
	Retention time.Duration
	// RetryWindow is the deliveries' retry window (schedule.Policy.Window);
	// Retention must be at least RetryWindow plus one Interval, or
	// partitions would routinely still hold retrying deliveries when they
	// come due. Zero skips that check. Each pass records it with Retention
	// and Interval (Settings), and a tenant's own retention has the same
	// floor.
	RetryWindow time.Duration
	// Ahead is how far past now partitions are created. Defaults to three
	// intervals, and at least twice Period. Zero means the default.
	Ahead time.Duration
	// LockTimeout bounds the wait for the locks of a creation or a drop. Defaults to
	// DefaultLockTimeout. Zero means the default.
	LockTimeout time.Duration
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
	// Logger receives what each pass did. Defaults to slog.Default().
	Logger *slog.Logger
}

// Period is how often the dispatchers run a pass for interval: half an
// interval, between 10 seconds and a minute.
func Period(interval time.Duration) time.Duration {
	return min(max(cmp.Or(interval, DefaultInterval)/2, 10*time.Second), time.Minute)
}

// ErrConfig is wrapped by every error Check returns.
var ErrConfig = errors.New("retention settings")

// Check reports settings out of range, naming the flag's concept and the fix.
func (c Config) Check() error {
	interval, retention := cmp.Or(c.Interval, DefaultInterval), cmp.Or(c.Retention, DefaultRetention)
	switch {
	case c.Interval < 0 || c.Retention < 0 || c.Ahead < 0 || c.LockTimeout < 0:
		return fmt.Errorf("%w: the partition interval, retention, ahead and lock timeout must not be negative; zero means the default", ErrConfig)
	case interval < MinInterval:
		return fmt.Errorf("%w: the partition interval is %s; it must be at least %s", ErrConfig, interval, MinInterval)
	case interval%time.Second != 0:
		return fmt.Errorf("%w: the partition interval is %s; it must be whole seconds", ErrConfig, interval)
	case c.RetryWindow > 0 && retention < c.RetryWindow+interval:
		return fmt.Errorf("%w: a retention of %s is shorter than the retry window (%s) plus one partition interval (%s): partitions would come due while their deliveries are still being retried; keep history at least %s",
			ErrConfig, retention, c.RetryWindow, interval, c.RetryWindow+interval)
	}
	return nil
}

// Maintainer runs passes.
type Maintainer struct {
	pool        *pgxpool.Pool
	interval    time.Duration
	retention   time.Duration
	retryWindow time.Duration
	ahead       time.Duration
	lockTimeout time.Duration
	now         func() time.Time
	logger      *slog.Logger
}

// New checks cfg and returns a Maintainer.
func New(cfg Config) (*Maintainer, error) {
	if cfg.Pool == nil {
		return nil, errors.New("retention: Config.Pool is nil; pass the database pool")
	}
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	interval := cmp.Or(cfg.Interval, DefaultInterval)
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Maintainer{
		pool:        cfg.Pool,
		interval:    interval,
		retention:   cmp.Or(cfg.Retention, DefaultRetention),
		retryWindow: cfg.RetryWindow,
		ahead:       cmp.Or(cfg.Ahead, max(3*interval, 2*Period(interval))),
		lockTimeout: cmp.Or(cfg.LockTimeout, DefaultLockTimeout),
		now:         now,
		logger:      cmp.Or(cfg.Logger, slog.Default()),
	}, nil
}

// Outcome is what a pass found for one partition set past the horizon.
type Outcome string

// The outcomes of a partition set past the horizon.
const (
	// Dropped: the set is gone.
	Dropped Outcome = "dropped"
	// Undispatched: it holds a message not fanned out yet; kept.
	Undispatched Outcome = "undispatched"
	// Pending: it holds a pending delivery; kept.
	Pending Outcome = "pending"
	// Busy: its locks were not granted within the lock timeout; kept
	// until the next pass.
	Busy Outcome = "busy"
)

// Report is what a pass did.
type Report struct {
	// Horizon is the end of retention: sets that ended before it are due.
	Horizon time.Time
	// Created are the suffixes of the sets created.
	Created []string
	// Remade are the empty sets not begun yet that were dropped because
	// they were made with another interval; Created has their successors.
	Remade []string
	// Due are the sets past the horizon by suffix, and what became of each.
	Due map[string]Outcome
	// Purged is what was purged of each tenant whose own retention is
	// shorter than the global one, by tenant id.
	Purged map[string]*TenantPurge
	// PrunedKeys is how many publish idempotency keys older than the
	// horizon were deleted.
	PrunedKeys int64
	// RolledUpOutcomes is how many outcome deltas were moved into the
	// hourly counts; PrunedOutcomeHours how many hourly counts older than
	// KeptOutcomes were deleted.
	RolledUpOutcomes, PrunedOutcomeHours int64
}

// KeptOutcomes is how long the hourly counts of attempt outcomes, which
// the portal's charts (a week) and endpoint list (a day) draw, are kept,
// whatever the retention of the attempts themselves.
const KeptOutcomes = 8 * 24 * time.Hour

// Pass records its settings (Settings), creates the partitions from now to
// Ahead, drops the sets past retention that are settled, purges the
// settled history of the tenants with a shorter retention of their own
// past it, prunes the publish idempotency keys older than retention, and
// moves the attempts' outcome counts into their hours (countOutcomes).
func (m *Maintainer) Pass(ctx context.Context) (Report, error) {
	now := m.now()
	rep := Report{Horizon: now.Add(-m.retention), Due: map[string]Outcome{}, Purged: map[string]*TenantPurge{}}
	if _, err := m.pool.Exec(ctx, recordSettings, m.retention, m.retryWindow, m.interval); err != nil {
		return rep, fmt.Errorf("record retention settings: %w", err)
	}
	if err := m.reshape(ctx, now, &rep); err != nil {
		return rep, err
	}
	// Attaching locks each parent's default partition in turn, which a
	// reader holding one and asking for the next would deadlock with: the
	// pass gives way at the lock timeout and creates them next time.
	busy, err := m.locked(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, createPartitions, now, now.Add(m.ahead), m.interval)
		if err != nil {
			return err
		}
		rep.Created, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		return rep, fmt.Errorf("create history partitions: %w", err)
	}
	if busy {
		rep.Created = nil
		m.logger.InfoContext(ctx, "history partitions not created: their tables were busy past the lock timeout; the next pass tries again")
	}
	rows, err := m.pool.Query(ctx, selectDue, rep.Horizon)
	if err != nil {
		return rep, fmt.Errorf("list history partitions past retention: %w", err)
	}
	due, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return rep, fmt.Errorf("list history partitions past retention: %w", err)
	}
	for _, suffix := range due {
		outcome, err := m.drop(ctx, suffix, rep.Horizon)
		if err != nil {
			return rep, err
		}
		rep.Due[suffix] = outcome
	}
	if err := m.purgeTenants(ctx, now, &rep); err != nil {
		return rep, err
	}
	pruned, err := inBatches(pruneBatch, func() (int64, error) {
		tag, err := m.pool.Exec(ctx, pruneIdempotencyKeys, rep.Horizon, pruneBatch)
		return tag.RowsAffected(), err
	})
	rep.PrunedKeys = pruned
	if err != nil {
		return rep, fmt.Errorf("prune publish idempotency keys: %w", err)
	}
	if err := m.countOutcomes(ctx, now, &rep); err != nil {
		return rep, err
	}
	m.log(ctx, rep)
	return rep, nil
}

// countOutcomes moves the outcome deltas recorded since the last pass
// into the hourly counts, and deletes the hours older than KeptOutcomes,
// each in bounded batches.
func (m *Maintainer) countOutcomes(ctx context.Context, now time.Time, rep *Report) error {
	var err error
	rep.RolledUpOutcomes, err = inBatches(rollUpBatch, func() (moved int64, err error) {
		err = m.pool.QueryRow(ctx, rollUpOutcomes, rollUpBatch).Scan(&moved)
		return moved, err
	})
	if err != nil {
		return fmt.Errorf("count attempt outcomes per hour: %w", err)
	}
	rep.PrunedOutcomeHours, err = inBatches(pruneBatch, func() (int64, error) {
		tag, err := m.pool.Exec(ctx, pruneOutcomes, now.Add(-KeptOutcomes), pruneBatch)
		return tag.RowsAffected(), err
	})
	if err != nil {
		return fmt.Errorf("prune hourly outcome counts: %w", err)
	}
	return nil
}

// inBatches runs step, which handles at most batch rows and returns how
// many it handled, until a step handles fewer or maxPruneBatches have run
// (the rest waits for the next pass), and returns the rows handled.
func inBatches(batch int64, step func() (int64, error)) (int64, error) {
	var total int64
	for range maxPruneBatches {
		n, err := step()
		total += n
		if err != nil || n < batch {
			return total, err
		}
	}
	return total, nil
}

// reshape drops the empty sets that have not begun and were made with
// another interval, so that a changed interval applies from now on rather
// than after the partitions made ahead with the old one.
func (m *Maintainer) reshape(ctx context.Context, now time.Time, rep *Report) error {
	rows, err := m.pool.Query(ctx, selectMisshapen, now, m.interval)
	if err != nil {
		return fmt.Errorf("list history partitions of another interval: %w", err)
	}
	suffixes, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("list history partitions of another interval: %w", err)
	}
	for _, suffix := range suffixes {
		var dropped bool
		busy, err := m.locked(ctx, func(tx pgx.Tx) error {
			return tx.QueryRow(ctx, dropEmptyPartitions, suffix).Scan(&dropped)
		})
		if err != nil {
			return fmt.Errorf("remake history partitions %s: %w", suffix, err)
		}
		if dropped && !busy {
			rep.Remade = append(rep.Remade, suffix)
		}
	}
	return nil
}

// drop drops one set in a transaction of its own.
func (m *Maintainer) drop(ctx context.Context, suffix string, horizon time.Time) (Outcome, error) {
	var got string
	busy, err := m.locked(ctx, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, dropPartitions, suffix, horizon).Scan(&got)
	})
	if err != nil {
		return "", fmt.Errorf("drop history partitions %s: %w", suffix, err)
	}
	if busy {
		return Busy, nil
	}
	return Outcome(got), nil
}

// locked runs f in a transaction whose lock waits end at the lock timeout,
// and reports busy when one did (or a deadlock was broken): f's work is
// then undone, to be tried again at the next pass.
func (m *Maintainer) locked(ctx context.Context, f func(tx pgx.Tx) error) (busy bool, err error) {
	err = pgx.BeginFunc(ctx, m.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d", m.lockTimeout.Milliseconds())); err != nil {
			return err
		}
		return f(tx)
	})
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "55P03" || pgErr.Code == "40P01") { // lock_not_available, deadlock_detected
		return true, nil
	}
	return false, err
}

func (m *Maintainer) log(ctx context.Context, rep Report) {
	for _, s := range rep.Created {
		m.logger.InfoContext(ctx, "history partitions created", "suffix", s)
	}
	for s, o := range rep.Due {
		if o == Dropped {
			m.logger.InfoContext(ctx, "history partitions dropped", "suffix", s, "horizon", rep.Horizon)
			continue
		}
		m.logger.InfoContext(ctx, "history partitions past retention kept", "suffix", s, "reason", string(o), "horizon", rep.Horizon)
	}
	for tenant, p := range rep.Purged {
		if p.Messages > 0 || p.Kept > 0 || !p.Done {
			m.logger.InfoContext(ctx, "tenant history purged", "tenant", tenant, "retention", p.Retention, "horizon", p.Horizon,
				"messages", p.Messages, "deliveries", p.Deliveries, "attempts", p.Attempts, "kept_pending", p.Kept, "done", p.Done)
		}
	}
	if rep.PrunedKeys > 0 {
		m.logger.InfoContext(ctx, "publish idempotency keys pruned", "count", rep.PrunedKeys, "horizon", rep.Horizon)
	}
}
