// Command api serves Herald's management API (under /v1), its operational
// routes (/healthz, /readyz, /metrics, /openapi.json) and the customer
// portal. It keeps no state of its own: run as many replicas as needed
// against one database.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/heraldhq/herald/api"
	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/database"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/portal"
	"github.com/heraldhq/herald/store"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "api:", err)
		os.Exit(1)
	}
}

// settings are the api's flags.
type settings struct {
	db              config.Database
	ssrf            ssrf.Config
	addr            string
	publicURL       string
	bootstrapKey    string
	maxBodyBytes    int64
	shutdownTimeout time.Duration
	logFormat       string
}

func (s *settings) register(fs *flag.FlagSet) {
	s.db.Register(fs)
	s.ssrf.Register(fs)
	fs.StringVar(&s.addr, "addr", config.Env("HERALD_API_ADDR", ":8080"), "address to listen on (env HERALD_API_ADDR)")
	fs.StringVar(&s.publicURL, "public-url", config.Env("HERALD_PUBLIC_URL", "http://localhost:8080"), "URL clients reach this API at, used in portal links (env HERALD_PUBLIC_URL)")
	fs.StringVar(&s.bootstrapKey, "bootstrap-key", "", "an operator API key (hk_…) to create on start if it does not exist; empty means the env HERALD_BOOTSTRAP_API_KEY, and none when that is empty too")
	fs.Int64Var(&s.maxBodyBytes, "max-body-bytes", int64(config.EnvInt("HERALD_MAX_BODY_BYTES", api.DefaultMaxBodyBytes)), "largest request body accepted (env HERALD_MAX_BODY_BYTES)")
	fs.DurationVar(&s.shutdownTimeout, "shutdown-timeout", 15*time.Second, "how long in-flight requests may finish after SIGTERM")
	fs.StringVar(&s.logFormat, "log-format", config.Env("HERALD_LOG_FORMAT", "text"), "log format: text or json (env HERALD_LOG_FORMAT)")
}

func run(args []string) error {
	fs := flag.NewFlagSet("api", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: api [flags]\n\nServes Herald's management API on --addr. It creates the database if missing\nand applies migrations on start unless --migrate=false. Endpoint secrets are\nencrypted under the key in HERALD_SECRET_KEY (32 random bytes in base64).\n\nFlags:\n")
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
	if s.bootstrapKey == "" {
		// Read here rather than as the flag's default, so --help never prints it.
		s.bootstrapKey = os.Getenv("HERALD_BOOTSTRAP_API_KEY")
	}
	logger, err := newLogger(s.logFormat)
	if err != nil {
		return err
	}
	box, err := secretbox.FromEnv()
	if err != nil {
		return err
	}
	guard, err := s.ssrf.Guard()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	pool, err := database.OpenMigrated(ctx, database.Config{URL: s.db.URL, MaxConns: int32(s.db.MaxConns), Migrate: s.db.Migrate, Logger: logger})
	if err != nil {
		return err
	}
	defer pool.Close()
	if s.bootstrapKey != "" {
		if err := auth.EnsureAPIKey(ctx, pool, s.bootstrapKey, "bootstrap"); err != nil {
			return fmt.Errorf("--bootstrap-key: %w", err)
		}
	}
	st, err := store.New(pool, store.Config{Box: box, CheckURL: guard.CheckURL})
	if err != nil {
		return err
	}
	customerPortal, err := portal.New(portal.Config{
		Pool:   pool,
		Store:  st,
		Logger: logger,
		// Behind a TLS-terminating proxy requests arrive as plain HTTP; the
		// public URL says whether browsers use HTTPS.
		SecureCookies: strings.HasPrefix(s.publicURL, "https://"),
	})
	if err != nil {
		return err
	}
	server, err := api.New(api.Config{
		Pool:         pool,
		Store:        st,
		Logger:       logger,
		PublicURL:    s.publicURL,
		MaxBodyBytes: s.maxBodyBytes,
		Portal:       customerPortal,
	})
	if err != nil {
		return err
	}
	return serve(ctx, logger, s, server.Handler())
}

func serve(ctx context.Context, logger *slog.Logger, s settings, handler http.Handler) error {
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (is another api running? choose another --addr)", s.addr, err)
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	logger.Info("api listening", "addr", ln.Addr().String(), "public_url", s.publicURL)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("api shutting down", "grace", s.shutdownTimeout)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), s.shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

func newLogger(format string) (*slog.Logger, error) {
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, nil)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, nil)), nil
	}
	return nil, fmt.Errorf("--log-format must be text or json, got %q", format)
}
