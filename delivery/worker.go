package delivery

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/health"
	"github.com/heraldhq/herald/internal/batcher"
	"github.com/heraldhq/herald/internal/deliverystatus"
	"github.com/heraldhq/herald/internal/ratelimit"
	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/internal/version"
	"github.com/heraldhq/herald/schedule"
	"github.com/heraldhq/herald/signing"
)

// Defaults of Config.
const (
	// DefaultTimeout bounds one HTTP attempt, from connecting to reading the
	// response.
	DefaultTimeout = 15 * time.Second
	// DefaultMaxInflightPerEndpoint is how many attempts to one endpoint a
	// process runs at once.
	DefaultMaxInflightPerEndpoint = 10
	// DefaultMaxInflightPerTenant is how many attempts of one tenant a
	// process runs at once: half of dispatcher.DefaultWorkers. The
	// dispatcher passes half its own Workers instead.
	DefaultMaxInflightPerTenant = 250
	// DefaultMaxBusySnooze bounds the delay before a job held back by its
	// endpoint's in-flight cap tries again.
	DefaultMaxBusySnooze = 5 * time.Second
)

// DB is what the worker needs of Postgres; a *pgxpool.Pool is one.
type DB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// SecretSource returns the secrets an endpoint's messages are signed with at
// a given time: every active one, so that receivers verify during a
// rotation with either the old or the new secret. An error or no secret at
// all is Herald's fault, not the endpoint's (a Fault, FaultSecrets): the
// attempt sends nothing, is not charged and is tried again soon.
type SecretSource interface {
	ActiveSecrets(ctx context.Context, endpointID uuid.UUID, now time.Time) ([]signing.Secret, error)
}

// Health is told the result of every attempt, inside the transaction that
// records it, so an endpoint's health changes exactly when its attempts are
// recorded. *health.Tracker implements it: it keeps the endpoint's failing
// spell, disables endpoints that fail too long or answer 410, and publishes
// operational events.
type Health interface {
	// Succeeded ends the endpoint's failing spell.
	Succeeded(ctx context.Context, tx pgx.Tx, endpointID uuid.UUID, at time.Time) error
	// Failed counts a failure, unreachable when no answer came (it timed
	// out or could not connect: see health.BreakerThreshold); disabled
	// reports that it disabled the endpoint, cancelling its pending
	// deliveries.
	Failed(ctx context.Context, tx pgx.Tx, endpointID uuid.UUID, at time.Time, problem string, unreachable bool) (disabled bool, err error)
	// Disable disables the endpoint at once and cancels its pending
	// deliveries.
	Disable(ctx context.Context, tx pgx.Tx, endpointID uuid.UUID, reason string, at time.Time) (disabled bool, err error)
	// Exhausted reports a delivery whose retry window is spent.
	Exhausted(ctx context.Context, tx pgx.Tx, deliveryID uuid.UUID) error
}

// RateLimiter holds deliveries to their endpoint's messages-per-second
// limit. Admit returns nil when the delivery may be sent now, or the
// river.JobSnooze error that puts its job to sleep until it should ask
// again. *ratelimit.Limiter implements it.
type RateLimiter interface {
	Admit(ctx context.Context, endpointID uuid.UUID, perSecond float64) error
}

// ClockGuard says whether this process's clock is fit to sign with:
// receivers reject a webhook-timestamp more than a few minutes from their
// own clock. The dispatcher implements it by comparing its clock with
// Postgres's.
type ClockGuard interface {
	// ClockFault returns nil while the clock may sign, and otherwise why
	// it may not ("ahead of Postgres's by 10m0s").
	ClockFault() error
}

// Config configures a Worker.
type Config struct {
	// DB holds Herald's tables. Required.
	DB DB
	// Secrets gives the signing secrets of an endpoint. Required.
	Secrets SecretSource
	// Credentials gives the authentication and mutual TLS of endpoints
	// that have any (see package endpointauth). Defaults to Secrets when it
	// implements CredentialSource, as *store.Store does; without one, an
	// attempt to an endpoint with credentials is a Fault
	// (FaultCredentials).
	Credentials CredentialSource
	// Policy decides when failed attempts are retried and when a delivery
	// is exhausted. The zero Policy is schedule.Default().
	Policy schedule.Policy
	// Timeout bounds one HTTP attempt to an endpoint without a timeout of
	// its own. Defaults to 15 s. Zero means the default.
	Timeout time.Duration
	// EndpointBounds clamp the timeouts and retry policies endpoints chose
	// (schedule.Bounds, whose zero value means its defaults: timeouts up
	// to 60 s). The job timeout covers the longest timeout they allow.
	EndpointBounds schedule.Bounds
	// Headers reads endpoints' custom headers. Defaults to Secrets when it
	// implements HeaderSource, as *store.Store does; without one, an
	// attempt to an endpoint with custom headers sends nothing (a
	// FaultSecrets fault).
	Headers HeaderSource
	// MaxInflightPerEndpoint caps the attempts to one endpoint running at
	// once in this process; a job over the cap waits at most BusyPatience,
	// then snoozes, so a slow endpoint never holds more than this many
	// workers. Defaults to 10. Zero means the default.
	MaxInflightPerEndpoint int
	// MaxInflightPerTenant caps the attempts to the endpoints of one
	// tenant running at once in this process, unless the tenant has a cap
	// of its own (tenants.max_inflight, set with PATCH /v1/tenants/{id});
	// a job over it waits and snoozes as over MaxInflightPerEndpoint, so
	// one tenant's hanging endpoints never hold more than this many
	// workers. Within it, the tenant's endpoints whose latest attempt got
	// no answer share half of it, and, while one of its endpoints answers,
	// those that do not (not tried yet, or unanswered) three quarters, so
	// that its answering endpoints keep a quarter however many of the
	// others hang (see tenantCaps). Defaults to 250 (the dispatcher passes
	// half its workers). Zero means the default.
	MaxInflightPerTenant int
	// MaxBusySnooze bounds the delay after which a job held back by the
	// cap tries again: a job not held back before waits up to BusyPatience
	// in the process for a slot, then snoozes, first about FirstBusySnooze,
	// twice that each time in a row, at most MaxBusySnooze (see
	// FirstBusySnooze). Defaults to 5 s. Zero means the default.
	MaxBusySnooze time.Duration
	// Transport sends the requests. Defaults to the SSRF guard's transport
	// with nothing allowed beyond public addresses (ssrf.New().Transport():
	// blocked ranges refused at dial time, HTTP_PROXY ignored), keeping up
	// to MaxInflightPerEndpoint idle connections per host; pass a guard's
	// transport with an allow-list to reach, say, receivers on loopback.
	// Redirects are never followed, whatever the transport. An endpoint
	// with mutual TLS settings is sent to through a clone of Transport
	// with its certificate and CA bundle, kept while its credentials are
	// unchanged; that needs Transport to be an *http.Transport. OAuth2
	// token requests go through the endpoint's transport too.
	Transport http.RoundTripper
	// UserAgent is sent on every request. Defaults to "Herald/<version>".
	UserAgent string
	// Health is told the result of every attempt in the transaction that
	// records it. Defaults to a health.Tracker with health's defaults
	// (disable after 5 days of failures, warn after 24 h, operational
	// events to the tenant "herald-ops").
	Health Health
	// RateLimiter holds deliveries to their endpoint's rate limit.
	// Defaults to a ratelimit.Limiter on DB, whose limits every worker on
	// the same database shares.
	RateLimiter RateLimiter
	// OrderedHeadLimit bounds how long the head of a line of an ordered
	// endpoint (ordering "object") keeps being retried while the versions
	// behind it wait: from its first attempt, as the retry window is, after
	// which it is given up (failed, exhausted, with the operational event
	// of an exhausted delivery) and the next version proceeds. Defaults to
	// the Policy's window; zero means the default, and a limit longer than
	// the window is the window.
	OrderedHeadLimit time.Duration
	// Now is the clock attempts are timed, signed and recorded by.
	// Defaults to time.Now; tests move it to let days pass.
	Now func() time.Time
	// Clock, when set, is asked before every job whether Now may sign;
	// while it may not, jobs send nothing and are deferred (FaultClock),
	// charging nothing to their endpoints. Defaults to nil: Now is trusted.
	// The dispatcher sets it to its comparison with Postgres's clock.
	Clock ClockGuard
	// Registerer receives the worker's metrics: herald_dispatcher_faults_total
	// (see Fault), herald_attempts_total, herald_attempt_duration_seconds
	// and herald_endpoint_breakers_open (see attemptMetrics). Defaults to nil: they are kept but not exposed.
	Registerer prometheus.Registerer
	// Logger receives the worker's logs. Defaults to slog.Default().
	Logger *slog.Logger
	// TracerProvider receives a span per recorded attempt, in the trace of
	// the span that published its message (see traceAttempt). Defaults to
	// nil: no spans.
	TracerProvider trace.TracerProvider
}

// The round trips workers share (package internal/batcher): loading
// deliveries and recording successes.
const (
	// maxRoundTrip is the most requests one shared round trip carries.
	// Workers waiting for their successes to be recorded hold their
	// deliveries: in the burst benchmark, at 128 per round trip the queue
	// of batch jobs waiting to record took the dispatcher to 240 MB, at 512
	// to about 100 MB, and the drain was faster (docs/benchmarks.md).
	maxRoundTrip = 512
	// roundTripFlushers is how many round trips of one kind may run at
	// once. One gives the largest batches: in the steady benchmark four
	// cost 15% more CPU per delivery than one, for no gain in throughput.
	roundTripFlushers = 1
	// roundTripTimeout bounds one shared round trip. It is detached from
	// the callers' contexts: one job being cancelled must not fail the
	// others' batch.
	roundTripTimeout = 30 * time.Second
)

// roundTrips configures the batchers of a Worker.
var roundTrips = batcher.Config{MaxBatch: maxRoundTrip, Flushers: roundTripFlushers, Timeout: roundTripTimeout}

// Worker is the River worker of Args: one call of Work makes at most one
// attempt of one delivery and records it.
type Worker struct {
	river.WorkerDefaults[Args]

	db        DB
	secrets   *secretCache
	endpoints *endpointClients
	policy    schedule.Policy
	// headLimit bounds the retry window of the heads of ordered lines
	// (Config.OrderedHeadLimit); zero: none.
	headLimit     time.Duration
	timeout       time.Duration
	bounds        schedule.Bounds
	headers       HeaderSource
	maxBusySnooze time.Duration
	client        *http.Client
	userAgent     string
	logger        *slog.Logger
	inflight      *inflight
	health        Health
	rateLimiter   RateLimiter
	now           func() time.Time
	clock         ClockGuard
	faults        *prometheus.CounterVec
	metrics       *attemptMetrics
	faultLog      faultLog
	loads         *batcher.Batcher[uuid.UUID, *loaded]
	successes     *batcher.Batcher[recording, applied]
	tracer        trace.Tracer // nil: no spans
}

// NewWorker checks cfg and returns a Worker.
func NewWorker(cfg Config) (*Worker, error) {
	if cfg.DB == nil {
		return nil, errors.New("delivery worker: Config.DB is nil; pass the database pool")
	}
	if cfg.Secrets == nil {
		return nil, errors.New("delivery worker: Config.Secrets is nil; pass the endpoint store")
	}
	if cfg.Timeout < 0 || cfg.MaxInflightPerEndpoint < 0 || cfg.MaxInflightPerTenant < 0 || cfg.MaxBusySnooze < 0 || cfg.OrderedHeadLimit < 0 {
		return nil, fmt.Errorf("delivery worker: Timeout (%s), MaxInflightPerEndpoint (%d), MaxInflightPerTenant (%d), MaxBusySnooze (%s) and OrderedHeadLimit (%s) must not be negative; zero means the default",
			cfg.Timeout, cfg.MaxInflightPerEndpoint, cfg.MaxInflightPerTenant, cfg.MaxBusySnooze, cfg.OrderedHeadLimit)
	}
	if err := cfg.EndpointBounds.Check(); err != nil {
		return nil, fmt.Errorf("delivery worker: Config.EndpointBounds: %w", err)
	}
	headers := cfg.Headers
	if headers == nil {
		headers, _ = cfg.Secrets.(HeaderSource)
	}
	faults, err := newFaultCounter(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("delivery worker: register its metric: %w", err)
	}
	metrics, err := newAttemptMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("delivery worker: register its metrics: %w", err)
	}
	maxInflight := cmp.Or(cfg.MaxInflightPerEndpoint, DefaultMaxInflightPerEndpoint)
	transport := cfg.Transport
	if transport == nil {
		t := ssrf.New().Transport()
		t.MaxIdleConnsPerHost = maxInflight
		transport = t
	}
	w := &Worker{
		db:            cfg.DB,
		secrets:       newSecretCache(cfg.Secrets),
		policy:        cfg.Policy,
		headLimit:     cfg.OrderedHeadLimit,
		timeout:       cmp.Or(cfg.Timeout, DefaultTimeout),
		bounds:        cfg.EndpointBounds.WithDefaults(),
		headers:       headers,
		maxBusySnooze: cmp.Or(cfg.MaxBusySnooze, DefaultMaxBusySnooze),
		client: &http.Client{
			Transport: transport,
			// A 3xx is an answer, and a failure: the endpoint's URL is what
			// its owner registered, and following a redirect would send
			// signed payloads to an address nobody registered.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		userAgent:   cfg.UserAgent,
		logger:      cmp.Or(cfg.Logger, slog.Default()),
		inflight:    newInflight(maxInflight, cmp.Or(cfg.MaxInflightPerTenant, DefaultMaxInflightPerTenant), metrics.breakersOpen),
		health:      cfg.Health,
		rateLimiter: cfg.RateLimiter,
		now:         cfg.Now,
		clock:       cfg.Clock,
		faults:      faults,
		metrics:     metrics,
	}
	if w.now == nil {
		w.now = time.Now
	}
	credentials := cfg.Credentials
	if credentials == nil {
		credentials, _ = cfg.Secrets.(CredentialSource)
	}
	w.endpoints = newEndpointClients(credentials, w.client)
	if cfg.TracerProvider != nil {
		w.tracer = cfg.TracerProvider.Tracer(TracerName)
	}
	if w.userAgent == "" {
		w.userAgent = "Herald/" + version.String()
	}
	if w.health == nil {
		w.health = health.New(health.Config{Logger: w.logger})
	}
	if w.rateLimiter == nil {
		w.rateLimiter = ratelimit.New(w.db, ratelimit.Config{})
	}
	w.loads = batcher.New(roundTrips, w.loadMany)
	w.successes = batcher.New(roundTrips, w.apply)
	return w, nil
}

// JobTimeout is how long River lets one job run: twice the longest HTTP
// timeout an attempt may have (the worker's, or the longest an endpoint
// may choose, EndpointBounds.MaxTimeout), which leaves as long again to
// load the delivery and record the attempt.
func (w *Worker) JobTimeout() time.Duration {
	return 2 * max(w.timeout, w.bounds.MaxTimeout)
}

// Timeout implements river.Worker; it returns JobTimeout.
func (w *Worker) Timeout(*river.Job[Args]) time.Duration {
	return w.JobTimeout()
}

// Work makes one attempt of the job's delivery, unless there is nothing to
// do: the delivery is gone, was requeued since the job was inserted (its
// generation is not the job's: the requeue's job works it), is no longer
// pending, its endpoint is disabled (the delivery is cancelled), or its
// retry is not due yet. After a failed attempt the job snoozes until the
// retry; River does not count a snooze as a job attempt. After a fault on
// Herald's side (a Fault) it records nothing and snoozes for a deferral.
//
// An attempt goes: a clock fit to sign (clockFault), room at the endpoint
// (checkRoom), the delivery (load), a slot for the request (takeSlots),
// the request (send), and its outcome decided and recorded (record).
func (w *Worker) Work(ctx context.Context, job *river.Job[Args]) (err error) {
	defer func() { w.jobFailed(ctx, err, "delivery", job.Args.DeliveryID, "endpoint", job.Args.EndpointID) }()
	trigger, err := job.Args.check()
	if err != nil {
		return river.JobCancel(err)
	}
	if fault := w.clockFault(); fault != nil {
		return w.deferJob(ctx, job.JobRow, fault, "delivery", job.Args.DeliveryID, "endpoint", job.Args.EndpointID)
	}
	if err := w.checkRoom(ctx, job.JobRow, job.Args.EndpointID); err != nil {
		return err
	}
	d, err := w.load(ctx, job.Args.DeliveryID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // deleted together with its endpoint or tenant
	}
	if err != nil {
		return err
	}
	w.inflight.learn(d.endpointID, d.tenantID, d.tenantMaxInflight, d.unanswered)
	if d.generation != job.Args.Generation || d.status != deliverystatus.Pending {
		return nil
	}
	if !job.Args.Alone {
		if err := w.checkAlone(ctx, job.JobRow, d); err != nil {
			return err
		}
	}
	now := w.now()
	if !d.endpointEnabled && d.ordered {
		return w.park(ctx, jobsFrom(ctx), d)
	}
	if !d.endpointEnabled {
		if _, err := w.db.Exec(ctx, cancelDelivery, d.id, now, d.generation); err != nil {
			return fmt.Errorf("cancel delivery %s of disabled endpoint: %w", d.id, err)
		}
		return nil
	}
	// A job rescued after its process died between recording a failed
	// attempt and snoozing wakes early; the delivery row knows the retry.
	if trigger == TriggerScheduled && d.nextAttemptAt.After(now) {
		return river.JobSnooze(d.nextAttemptAt.Sub(now))
	}
	if d.ordered {
		switch gateOf(d) {
		case gateBehind:
			return nil // its line's head is another; it gets a job when its turn comes
		case gateWait:
			return river.JobSnooze(OrderedWaitSnooze)
		}
	}

	release, _, waited, err := w.takeSlots(ctx, job.JobRow, d, 1)
	if err != nil {
		return err
	}
	defer release()
	if waited {
		if still, err := w.stillQueued(ctx, []loaded{d}, d.generation); err != nil || len(still) == 0 {
			return err // requeued or settled while the job waited: not its own any more
		}
	}
	if err := w.rateLimiter.Admit(ctx, d.endpointID, d.rateLimit); err != nil {
		return err
	}

	a := w.send(ctx, d)
	release()
	if err := ctx.Err(); err != nil {
		// The process is stopping: River runs the job again, here or in
		// another dispatcher, and the receiver dedupes on webhook-id.
		return fmt.Errorf("delivery %s interrupted: %w", d.id, err)
	}
	if fault := a.result.fault(); fault != nil {
		return w.deferJob(ctx, job.JobRow, fault, "delivery", d.id, "endpoint", d.endpointID)
	}
	if err := clearDeferrals(ctx, job.JobRow); err != nil {
		return err
	}

	next, err := w.record(ctx, recording{d: d, trigger: trigger, a: a, jobs: jobsFrom(ctx)})
	if err != nil {
		return err
	}
	if !next[0].IsZero() {
		return river.JobSnooze(max(next[0].Sub(w.now()), 0))
	}
	return nil
}

// clockFault returns the Fault that stops every job while w's Clock says
// Now may not sign, nil otherwise.
func (w *Worker) clockFault() *Fault {
	if w.clock == nil {
		return nil
	}
	if err := w.clock.ClockFault(); err != nil {
		return &Fault{Cause: FaultClock, Err: fmt.Errorf("not sent, this process's clock cannot sign: %w", err)}
	}
	return nil
}
