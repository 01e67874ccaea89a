package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/dispatcher"
	"github.com/heraldhq/herald/health"
	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/schedule"
)

// settings are the dispatcher's flags.
type settings struct {
	db            config.Database
	ssrf          ssrf.Config
	health        health.Config
	workers       int
	batchSize     int
	pollInterval  time.Duration
	timeout       time.Duration
	maxInflight   int
	rescueAfter   time.Duration
	shutdownGrace time.Duration
	policy        schedule.Policy
	logFormat     string

	env envReader
}

func (s *settings) register(fs *flag.FlagSet) {
	s.db.MaxConns = dispatcher.DefaultMaxConns
	s.db.Register(fs)
	s.ssrf.Register(fs)
	s.health.Register(fs)
	e := &s.env
	fs.IntVar(&s.workers, "workers", e.int("HERALD_WORKERS", dispatcher.DefaultWorkers),
		"deliveries this process sends at once; sending mostly waits on receivers, so this is large (env HERALD_WORKERS)")
	fs.IntVar(&s.batchSize, "batch-size", e.int("HERALD_BATCH_SIZE", dispatcher.DefaultBatchSize),
		"messages one fan-out claim takes; a fan-out transaction claims again until it has claimed 5,000 messages or made 5,000 deliveries, or the outbox is empty (env HERALD_BATCH_SIZE)")
	fs.DurationVar(&s.pollInterval, "poll-interval", e.duration("HERALD_POLL_INTERVAL", dispatcher.DefaultPollInterval),
		"how often to look for new messages when no notification arrived; due delivery jobs are looked for every 100 ms, or this often if shorter (env HERALD_POLL_INTERVAL)")
	fs.DurationVar(&s.timeout, "timeout", e.duration("HERALD_DELIVERY_TIMEOUT", delivery.DefaultTimeout),
		"time limit of one delivery attempt, from connecting to reading the response (env HERALD_DELIVERY_TIMEOUT)")
	fs.IntVar(&s.maxInflight, "max-inflight-per-endpoint", e.int("HERALD_MAX_INFLIGHT_PER_ENDPOINT", delivery.DefaultMaxInflightPerEndpoint),
		"attempts to one endpoint this process runs at once; more wait without holding a worker (env HERALD_MAX_INFLIGHT_PER_ENDPOINT)")
	fs.DurationVar(&s.rescueAfter, "rescue-stuck-after", e.duration("HERALD_RESCUE_STUCK_AFTER", dispatcher.DefaultRescueStuckJobsAfter),
		"run a delivery again when its dispatcher has not finished it after this long (it died); must exceed twice --timeout (env HERALD_RESCUE_STUCK_AFTER)")
	fs.DurationVar(&s.shutdownGrace, "shutdown-grace", e.duration("HERALD_SHUTDOWN_GRACE", dispatcher.DefaultShutdownGrace),
		"on SIGTERM, how long attempts in flight may finish before they are cancelled (env HERALD_SHUTDOWN_GRACE)")
	fs.DurationVar(&s.policy.Base, "retry-base", e.duration("HERALD_RETRY_BASE", schedule.DefaultBase),
		"upper bound of the first retry's random delay; each retry doubles it (env HERALD_RETRY_BASE)")
	fs.DurationVar(&s.policy.Cap, "retry-cap", e.duration("HERALD_RETRY_CAP", schedule.DefaultCap),
		"largest upper bound of a retry's random delay (env HERALD_RETRY_CAP)")
	fs.DurationVar(&s.policy.Window, "retry-window", e.duration("HERALD_RETRY_WINDOW", schedule.DefaultWindow),
		"how long after its first attempt a delivery keeps being retried before it fails (env HERALD_RETRY_WINDOW)")
	fs.DurationVar(&s.policy.MaxRetryAfter, "max-retry-after", e.duration("HERALD_MAX_RETRY_AFTER", schedule.DefaultMaxRetryAfter),
		"longest wait a receiver's Retry-After can impose; negative ignores Retry-After (env HERALD_MAX_RETRY_AFTER)")
	fs.StringVar(&s.logFormat, "log-format", config.Env("HERALD_LOG_FORMAT", "text"), "log format: text or json (env HERALD_LOG_FORMAT)")
}

// check reports malformed environment values and settings out of range.
func (s *settings) check() error {
	errs := s.env.errs
	positive := []struct {
		flag  string
		value time.Duration
	}{
		{"--poll-interval", s.pollInterval}, {"--timeout", s.timeout}, {"--rescue-stuck-after", s.rescueAfter},
		{"--shutdown-grace", s.shutdownGrace}, {"--retry-base", s.policy.Base}, {"--retry-cap", s.policy.Cap},
		{"--retry-window", s.policy.Window},
	}
	for _, p := range positive {
		if p.value <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %s", p.flag, p.value))
		}
	}
	for _, n := range []struct {
		flag  string
		value int
	}{{"--workers", s.workers}, {"--batch-size", s.batchSize}, {"--max-inflight-per-endpoint", s.maxInflight}} {
		if n.value < 1 {
			errs = append(errs, fmt.Errorf("%s must be at least 1, got %d", n.flag, n.value))
		}
	}
	return errors.Join(errs...)
}

// envReader reads flag defaults from the environment and keeps the values
// it could not parse, so that a typo is reported instead of ignored.
type envReader struct {
	errs []error
}

func (e *envReader) int(name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		e.errs = append(e.errs, fmt.Errorf("%s=%q is not a whole number", name, v))
		return def
	}
	return n
}

func (e *envReader) duration(name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		e.errs = append(e.errs, fmt.Errorf("%s=%q is not a duration; write it like 15s, 3m or 72h", name, v))
		return def
	}
	return d
}
