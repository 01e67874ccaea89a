package flagenv

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// PprofVar defines --pprof-addr in f: where to serve Go's profiler. The
// default, empty, serves none.
func (f *FlagSet) PprofVar(p *string) {
	f.StringVar(p, "pprof-addr", "", "address to serve Go's profiler (/debug/pprof/) on, e.g. 127.0.0.1:6060; empty serves none. Keep it off public networks")
	f.Env("pprof-addr", "HERALD_PPROF_ADDR")
}

// ServePprof serves net/http/pprof's handlers on addr until ctx ends. An
// empty addr serves nothing.
func ServePprof(ctx context.Context, logger *slog.Logger, addr string) error {
	if addr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--pprof-addr: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	go func() { _ = srv.Serve(ln) }()
	logger.Info("pprof listening", "addr", ln.Addr().String())
	return nil
}
