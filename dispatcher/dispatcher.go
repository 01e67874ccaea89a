// Package dispatcher runs Herald's delivery pipeline in one process: a
// fan-out loop that turns committed outbox messages into deliveries and
// their River jobs, and a River client whose workers send them (package
// delivery).
//
// Any number of dispatchers may run on one database. The fan-out claims
// messages with FOR UPDATE SKIP LOCKED and inserts each (message, endpoint)
// delivery at most once (a UNIQUE pair) in the same transaction as its job
// and the message's dispatched mark, so a crash at any point either leaves
// the message to be claimed again or has done all of it. River hands each
// job to one worker at a time and rescues the jobs of a process that died.
package dispatcher

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/erasure"
	"github.com/heraldhq/herald/health"
	"github.com/heraldhq/herald/internal/jobtrace"
	"github.com/heraldhq/herald/migrations"
	"github.com/heraldhq/herald/receivercheck"
	"github.com/heraldhq/herald/replay"
	"github.com/heraldhq/herald/retention"
	"github.com/heraldhq/herald/schedule"
)

// Defaults of Config.
const (
	// DefaultWorkers is the number of deliveries a process sends at once.
	// Sending is I/O-bound: a worker mostly waits for a receiver, or for
	// the batch its load or its record shares with others. A worker costs
	// a goroutine; each endpoint still gets at most
	// delivery.DefaultMaxInflightPerEndpoint of them.
	DefaultWorkers = 500
	// DefaultBatchSize is how many messages one fan-out claim takes; a
	// fan-out transaction claims again up to FanOutLimit.
	DefaultBatchSize = 500
	// DefaultPollInterval is how often the fan-out looks for messages when
	// no notification woke it.
	DefaultPollInterval = time.Second
	// DefaultRescueStuckJobsAfter is how long a delivery job may stay
	// running before River considers its process dead and runs it again.
	DefaultRescueStuckJobsAfter = 3 * time.Minute
	// DefaultShutdownGrace is how long a stopping dispatcher lets in-flight
	// attempts finish before cancelling them.
	DefaultShutdownGrace = 30 * time.Second
	// DefaultFanOutTimeout bounds one fan-out transaction. The largest
	// (FanOutLimit deliveries: at most FanOutLimit/BatchSize claims, an
	// insert of deliveries for each and one COPY of their jobs) takes a
	// fraction of a second: the burst benchmark fans out and delivers
	// over 7,000 deliveries a second (docs/benchmarks.md). 30 s therefore
	// cuts only a transaction stuck on a dead connection or on a database
	// in trouble, and is how long a failover can hold the fan-out up.
	DefaultFanOutTimeout = 30 * time.Second
	// DefaultMaxConns is the connection pool size cmd/dispatcher gives a
	// dispatcher: its workers each hold a connection briefly per attempt,
	// and River and the fan-out hold some more. A dispatcher opens one
	// more for River's listener, and the fan-out leader one for its lock,
	// so four dispatchers and an api (api.DefaultMaxConns, and its
	// listener) open at most 4 × 15 + 1 + 33 = 94 connections: under
	// Postgres's default max_connections of 100 less the 3 it keeps for
	// superusers (harness/replicas). At 25, four dispatchers and an api
	// were refused connections there; burst runs at 12 and 25 could not
	// be told apart on this machine (docs/benchmarks.md, "Replicas and
	// wake-ups").
	DefaultMaxConns = 14
)

// FetchCooldown is the least time between two of River's job fetches. With
// River's default (100 ms) a process could start at most
// Workers/0.1 s deliveries per second however fast its receivers answer.
const FetchCooldown = 10 * time.Millisecond

// JobPollInterval is how often River looks for available delivery jobs
// when no insert notification arrived. First attempts do not wait for it:
// every fan-out transaction that inserts jobs notifies at commit
// (notifyJobsInserted). It bounds how late a job that was snoozed for a
// short while (an endpoint at its in-flight cap or rate limit, a retry due
// within seconds) starts once it is due, and a resend or replay whose
// insert notification River left out. Each poll is one fetch query per
// dispatcher: at 100 ms an idle dispatcher and its Postgres backends used
// 2.2 % of a core, most of it these fetches (pprof); at 250 ms, see
// docs/benchmarks.md ("Idle cost").
const JobPollInterval = 250 * time.Millisecond

// riverInsertChannel and riverInsertPayload are the channel River's
// producers listen on for inserted jobs and the payload River sends there
// for the delivery queue (see notifyJobsInserted).
const (
	riverInsertChannel = migrations.Schema + ".river_insert"
	riverInsertPayload = `{"queue": "` + delivery.Queue + `"}`
)

// hardStopTimeout bounds the wait for cancelled attempts to return after
// the grace period.
const hardStopTimeout = 10 * time.Second

// Config configures a Dispatcher.
type Config struct {
	// Pool holds Herald's tables and River's (schema herald). Required.
	Pool *pgxpool.Pool
	// Delivery configures the worker that sends each attempt: signing
	// secrets (required), retry policy, HTTP timeout, per-endpoint
	// in-flight cap, endpoint health, the transport (by default the SSRF
	// guard's, allowing no blocked range). Its DB and Logger default to
	// Pool and Logger; its RateLimiter keeps each endpoint's limit in the
	// database, shared by every dispatcher. Its MaxInflightPerTenant
	// defaults to half of Workers (at least 1): one tenant's hanging
	// endpoints leave the other tenants at least half the workers.
	Delivery delivery.Config
	// Workers is how many attempts this process runs at once. Defaults to
	// 500. Zero means the default.
	Workers int
	// BatchSize is how many messages one fan-out claim takes. A fan-out
	// transaction claims again up to FanOutLimit, so that a backlog's first
	// attempts to one endpoint go in full batch jobs (see FanOutLimit).
	// Defaults to 500. Zero means the default.
	BatchSize int
	// PollInterval is how often the fan-out looks for messages when no
	// publish notified it (notifications are lost while the listening
	// connection is down). River looks for jobs that became due (a
	// retry's) every JobPollInterval, or every PollInterval when that is
	// shorter. Defaults to 1 s. Zero means the default.
	PollInterval time.Duration
	// DrainCoalesce trades latency for CPU at a trickle: a notification
	// that arrives less than DrainCoalesce after the last drain waits out
	// the rest of it, so the publishes of that time are fanned out, sent
	// and recorded together rather than one transaction chain each. A
	// publish after a quiet spell is drained at once. Measured with
	// http-steady-50 (docs/benchmarks.md, "Idle cost"): at 0 a delivery
	// cost 13.2 ms of CPU (dispatcher, api and Postgres), at 50 ms 8.2 ms
	// with p50 37 ms, at 100 ms 6.4 ms with p50 60 ms. It adds up to
	// DrainCoalesce to every delivery's latency under steady traffic, so
	// it defaults to 0: drain at every notification.
	DrainCoalesce time.Duration
	// RescueStuckJobsAfter is how long a delivery job may run before River
	// runs it again, assuming its process died. It must exceed the job
	// timeout (delivery.Worker.JobTimeout). Defaults to 3 minutes. Zero
	// means the default.
	RescueStuckJobsAfter time.Duration
	// ReconcileInterval is how often the reconciler runs: one dispatcher
	// (River's leader) schedules a pass, which looks for pending deliveries
	// whose job ended without settling them (River discarded it after
	// delivery.MaxJobAttempts errors, or it was cancelled) and gives each
	// an ordinary delivery job; see DefaultReconcileInterval. It is also the
	// longest such a delivery waits. Defaults to 1 minute. Zero means the
	// default.
	ReconcileInterval time.Duration
	// FanOutTimeout bounds one fan-out transaction, from taking a
	// connection to committing; one cut short is rolled back and the next
	// claims its messages again. Defaults to 30 s (DefaultFanOutTimeout).
	// Zero means the default.
	FanOutTimeout time.Duration
	// ShutdownGrace is how long Run lets in-flight attempts finish once its
	// context is cancelled; then their requests are cancelled and River
	// runs those jobs again later. Defaults to 30 s. Zero means the
	// default.
	ShutdownGrace time.Duration
	// ClockCheckInterval is how often the dispatcher compares the clock it
	// signs with (Delivery.Now) with Postgres's, after the comparison at
	// start. Past ClockWarnSkew it logs an error; past ClockRefuseSkew its
	// delivery jobs send nothing and are deferred, charging no endpoint,
	// until the clock is right. Defaults to 1 minute. Zero means the
	// default; negative turns the check off (a simulated clock).
	ClockCheckInterval time.Duration
	// Retention configures the maintenance of history's time partitions
	// (package retention): its Pool and Logger default to Pool and Logger,
	// its RetryWindow to Delivery.Policy's window. One dispatcher at a time
	// runs a pass, every retention.Period of the interval. Defaults:
	// partitions of 1 day, kept 30 days.
	Retention retention.Config
	// Registerer receives the dispatcher's metrics: the skew of its clock
	// (herald_dispatcher_clock_skew_seconds) and the faults on Herald's
	// side that stopped deliveries (herald_dispatcher_faults_total, unless
	// Delivery.Registerer is set). Defaults to nil: nothing is exposed.
	// cmd/dispatcher serves them with --metrics-addr.
	Registerer prometheus.Registerer
	// Logger receives the dispatcher's and River's logs. Defaults to
	// slog.Default().
	Logger *slog.Logger
	// TracerProvider receives the dispatcher's spans: every fan-out
	// transaction, each traced message's part of it in its producer's trace
	// (FanOutMessageSpanName), River's jobs (otelriver, with the inserter's
	// trace context carried in job metadata) and, unless
	// Delivery.TracerProvider is set, every attempt. Defaults to nil: no
	// spans.
	TracerProvider trace.TracerProvider
}

// Dispatcher drains the outbox and delivers webhooks until its Run context
// ends.
type Dispatcher struct {
	pool          *pgxpool.Pool
	river         *river.Client[pgx.Tx]
	logger        *slog.Logger
	batchSize     int
	pollInterval  time.Duration
	drainCoalesce time.Duration
	fanOutTimeout time.Duration
	filters       *filterCache
	grace         time.Duration
	clock         *clockCheck
	tracer        trace.Tracer // nil: no spans
	worker        *delivery.Worker
	ready         chan struct{}
}

// New checks cfg and builds a Dispatcher; nothing runs until Run.
func New(cfg Config) (*Dispatcher, error) {
	if cfg.Pool == nil {
		return nil, errors.New("dispatcher: Config.Pool is nil; pass the database pool")
	}
	if cfg.Workers < 0 || cfg.BatchSize < 0 || cfg.PollInterval < 0 || cfg.DrainCoalesce < 0 || cfg.RescueStuckJobsAfter < 0 || cfg.ReconcileInterval < 0 || cfg.FanOutTimeout < 0 || cfg.ShutdownGrace < 0 {
		return nil, errors.New("dispatcher: Workers, BatchSize, PollInterval, DrainCoalesce, RescueStuckJobsAfter, ReconcileInterval, FanOutTimeout and ShutdownGrace must not be negative; zero means the default")
	}
	logger := cmp.Or(cfg.Logger, slog.Default())
	deliveryCfg := cfg.Delivery
	if deliveryCfg.DB == nil {
		deliveryCfg.DB = cfg.Pool
	}
	deliveryCfg.Logger = cmp.Or(deliveryCfg.Logger, logger)
	deliveryCfg.MaxInflightPerTenant = cmp.Or(deliveryCfg.MaxInflightPerTenant, max(1, cmp.Or(cfg.Workers, DefaultWorkers)/2))
	if deliveryCfg.TracerProvider == nil {
		deliveryCfg.TracerProvider = cfg.TracerProvider
	}
	now := deliveryCfg.Now
	if now == nil {
		now = time.Now
	}
	clock := newClockCheck(cfg.Pool, now, cmp.Or(cfg.ClockCheckInterval, DefaultClockCheckInterval), logger)
	if cfg.ClockCheckInterval >= 0 && deliveryCfg.Clock == nil {
		deliveryCfg.Clock = clock
	}
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(clock.gauge); err != nil {
			return nil, fmt.Errorf("dispatcher: register its metrics: %w", err)
		}
		if deliveryCfg.Registerer == nil {
			deliveryCfg.Registerer = cfg.Registerer
		}
	}
	worker, err := delivery.NewWorker(deliveryCfg)
	if err != nil {
		return nil, err
	}
	pollInterval := cmp.Or(cfg.PollInterval, DefaultPollInterval)
	rescueAfter := cmp.Or(cfg.RescueStuckJobsAfter, DefaultRescueStuckJobsAfter)
	if rescueAfter <= worker.JobTimeout() {
		return nil, fmt.Errorf("dispatcher: RescueStuckJobsAfter (%s) must exceed the job timeout (%s, twice the longer of the HTTP timeout and the longest endpoint timeout), or running attempts would be sent twice; raise it or lower those timeouts",
			rescueAfter, worker.JobTimeout())
	}

	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, worker); err != nil {
		return nil, fmt.Errorf("dispatcher: %w", err)
	}
	if err := river.AddWorkerSafely(workers, worker.BatchWorker()); err != nil {
		return nil, fmt.Errorf("dispatcher: %w", err)
	}
	// Replays (package replay) run on the delivery queue, so every
	// dispatcher works them.
	if err := river.AddWorkerSafely(workers, replay.NewWorker(cfg.Pool, 0, rescueAfter, logger)); err != nil {
		return nil, fmt.Errorf("dispatcher: %w", err)
	}
	// Erasures of endpoints and tenants too (package erasure).
	if err := river.AddWorkerSafely(workers, erasure.NewWorker(cfg.Pool, 0, logger)); err != nil {
		return nil, fmt.Errorf("dispatcher: %w", err)
	}
	// Receiver checks too, sent through the delivery worker's signing and
	// transport.
	if err := river.AddWorkerSafely(workers, receivercheck.NewWorker(cfg.Pool, worker, logger)); err != nil {
		return nil, fmt.Errorf("dispatcher: %w", err)
	}
	// The reconciler runs there too; River's leader schedules it.
	reconcile := &reconciler{pool: cfg.Pool, logger: logger, timeout: worker.JobTimeout()}
	if err := river.AddWorkerSafely(workers, reconcile); err != nil {
		return nil, fmt.Errorf("dispatcher: %w", err)
	}
	// The certificate check too, through the delivery worker's health
	// tracker when it is one (its ops tenant and warning period).
	warner, ok := deliveryCfg.Health.(certificateWarner)
	if !ok {
		warner = health.New(health.Config{Logger: logger})
	}
	if err := river.AddWorkerSafely(workers, &certificateCheck{pool: cfg.Pool, warner: warner, logger: logger}); err != nil {
		return nil, fmt.Errorf("dispatcher: %w", err)
	}
	retentionCfg := cfg.Retention
	if retentionCfg.Pool == nil {
		retentionCfg.Pool = cfg.Pool
	}
	retentionCfg.Logger = cmp.Or(retentionCfg.Logger, logger)
	if retentionCfg.RetryWindow == 0 {
		retentionCfg.RetryWindow = schedule.DefaultWindow
		if w := deliveryCfg.Policy.Window; w > 0 {
			retentionCfg.RetryWindow = w
		}
	}
	maintainer, err := retention.New(retentionCfg)
	if err != nil {
		return nil, fmt.Errorf("dispatcher: %w", err)
	}
	if err := river.AddWorkerSafely(workers, retention.NewWorker(maintainer)); err != nil {
		return nil, fmt.Errorf("dispatcher: %w", err)
	}
	periodic := []*river.PeriodicJob{river.NewPeriodicJob(
		river.PeriodicInterval(cmp.Or(cfg.ReconcileInterval, DefaultReconcileInterval)),
		func() (river.JobArgs, *river.InsertOpts) { return reconcileArgs{}, nil },
		&river.PeriodicJobOpts{RunOnStart: true},
	), retention.PeriodicJob(maintainer, delivery.Queue), certificatePeriodicJob()}
	var tracer trace.Tracer
	if cfg.TracerProvider != nil {
		tracer = cfg.TracerProvider.Tracer(TracerName)
	}
	client, err := river.NewClient(riverpgxv5.New(cfg.Pool), &river.Config{
		Schema:               migrations.Schema,
		Queues:               map[string]river.QueueConfig{delivery.Queue: {MaxWorkers: cmp.Or(cfg.Workers, DefaultWorkers)}},
		Workers:              workers,
		JobTimeout:           worker.JobTimeout(),
		RescueStuckJobsAfter: rescueAfter,
		MaxAttempts:          delivery.MaxJobAttempts,
		RetryPolicy:          delivery.JobRetryPolicy{},
		PeriodicJobs:         periodic,
		FetchCooldown:        FetchCooldown,
		FetchPollInterval:    max(min(pollInterval, JobPollInterval), FetchCooldown),
		Logger:               logger,
		Middleware:           jobtrace.Middleware(cfg.TracerProvider),
	})
	if err != nil {
		return nil, fmt.Errorf("dispatcher: River client: %w", err)
	}
	return &Dispatcher{
		pool:          cfg.Pool,
		river:         client,
		logger:        logger,
		batchSize:     cmp.Or(cfg.BatchSize, DefaultBatchSize),
		pollInterval:  pollInterval,
		drainCoalesce: cfg.DrainCoalesce,
		fanOutTimeout: cmp.Or(cfg.FanOutTimeout, DefaultFanOutTimeout),
		filters:       newFilterCache(logger),
		grace:         cmp.Or(cfg.ShutdownGrace, DefaultShutdownGrace),
		clock:         clock,
		tracer:        tracer,
		worker:        worker,
		ready:         make(chan struct{}),
	}, nil
}

// Run fans out and delivers until ctx is cancelled, then stops: it claims
// no more messages and starts no more attempts, lets the running ones
// finish for up to ShutdownGrace, cancels the rest (River runs those jobs
// again later, here or in another dispatcher) and returns. It returns nil
// after a clean stop.
func (d *Dispatcher) Run(ctx context.Context) error {
	// Before anything is signed.
	d.clock.check(ctx)
	d.warmConnections(ctx)
	// River stops when told to, not when ctx ends, so that stopping can
	// be graceful.
	if err := d.river.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("start River: %w", err)
	}
	checking := make(chan struct{})
	go func() {
		defer close(checking)
		d.clock.run(ctx)
	}()
	close(d.ready)
	d.logger.InfoContext(ctx, "dispatcher started")
	d.fanOutLoop(ctx)
	err := d.stop()
	<-checking
	return err
}

// Ready is closed once Run has warmed the pool's connections and started
// River: from then on the dispatcher takes jobs, and leads the fan-out or
// waits to (cmd/dispatcher serves it at /readyz).
func (d *Dispatcher) Ready() <-chan struct{} {
	return d.ready
}

func (d *Dispatcher) stop() error {
	d.logger.Info("dispatcher stopping; letting in-flight attempts finish", "grace", d.grace)
	graceCtx, cancel := context.WithTimeout(context.Background(), d.grace)
	defer cancel()
	err := d.river.Stop(graceCtx)
	if errors.Is(err, context.DeadlineExceeded) {
		d.logger.Warn("grace period over; cancelling the attempts still running, they will be retried")
		hardCtx, cancel := context.WithTimeout(context.Background(), hardStopTimeout)
		defer cancel()
		err = d.river.StopAndCancel(hardCtx)
	}
	if err != nil {
		return fmt.Errorf("stop River: %w", err)
	}
	d.logger.Info("dispatcher stopped")
	return nil
}
