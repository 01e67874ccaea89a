// Package relay moves messages from producers' databases into Herald's in
// split mode. A producer's database holds only the outbox (package
// migrations/producer); the dispatcher runs a Relay that, for each source,
// repeats one step:
//
//  1. on the source, claim a batch of unrelayed messages, oldest id first,
//     FOR UPDATE SKIP LOCKED (so several dispatchers share a source);
//  2. in Herald's database, insert them into herald.messages keyed by
//     their id, ON CONFLICT DO NOTHING, wake the fan-out, and commit;
//  3. on the source, mark them relayed, and commit.
//
// Step 3 runs in the background (step.go): the next step claims on
// another connection while the mark commits, so a batch no longer waits
// for the previous batch's source commit, only for its Herald commit.
// The marking transaction keeps the claimed rows locked until they are
// marked, so no claim takes them meanwhile; at most one mark per source
// is committing at a time.
//
// A crash between the two commits leaves the batch unmarked on the
// source: the next step claims it again and step 2 inserts nothing twice.
// A crash before Herald's commit leaves nothing in Herald. So every
// message committed on a source reaches Herald exactly once, and the
// fan-out then treats it as it treats a message published in Herald's
// database.
//
// A message for a tenant Herald does not have, or is erasing, is refused:
// it stays on the source with herald.outbox.refused saying why (logged at
// error level), is never claimed again, and is not deleted by retention.
//
// The relay drains a source when its publishes notify (outbox.NotifyChannel
// on the source), once more outbox.NotifyWindow later, and every
// PollInterval otherwise. Each source also gets its retention
// (source_retention.go): relayed messages are deleted after RelayedGrace,
// idempotency keys at Herald's retention horizon; object versions stay.
package relay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Defaults of Config.
const (
	// DefaultBatchSize is how many messages one relay step claims.
	DefaultBatchSize = 500
	// DefaultPollInterval is how often a source is drained when none of
	// its publishes notified.
	DefaultPollInterval = time.Second
	// DefaultRelayedGrace is how long a relayed message stays on its
	// source before the source's retention deletes it: long enough to
	// look at what was just relayed, short enough that the producer's
	// database holds little more than what waits.
	DefaultRelayedGrace = 10 * time.Minute
	// DefaultStepTimeout bounds one relay step, both transactions
	// included; as the fan-out's, it cuts only a step stuck on a dead
	// connection.
	DefaultStepTimeout = 30 * time.Second
	// SourceMaxConns is the pool size a source needs: a relay step's
	// transaction, the previous step's while its mark commits, and the
	// retention's. The relay's LISTEN has a connection of its own
	// besides.
	SourceMaxConns = 3
)

// SourceQueryExecMode is how a source's pool must run statements: each
// planned for its arguments and the outbox as it is at that moment. An
// outbox swings between empty and a backlog (Herald down for an hour)
// faster than ANALYZE follows it, and pgx's default mode, which prepares
// each statement once per connection, lets Postgres keep one generic plan
// for it after five runs: a plan made while the outbox held a few hundred
// rows scans it whole once it holds a backlog. In a split bench run that
// plan made the claim and the mark take 12 to 14 ms a step after a
// minute, and the end-to-end latency climbed with them.
const SourceQueryExecMode = pgx.QueryExecModeCacheDescribe

// Source is one producer database, opened.
type Source struct {
	// Name identifies the source (ValidateSourceName); it is stored on
	// every message relayed from it, in herald.messages.source.
	Name string
	// Pool is the producer's database, with the producer's outbox
	// installed (producer.Apply), running statements in
	// SourceQueryExecMode (default_query_exec_mode=cache_describe in its
	// URL, or the pool config's ConnConfig.DefaultQueryExecMode).
	// SourceMaxConns connections suffice.
	Pool *pgxpool.Pool
}

// Config configures a Relay.
type Config struct {
	// Pool is Herald's database. Required.
	Pool *pgxpool.Pool
	// Sources are the producer databases to relay from, each with its own
	// name. At least one is required.
	Sources []Source
	// BatchSize is how many messages one step claims. Defaults to
	// DefaultBatchSize (500). Zero means the default.
	BatchSize int
	// PollInterval is how often a source is drained without a
	// notification. Defaults to DefaultPollInterval (1 s). Zero means the
	// default.
	PollInterval time.Duration
	// RelayedGrace is how long a relayed message stays on its source.
	// Defaults to DefaultRelayedGrace (10 min). Zero means the default.
	RelayedGrace time.Duration
	// StepTimeout bounds one relay step. Defaults to DefaultStepTimeout
	// (30 s). Zero means the default.
	StepTimeout time.Duration
	// Logger receives the relay's logs. Defaults to slog.Default().
	Logger *slog.Logger

	// afterHeraldCommit, when set, runs after Herald's commit and before
	// the source's mark, in the goroutine that marks; an error abandons
	// the mark there, as a crash would. Tests set it (export_test.go).
	afterHeraldCommit func(source string, ids []uuid.UUID) error
}

// Relay relays every source's outbox into Herald's database until its Run
// context ends.
type Relay struct {
	pool              *pgxpool.Pool
	sources           []Source
	batchSize         int
	pollInterval      time.Duration
	relayedGrace      time.Duration
	stepTimeout       time.Duration
	logger            *slog.Logger
	afterHeraldCommit func(source string, ids []uuid.UUID) error
}

// New checks cfg and builds a Relay; nothing runs until Run.
func New(cfg Config) (*Relay, error) {
	if cfg.Pool == nil {
		return nil, errors.New("relay: Config.Pool is nil; pass Herald's database pool")
	}
	if len(cfg.Sources) == 0 {
		return nil, errors.New("relay: Config.Sources is empty; name at least one producer database (--source-database-url name=URL)")
	}
	if cfg.BatchSize < 0 || cfg.PollInterval < 0 || cfg.RelayedGrace < 0 || cfg.StepTimeout < 0 {
		return nil, errors.New("relay: BatchSize, PollInterval, RelayedGrace and StepTimeout must not be negative; zero means the default")
	}
	seen := map[string]bool{}
	for _, s := range cfg.Sources {
		if err := ValidateSourceName(s.Name); err != nil {
			return nil, fmt.Errorf("relay: %w", err)
		}
		if seen[s.Name] {
			return nil, fmt.Errorf("relay: two sources are named %s; give each --source-database-url a name of its own", s.Name)
		}
		seen[s.Name] = true
		if s.Pool == nil {
			return nil, fmt.Errorf("relay: source %s has no pool", s.Name)
		}
		if s.Pool.Config().ConnConfig.DefaultQueryExecMode == pgx.QueryExecModeCacheStatement {
			return nil, fmt.Errorf("relay: source %s's pool prepares each statement once (cache_statement, pgx's default), so Postgres may keep a plan made while the outbox was small; open it with default_query_exec_mode=cache_describe in its URL or ConnConfig.DefaultQueryExecMode = relay.SourceQueryExecMode", s.Name)
		}
	}
	return &Relay{
		pool:              cfg.Pool,
		sources:           cfg.Sources,
		batchSize:         cmp.Or(cfg.BatchSize, DefaultBatchSize),
		pollInterval:      cmp.Or(cfg.PollInterval, DefaultPollInterval),
		relayedGrace:      cmp.Or(cfg.RelayedGrace, DefaultRelayedGrace),
		stepTimeout:       cmp.Or(cfg.StepTimeout, DefaultStepTimeout),
		logger:            cmp.Or(cfg.Logger, slog.Default()),
		afterHeraldCommit: cfg.afterHeraldCommit,
	}, nil
}

// Run relays from every source until ctx ends, then returns nil. A source
// that fails (unreachable, a step that errs) is logged and tried again; it
// never stops the others.
func (r *Relay) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, s := range r.sources {
		wg.Go(func() { r.runSource(ctx, s) })
	}
	r.logger.InfoContext(ctx, "relay started", "sources", len(r.sources))
	wg.Wait()
	return nil
}
