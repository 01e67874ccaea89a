package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metricsShutdownTimeout bounds the wait for a scrape in progress when the
// dispatcher stops.
const metricsShutdownTimeout = 5 * time.Second

// newRegistry returns the registry of the dispatcher's own metrics: the Go
// runtime's and the process's here, the dispatcher's own (herald_dispatcher_*,
// and the attempts it recorded, herald_attempts_total and
// herald_attempt_duration_seconds) once it is built with it. They are this
// process's; Prometheus sums them across replicas. The outbox and queue
// gauges are the api's, read from the database.
func newRegistry() *prometheus.Registry {
	registry := prometheus.NewRegistry()
	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return registry
}

// serveMetrics serves registry at /metrics on addr and returns the
// function that stops serving. An empty addr serves nothing.
func serveMetrics(logger *slog.Logger, addr string, registry *prometheus.Registry) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: listen on %s: %w (choose another address, or leave it empty to serve no metrics)", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	logger.Info("serving metrics", "addr", ln.Addr().String(), "path", "/metrics")
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), metricsShutdownTimeout)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}
