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
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/heraldhq/herald/api"
	"github.com/heraldhq/herald/cmd/internal/flagenv"
	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/clientaddr"
	"github.com/heraldhq/herald/internal/database"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/limits"
	"github.com/heraldhq/herald/portal"
	"github.com/heraldhq/herald/schedule"
	"github.com/heraldhq/herald/store"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "api:", err)
		os.Exit(1)
	}
}

// Defaults of the api's own settings.
const (
	// defaultAddr is --addr's default: every interface, port 8080.
	defaultAddr = ":8080"
	// defaultPublicURL is --public-url's default, right for a browser on
	// the same machine.
	defaultPublicURL = "http://localhost:8080"
	// defaultShutdownTimeout is --shutdown-timeout's default.
	defaultShutdownTimeout = 15 * time.Second
)

// settings are the api's flags.
type settings struct {
	db              flagenv.Database
	ssrf            ssrf.Config
	addr            string
	publicURL       string
	bootstrapKey    string
	maxBodyBytes    int64
	shutdownTimeout time.Duration
	logFormat       flagenv.LogFormat
	// trustedProxyHeader names the header a proxy in front of the api sets
	// to the client's address; empty means the connection's address.
	trustedProxyHeader  string
	authFailureBurst    int
	authFailureInterval time.Duration
	metricsToken        string
	limits              flagenv.Limits
	queueDashboard      bool
	// frameAncestors is --portal-frame-ancestors as given: a
	// comma-separated list of origins, checked by portal.ParseFrameAncestors.
	frameAncestors    string
	branding          portal.Branding
	keyCacheTTL       time.Duration
	maxBatchBodyBytes int64
	pprofAddr         string
	endpointBounds    schedule.Bounds
}

func (s *settings) register(fs *flagenv.FlagSet) {
	fs.DatabaseVar(&s.db, api.DefaultMaxConns)
	fs.SSRFVar(&s.ssrf)
	fs.StringVar(&s.addr, "addr", defaultAddr, "address to listen on")
	fs.Env("addr", "HERALD_API_ADDR")
	fs.StringVar(&s.publicURL, "public-url", defaultPublicURL, "URL clients reach this API at, used in portal links")
	fs.Env("public-url", "HERALD_PUBLIC_URL")
	fs.StringVar(&s.bootstrapKey, "bootstrap-key", "", "an operator API key (hk_…) to create on start if it does not exist; empty creates none")
	fs.Env("bootstrap-key", "HERALD_BOOTSTRAP_API_KEY")
	fs.Int64Var(&s.maxBodyBytes, "max-body-bytes", api.DefaultMaxBodyBytes, "largest request body accepted")
	fs.Env("max-body-bytes", "HERALD_MAX_BODY_BYTES")
	fs.DurationVar(&s.shutdownTimeout, "shutdown-timeout", defaultShutdownTimeout, "how long in-flight requests may finish after SIGTERM")
	fs.LogFormatVar(&s.logFormat)
	fs.StringVar(&s.trustedProxyHeader, "trusted-proxy-header", "", "`header` a proxy in front of the api sets to the client's address, e.g. X-Forwarded-For (its last address is used); empty uses the connection's address. Set it only if every request comes through that proxy")
	fs.Env("trusted-proxy-header", "HERALD_TRUSTED_PROXY_HEADER")
	fs.IntVar(&s.authFailureBurst, "auth-failure-burst", auth.DefaultFailureBurst, "failed authentications (API and portal) a client address may make in a row before it waits; negative disables the throttle")
	fs.Env("auth-failure-burst", "HERALD_AUTH_FAILURE_BURST")
	fs.DurationVar(&s.authFailureInterval, "auth-failure-interval", auth.DefaultFailureInterval, "once its burst is spent, a client address may fail once per interval (429 with Retry-After until then)")
	fs.Env("auth-failure-interval", "HERALD_AUTH_FAILURE_INTERVAL")
	fs.StringVar(&s.metricsToken, "metrics-token", "", "bearer token that /metrics requires; empty serves /metrics without authentication")
	fs.Env("metrics-token", "HERALD_METRICS_TOKEN")
	fs.LimitsVar(&s.limits)
	fs.EndpointBoundsVar(&s.endpointBounds)
	fs.BoolVar(&s.queueDashboard, "queue-dashboard", false, "serve River UI, the queue dashboard, at "+api.QueueDashboardPath+"/ to operators (an operator API key)")
	fs.Env("queue-dashboard", "HERALD_QUEUE_DASHBOARD")
	fs.StringVar(&s.frameAncestors, "portal-frame-ancestors", "", "comma-separated `origins` whose pages may embed the portal in a frame, like https://app.example.com; empty lets none. Over TLS the portal's cookies then work inside the frame (SameSite=None; Secure; Partitioned)")
	fs.Env("portal-frame-ancestors", "HERALD_PORTAL_FRAME_ANCESTORS")
	fs.StringVar(&s.branding.ProductName, "portal-product-name", "", "the portal's name in titles and its header; empty means "+portal.DefaultProductName)
	fs.Env("portal-product-name", "HERALD_PORTAL_PRODUCT_NAME")
	fs.StringVar(&s.branding.AccentColor, "portal-accent-color", "", "`colour` of the portal's links and buttons in hex, like #2f5bd3; empty keeps the portal's own")
	fs.Env("portal-accent-color", "HERALD_PORTAL_ACCENT_COLOR")
	fs.StringVar(&s.branding.LogoURL, "portal-logo-url", "", "https `URL` of a logo for the portal's header; empty shows the product name")
	fs.Env("portal-logo-url", "HERALD_PORTAL_LOGO_URL")
	fs.StringVar(&s.branding.SupportURL, "portal-support-url", "", "https `URL` the portal's header links to as Support; empty shows no link")
	fs.Env("portal-support-url", "HERALD_PORTAL_SUPPORT_URL")
	fs.DurationVar(&s.keyCacheTTL, "api-key-cache-ttl", auth.DefaultKeyCacheTTL, "how long an API key that authenticated is trusted without a lookup; a revocation on any replica ends it at once; negative looks every key up")
	fs.Env("api-key-cache-ttl", "HERALD_API_KEY_CACHE_TTL")
	fs.Int64Var(&s.maxBatchBodyBytes, "max-batch-body-bytes", api.DefaultMaxBatchBodyBytes, "largest body of a batch publish (POST …/messages/batch)")
	fs.Env("max-batch-body-bytes", "HERALD_MAX_BATCH_BODY_BYTES")
	fs.PprofVar(&s.pprofAddr)
}

func run(args []string) error {
	fs := flagenv.New("api")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: api [flags]\n\nServes Herald's management API on --addr. It creates the database if missing\nand applies migrations on start unless --migrate=false. Endpoint secrets are\nencrypted under the key in HERALD_SECRET_KEY (32 random bytes in base64).\nEvery flag but --shutdown-timeout falls back to the environment variable it\nnames.\n\nFlags:\n")
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
	if err := clientaddr.CheckHeader(s.trustedProxyHeader); err != nil {
		return fmt.Errorf("--trusted-proxy-header: %w", err)
	}
	publicHTTPS, err := isHTTPS(s.publicURL)
	if err != nil {
		return fmt.Errorf("--public-url: %w", err)
	}
	limitsConfig, err := s.limits.Config()
	if err != nil {
		return err
	}
	frameAncestors, err := portal.ParseFrameAncestors(s.frameAncestors)
	if err != nil {
		return fmt.Errorf("--portal-frame-ancestors: %w", err)
	}
	if err := s.branding.Validate("--portal-"); err != nil {
		return err
	}
	logger := s.logFormat.Logger()
	box, err := flagenv.SecretBox()
	if err != nil {
		return err
	}
	guard, err := s.ssrf.Guard()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	tracing, err := flagenv.StartTracing(ctx, "herald-api")
	if err != nil {
		return err
	}
	defer tracing.Stop(logger)
	s.db.MinConns, s.db.AfterConnect = api.DefaultMinConns, database.WarmHistory
	pool, err := s.db.Open(ctx, logger)
	if err != nil {
		return err
	}
	defer pool.Close()
	// Scrapes read through a connection of their own, warmed as it opens
	// (metrics.OpenPool).
	metricsPool, err := metrics.OpenPool(ctx, pool.Config())
	if err != nil {
		return err
	}
	defer metricsPool.Close()
	if s.bootstrapKey != "" {
		if err := auth.EnsureAPIKey(ctx, pool, s.bootstrapKey, "bootstrap"); err != nil {
			return fmt.Errorf("--bootstrap-key: %w", err)
		}
	}
	st, err := store.New(pool, store.Config{Box: box, CheckURL: guard.CheckURL, MaxEndpointsPerTenant: s.limits.MaxEndpointsPerTenant,
		PolicyBounds: s.endpointBounds})
	if err != nil {
		return err
	}
	// One limiter for both, so a tenant's budget and a key's share are
	// the same whichever way the request came.
	limiter, err := limits.New(pool, limitsConfig)
	if err != nil {
		return err
	}
	var keys *auth.KeyCache
	if s.keyCacheTTL >= 0 {
		keys = auth.NewKeyCache(auth.KeyCacheConfig{TTL: s.keyCacheTTL})
		go keys.Listen(ctx, pool.Config().ConnConfig, logger)
	}
	if err := flagenv.ServePprof(ctx, logger, s.pprofAddr); err != nil {
		return err
	}
	// One throttle for both, so failing in the portal counts for the API
	// and the other way round.
	throttle := auth.NewFailureThrottle(auth.ThrottleConfig{Burst: s.authFailureBurst, Interval: s.authFailureInterval})
	customerPortal, err := portal.New(portal.Config{
		Pool:         pool,
		Store:        st,
		Logger:       logger,
		AuthThrottle: throttle,
		Limits:       limiter,
		// Behind a TLS-terminating proxy requests arrive as plain HTTP; the
		// public URL says whether browsers use HTTPS.
		SecureCookies:  publicHTTPS,
		FrameAncestors: frameAncestors,
		Branding:       s.branding,
		TracerProvider: tracing.Provider,
	})
	if err != nil {
		return err
	}
	var queueDashboard http.Handler
	if s.queueDashboard {
		if queueDashboard, err = api.NewQueueDashboard(ctx, pool, logger); err != nil {
			return err
		}
	}
	server, err := api.New(api.Config{
		Pool:               pool,
		MetricsPool:        metricsPool,
		Store:              st,
		Logger:             logger,
		PublicURL:          s.publicURL,
		MaxBodyBytes:       s.maxBodyBytes,
		MaxBatchBodyBytes:  s.maxBatchBodyBytes,
		KeyCache:           keys,
		Portal:             customerPortal,
		TrustedProxyHeader: s.trustedProxyHeader,
		MetricsToken:       s.metricsToken,
		AuthThrottle:       throttle,
		Limits:             limiter,
		TracerProvider:     tracing.Provider,
		QueueDashboard:     queueDashboard,
	})
	if err != nil {
		return err
	}
	return serve(ctx, logger, s, server.Handler())
}

// isHTTPS reports whether publicURL, an absolute http or https URL, is
// https. Schemes are case-insensitive (RFC 3986), so HTTPS://… counts.
func isHTTPS(publicURL string) (bool, error) {
	u, err := url.Parse(publicURL)
	if err != nil || u.Host == "" || !(strings.EqualFold(u.Scheme, "https") || strings.EqualFold(u.Scheme, "http")) {
		return false, fmt.Errorf("%q is not an absolute http or https URL; give the address browsers reach this API at, like https://webhooks.example.com", publicURL)
	}
	return strings.EqualFold(u.Scheme, "https"), nil
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
