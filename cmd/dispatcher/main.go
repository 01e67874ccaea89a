// Command dispatcher drains Herald's outbox and delivers webhooks: it fans
// committed messages out to their endpoints' deliveries and sends them,
// signed, with retries over days. It keeps no state of its own: run as many
// replicas as needed against one database; they share the work.
//
// SIGINT or SIGTERM stops it gracefully: it claims nothing more, lets the
// attempts in flight finish for up to --shutdown-grace, cancels the rest
// (another dispatcher or the next start sends them again) and exits 0. A
// second signal exits at once.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/heraldhq/herald/cmd/internal/flagenv"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/dispatcher"
	"github.com/heraldhq/herald/health"
	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/retention"
	"github.com/heraldhq/herald/store"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "dispatcher:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flagenv.New("dispatcher")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: dispatcher [flags]\n\nDrains Herald's outbox and delivers webhooks until SIGINT or SIGTERM. It creates\nthe database if missing and applies migrations on start unless --migrate=false.\nEndpoint secrets are decrypted with the key in HERALD_SECRET_KEY (32 random\nbytes in base64). Every flag falls back to the environment variable it names.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	var s settings
	s.register(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if err := s.check(); err != nil {
		return err
	}
	logger := s.logFormat.Logger()
	s.health.Logger = logger
	tracker := health.New(s.health)
	box, err := flagenv.SecretBox()
	if err != nil {
		return err
	}
	guard, err := s.ssrf.Guard()
	if err != nil {
		return err
	}
	transport := guard.Transport()
	if s.egressProxy != "" {
		proxy, err := ssrf.ParseProxy(s.egressProxy)
		if err != nil {
			return err
		}
		transport = guard.ProxyTransport(proxy)
		logger.Info("deliveries go through the egress proxy", "egress_proxy", proxy.Redacted())
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second signal ends the process at once
	}()

	tracing, err := flagenv.StartTracing(ctx, "herald-dispatcher")
	if err != nil {
		return err
	}
	defer tracing.Stop(logger)
	if err := flagenv.ServePprof(ctx, logger, s.pprofAddr); err != nil {
		return err
	}
	pool, err := s.db.Open(ctx, logger)
	if err != nil {
		return err
	}
	defer pool.Close()
	st, err := store.New(pool, store.Config{Box: box})
	if err != nil {
		return err
	}
	rel, closeSources, err := openRelay(ctx, &s, pool, logger)
	if err != nil {
		return err
	}
	defer closeSources()
	registry := newRegistry()
	d, err := dispatcher.New(dispatcher.Config{
		Pool: pool,
		Delivery: delivery.Config{
			Secrets:                st,
			Policy:                 s.policy,
			Timeout:                s.timeout,
			EndpointBounds:         s.endpointBounds,
			MaxInflightPerEndpoint: s.maxInflight,
			MaxInflightPerTenant:   s.tenantInflight,
			OrderedHeadLimit:       s.headLimit,
			Transport:              transport,
			Health:                 tracker,
		},
		Workers:              s.workers,
		BatchSize:            s.batchSize,
		PollInterval:         s.pollInterval,
		DrainCoalesce:        s.drainCoalesce,
		RescueStuckJobsAfter: s.rescueAfter,
		ReconcileInterval:    s.reconcile,
		FanOutTimeout:        s.fanOutTimeout,
		ShutdownGrace:        s.shutdownGrace,
		Retention:            retention.Config{Interval: s.partitionInterval, Retention: s.retention},
		Registerer:           registry,
		Logger:               logger,
		TracerProvider:       tracing.Provider,
	})
	if err != nil {
		return err
	}
	if allowed := guard.Allowed(); len(allowed) > 0 {
		logger.Info("SSRF guard lets these blocked ranges through", "allow_cidrs", allowed)
	}
	stopMetrics, err := serveMetrics(ctx, logger, s.metricsAddr, registry, d.Ready())
	if err != nil {
		return err
	}
	// Served until the dispatcher has stopped, graceful period included.
	defer stopMetrics()
	return runDispatcher(ctx, d, rel)
}
