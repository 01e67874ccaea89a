package main

import (
	"context"
	"fmt"
	"io"
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

// serveMetrics serves registry at /metrics on addr, and at /readyz
// whether the dispatcher takes jobs: 200 once ready is closed, 503 before
// (while it warms its connections) and once ctx is done (it is stopping).
// It returns the function that stops serving. An empty addr serves
// nothing.
func serveMetrics(ctx context.Context, logger *slog.Logger, addr string, registry *prometheus.Registry, ready <-chan struct{}) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: listen on %s: %w (choose another address, or leave it empty to serve no metrics)", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		switch {
		case ctx.Err() != nil:
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "stopping\n")
		case isClosed(ready):
			_, _ = io.WriteString(w, "ready\n")
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "starting\n")
		}
	})
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	logger.Info("serving metrics", "addr", ln.Addr().String(), "path", "/metrics", "readiness", "/readyz")
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

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
