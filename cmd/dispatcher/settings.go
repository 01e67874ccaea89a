package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald/cmd/internal/flagenv"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/dispatcher"
	"github.com/heraldhq/herald/health"
	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/retention"
	"github.com/heraldhq/herald/schedule"
)

// settings are the dispatcher's flags.
type settings struct {
	db             flagenv.Database
	ssrf           ssrf.Config
	egressProxy    string
	pprofAddr      string
	health         health.Config
	workers        int
	batchSize      int
	pollInterval   time.Duration
	drainCoalesce  time.Duration
	timeout        time.Duration
	maxInflight    int
	tenantInflight int
	headLimit      time.Duration
	rescueAfter    time.Duration
	reconcile      time.Duration
	fanOutTimeout  time.Duration
	shutdownGrace  time.Duration
	metricsAddr    string
	// partitionInterval and retention: package retention.
	partitionInterval time.Duration
	retention         time.Duration
	policy            schedule.Policy
	endpointBounds    schedule.Bounds
	logFormat         flagenv.LogFormat
	// sources and relayedGrace: split mode, package relay.
	sources       sourceURLs
	parsedSources []relay.SourceURL // by check
	relayedGrace  time.Duration
}

func (s *settings) register(fs *flagenv.FlagSet) {
	fs.DatabaseVar(&s.db, dispatcher.DefaultMaxConns)
	fs.SSRFVar(&s.ssrf)
	fs.StringVar(&s.egressProxy, "egress-proxy", "",
		"send every delivery and OAuth2 token request through this HTTP CONNECT proxy, http://[user:password@]host:port, so receivers can allow-list its addresses; the SSRF guard still checks each receiver's addresses first. Empty connects directly")
	fs.Env("egress-proxy", ssrf.EnvEgressProxy)
	fs.PprofVar(&s.pprofAddr)

	fs.DurationVar(&s.health.DisableAfter, "disable-after", health.DefaultDisableAfter,
		"disable an endpoint that has failed this long without a success; negative never disables")
	fs.Env("disable-after", "HERALD_DISABLE_AFTER")
	fs.DurationVar(&s.health.WarnAfter, "failing-warning-after", health.DefaultWarnAfter,
		"publish endpoint.failing once an endpoint has failed this long; negative never warns")
	fs.Env("failing-warning-after", "HERALD_FAILING_WARNING_AFTER")
	fs.StringVar(&s.health.OpsTenant, "ops-tenant", health.DefaultOpsTenant,
		"tenant that receives operational events (endpoint.failing, endpoint.disabled, endpoint.recovered, delivery.exhausted)")
	fs.Env("ops-tenant", "HERALD_OPS_TENANT")
	fs.DurationVar(&s.health.CertificateWarning, "certificate-warning", health.DefaultCertificateWarning,
		"publish endpoint.certificate_expiring this long before an endpoint's client certificate lapses; negative never warns")
	fs.Env("certificate-warning", "HERALD_CERTIFICATE_WARNING")

	fs.IntVar(&s.workers, "workers", dispatcher.DefaultWorkers,
		"deliveries this process sends at once; sending mostly waits on receivers, so this is large")
	fs.Env("workers", "HERALD_WORKERS")
	fs.IntVar(&s.batchSize, "batch-size", dispatcher.DefaultBatchSize,
		"messages one fan-out claim takes (see dispatcher.Config.BatchSize)")
	fs.Env("batch-size", "HERALD_BATCH_SIZE")
	fs.DurationVar(&s.pollInterval, "poll-interval", dispatcher.DefaultPollInterval,
		"how often to look for new messages when no notification arrived (see dispatcher.Config.PollInterval)")
	fs.Env("poll-interval", "HERALD_POLL_INTERVAL")
	fs.DurationVar(&s.drainCoalesce, "drain-coalesce", 0,
		"wait up to this long after a drain before draining again for a notification, so that a trickle of publishes goes out together: less CPU per delivery, up to this much more latency (see dispatcher.Config.DrainCoalesce); 0 drains at once")
	fs.Env("drain-coalesce", "HERALD_DRAIN_COALESCE")
	fs.DurationVar(&s.timeout, "timeout", delivery.DefaultTimeout,
		"time limit of one delivery attempt, from connecting to reading the response")
	fs.Env("timeout", "HERALD_DELIVERY_TIMEOUT")
	fs.IntVar(&s.maxInflight, "max-inflight-per-endpoint", delivery.DefaultMaxInflightPerEndpoint,
		"attempts to one endpoint this process runs at once; more wait without holding a worker")
	fs.Env("max-inflight-per-endpoint", "HERALD_MAX_INFLIGHT_PER_ENDPOINT")
	fs.IntVar(&s.tenantInflight, "max-inflight-per-tenant", 0,
		"attempts of one tenant this process runs at once, unless the tenant has its own (PATCH /v1/tenants/{id} limits.max_inflight); more wait without holding a worker; 0 means half of --workers")
	fs.Env("max-inflight-per-tenant", "HERALD_MAX_INFLIGHT_PER_TENANT")
	fs.DurationVar(&s.rescueAfter, "rescue-stuck-after", dispatcher.DefaultRescueStuckJobsAfter,
		"run a delivery again when its dispatcher has not finished it after this long (it died); must exceed twice the longer of --timeout and --endpoint-max-timeout")
	fs.Env("rescue-stuck-after", "HERALD_RESCUE_STUCK_AFTER")
	fs.DurationVar(&s.reconcile, "reconcile-interval", dispatcher.DefaultReconcileInterval,
		"how often one dispatcher gives a new job to pending deliveries whose job ended without settling them (discarded, cancelled)")
	fs.Env("reconcile-interval", "HERALD_RECONCILE_INTERVAL")
	fs.DurationVar(&s.fanOutTimeout, "fan-out-timeout", dispatcher.DefaultFanOutTimeout,
		"time limit of one fan-out transaction, which a dead database connection holds up (see dispatcher.RecoveryBound)")
	fs.Env("fan-out-timeout", "HERALD_FAN_OUT_TIMEOUT")
	fs.DurationVar(&s.shutdownGrace, "shutdown-grace", dispatcher.DefaultShutdownGrace,
		"on SIGTERM, how long attempts in flight may finish before they are cancelled")
	fs.Env("shutdown-grace", "HERALD_SHUTDOWN_GRACE")
	fs.StringVar(&s.metricsAddr, "metrics-addr", "",
		"address to serve this process's Prometheus metrics on, at /metrics, such as 127.0.0.1:9464; empty serves none")
	fs.Env("metrics-addr", "HERALD_METRICS_ADDR")

	fs.DurationVar(&s.policy.Base, "retry-base", schedule.DefaultBase,
		"upper bound of the first retry's random delay; each retry doubles it")
	fs.Env("retry-base", "HERALD_RETRY_BASE")
	fs.DurationVar(&s.policy.Cap, "retry-cap", schedule.DefaultCap,
		"largest upper bound of a retry's random delay")
	fs.Env("retry-cap", "HERALD_RETRY_CAP")
	fs.DurationVar(&s.policy.Window, "retry-window", schedule.DefaultWindow,
		"how long after its first attempt a delivery keeps being retried before it fails")
	fs.Env("retry-window", "HERALD_RETRY_WINDOW")
	fs.DurationVar(&s.headLimit, "ordered-head-limit", 0,
		"how long the head of an ordered endpoint's line (ordering \"object\") may keep failing, holding back its object's later versions, before it is given up as a dead letter; 0 means --retry-window (see delivery.Config.OrderedHeadLimit)")
	fs.Env("ordered-head-limit", "HERALD_ORDERED_HEAD_LIMIT")
	fs.DurationVar(&s.policy.MaxRetryAfter, "max-retry-after", schedule.DefaultMaxRetryAfter,
		"longest wait a receiver's Retry-After can impose; negative ignores Retry-After")
	fs.Env("max-retry-after", "HERALD_MAX_RETRY_AFTER")
	fs.EndpointBoundsVar(&s.endpointBounds)

	fs.DurationVar(&s.partitionInterval, "partition-interval", retention.DefaultInterval,
		"time range of each new partition of history (messages, deliveries, attempts), aligned to UTC midnight for a day; at least 1m")
	fs.Env("partition-interval", "HERALD_PARTITION_INTERVAL")
	fs.DurationVar(&s.retention, "retention", retention.DefaultRetention,
		"how long history is kept: a partition is dropped once it ended this long ago and holds nothing pending; at least --retry-window plus one --partition-interval")
	fs.Env("retention", "HERALD_RETENTION")

	fs.LogFormatVar(&s.logFormat)

	fs.Var(&s.sources, "source-database-url",
		"split mode: relay the outbox of this producer database into Herald's, as name=URL (for example billing=postgres://postgres@127.0.0.1:5432/billing); repeat for several sources, or separate them with spaces; with --migrate the producer's outbox is installed there. None: single-database mode")
	fs.Env("source-database-url", "HERALD_SOURCE_DATABASE_URLS")
	fs.DurationVar(&s.relayedGrace, "source-relayed-grace", relay.DefaultRelayedGrace,
		"split mode: how long a relayed message stays in its source's outbox before it is deleted")
	fs.Env("source-relayed-grace", "HERALD_SOURCE_RELAYED_GRACE")
}

// check reports settings out of range.
func (s *settings) check() error {
	var errs []error
	positive := []struct {
		flag  string
		value time.Duration
	}{
		{"--poll-interval", s.pollInterval}, {"--timeout", s.timeout}, {"--rescue-stuck-after", s.rescueAfter},
		{"--reconcile-interval", s.reconcile}, {"--fan-out-timeout", s.fanOutTimeout}, {"--shutdown-grace", s.shutdownGrace}, {"--retry-base", s.policy.Base},
		{"--retry-cap", s.policy.Cap}, {"--retry-window", s.policy.Window}, {"--source-relayed-grace", s.relayedGrace},
	}
	for _, p := range positive {
		if p.value <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %s", p.flag, p.value))
		}
	}
	if err := s.endpointBounds.Check(); err != nil {
		errs = append(errs, fmt.Errorf("--endpoint-*: %w", err))
	}
	if s.tenantInflight < 0 {
		errs = append(errs, fmt.Errorf("--max-inflight-per-tenant must not be negative (0 means half of --workers), got %d", s.tenantInflight))
	}
	if s.drainCoalesce < 0 || s.drainCoalesce > time.Second {
		errs = append(errs, fmt.Errorf("--drain-coalesce must be from 0 (off) to 1s, got %s", s.drainCoalesce))
	}
	if s.headLimit < 0 {
		errs = append(errs, fmt.Errorf("--ordered-head-limit must not be negative (0 means --retry-window), got %s", s.headLimit))
	}
	for _, n := range []struct {
		flag  string
		value int
	}{{"--workers", s.workers}, {"--batch-size", s.batchSize}, {"--max-inflight-per-endpoint", s.maxInflight}} {
		if n.value < 1 {
			errs = append(errs, fmt.Errorf("%s must be at least 1, got %d", n.flag, n.value))
		}
	}
	sources, err := s.sources.parse()
	errs = append(errs, err)
	s.parsedSources = sources
	if err := (retention.Config{Interval: s.partitionInterval, Retention: s.retention, RetryWindow: s.policy.Window}).Check(); err != nil {
		errs = append(errs, fmt.Errorf("--partition-interval, --retention: %w", err))
	}
	return errors.Join(errs...)
}
