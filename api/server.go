// Package api is Herald's management API: JSON over HTTP under /v1, with
// API-key and portal-session authentication, problem+json errors, keyset
// pagination, and the operational routes (/healthz, /readyz, /metrics,
// /openapi.json). It holds no state of its own: any number of replicas can
// serve one database.
package api

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/clientaddr"
	"github.com/heraldhq/herald/internal/jobtrace"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/internal/page"
	"github.com/heraldhq/herald/limits"
	"github.com/heraldhq/herald/migrations"
	"github.com/heraldhq/herald/replay"
	"github.com/heraldhq/herald/store"
)

// Config configures a Server.
type Config struct {
	// Pool is Herald's database. Required.
	Pool *pgxpool.Pool
	// Logger receives one line per request and every server-side failure.
	// Defaults to slog.Default().
	Logger *slog.Logger
	// PublicURL is the address clients reach this API at, used to build
	// portal links, e.g. "https://webhooks.example.com". Defaults to
	// "http://localhost:8080".
	PublicURL string
	// MaxBodyBytes caps request bodies. Defaults to DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxBatchBodyBytes caps the body of a batch publish. Defaults to
	// DefaultMaxBatchBodyBytes.
	MaxBatchBodyBytes int64
	// Store reads and writes tenants and endpoints. Required.
	Store *store.Store
	// Portal, when set, serves the customer portal under /portal/. It sees
	// the client address this server resolved (clientaddr.From).
	Portal http.Handler
	// TrustedProxyHeader names a header that a proxy in front of Herald
	// sets to the client's address (X-Forwarded-For, X-Real-IP); request
	// logs and the throttling of failed authentication then use the last
	// address in it. Empty (the default) means the connection's address.
	// See clientaddr.Resolver.
	TrustedProxyHeader string
	// AuthThrottle slows down failed authentication per client address.
	// Give the portal the same one. Defaults to a FailureThrottle with
	// auth's defaults: 20 failures, then one a second.
	AuthThrottle *auth.FailureThrottle
	// Limits rate-limits publishes, resends, replays and test events per
	// tenant and per credential. Give the portal the same one. Defaults to
	// a Limiter with limits' defaults (limits.DefaultRate).
	Limits *limits.Limiter
	// MetricsToken, when set, is the bearer token /metrics requires:
	// Prometheus sends it with `authorization: {credentials: …}` in its
	// scrape config. Empty (the default) serves /metrics to anyone who
	// reaches the api, as it is meant for a private network.
	MetricsToken string
	// TracerProvider, when set, receives a span per request (see
	// traceRequests); a request's traceparent header makes it a child of
	// the caller's span. Defaults to nil: no spans.
	TracerProvider trace.TracerProvider
	// QueueDashboard, when set, is served at QueueDashboardPath to
	// operators only (an operator API key as a bearer token, or signed in
	// on its page); see NewQueueDashboard. Defaults to nil: not served,
	// and the path answers 404.
	QueueDashboard http.Handler
	// MetricsPool, when set, is the pool /metrics reads through: give it
	// metrics.OpenPool's, which keeps one warmed connection for scrapes, as
	// cmd/api does. Defaults to Pool.
	MetricsPool *pgxpool.Pool
	// KeyCache, when set, answers most API-key lookups from memory; the
	// program runs its Listen, which makes a revocation on any replica
	// empty it. Nil (the default) looks every key up.
	KeyCache *auth.KeyCache
}

// DefaultMaxConns is the connection pool size cmd/api gives an api
// replica: 32. A publish holds a connection for its one statement and the
// commit's WAL flush, and commits that wait for a flush together share it,
// so the pool should let as many publishes wait as clients send at once;
// pgxpool's own default, max(4, CPUs), held 32 concurrent publishing
// clients to 4 commits per flush (docs/benchmarks.md).
const DefaultMaxConns = 32

// DefaultMinConns is how many connections cmd/api makes as it starts and
// keeps open while idle: 4, pgxpool's default pool size on these
// machines. cmd/api warms each new connection for history
// (database.WarmHistory), so a list or a page on a standing connection
// does not first load the catalog of every partition (about 100 ms on
// 30 days of them).
const DefaultMinConns = 4

// Server serves the API. Build it with New.
type Server struct {
	pool         *pgxpool.Pool
	store        *store.Store
	logger       *slog.Logger
	publicURL    string
	maxBodyBytes int64
	// maxBatchBodyBytes caps a batch publish's body.
	maxBatchBodyBytes int64
	clients           clientaddr.Resolver
	throttle          *auth.FailureThrottle
	limits            *limits.Limiter
	keys              *auth.KeyCache
	metricsToken      string
	jobs              replay.Inserter
	tracer            trace.TracerProvider
	router            chi.Router
	// lastPrune is when this process last pruned idempotency records, in
	// unix nanoseconds.
	lastPrune atomic.Int64
}

// New builds a Server from cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Pool == nil {
		return nil, errors.New("api: Config.Pool is required")
	}
	if cfg.Store == nil {
		return nil, errors.New("api: Config.Store is required")
	}
	s := &Server{
		pool:         cfg.Pool,
		store:        cfg.Store,
		logger:       cfg.Logger,
		publicURL:    strings.TrimRight(cfg.PublicURL, "/"),
		maxBodyBytes: cfg.MaxBodyBytes,
		clients:      clientaddr.Resolver{Header: cfg.TrustedProxyHeader},
		throttle:     cfg.AuthThrottle,
		limits:       cfg.Limits,
		keys:         cfg.KeyCache,
		metricsToken: cfg.MetricsToken,
		tracer:       cfg.TracerProvider,
	}
	if err := clientaddr.CheckHeader(cfg.TrustedProxyHeader); err != nil {
		return nil, fmt.Errorf("api: Config.TrustedProxyHeader: %w", err)
	}
	if s.throttle == nil {
		s.throttle = auth.NewFailureThrottle(auth.ThrottleConfig{})
	}
	if s.limits == nil {
		var err error
		if s.limits, err = limits.New(cfg.Pool, limits.Config{}); err != nil {
			return nil, fmt.Errorf("api: %w", err)
		}
	}
	if s.logger == nil {
		s.logger = slog.Default()
	}
	if s.publicURL == "" {
		s.publicURL = "http://localhost:8080"
	}
	if s.maxBodyBytes <= 0 {
		s.maxBodyBytes = DefaultMaxBodyBytes
	}
	s.maxBatchBodyBytes = cfg.MaxBatchBodyBytes
	if s.maxBatchBodyBytes <= 0 {
		s.maxBatchBodyBytes = DefaultMaxBatchBodyBytes
	}
	// An insert-only River client: it queues delivery and replay jobs in
	// the API's transactions; dispatchers work them, in the request's trace
	// when tracing is on.
	jobs, err := river.NewClient(riverpgxv5.New(cfg.Pool), &river.Config{
		Schema: migrations.Schema, Logger: s.logger, Middleware: jobtrace.Middleware(cfg.TracerProvider),
	})
	if err != nil {
		return nil, fmt.Errorf("api: River client: %w", err)
	}
	s.jobs = jobs
	registry := prometheus.NewRegistry()
	registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		metrics.NewCollector(cmp.Or(cfg.MetricsPool, cfg.Pool), s.logger),
	)
	s.router = s.routes(registry, cfg.Portal, cfg.QueueDashboard)
	return s, nil
}

// Handler returns the HTTP handler serving every route.
func (s *Server) Handler() http.Handler { return s.router }

func (s *Server) routes(registry *prometheus.Registry, portal, queueDashboard http.Handler) chi.Router {
	r := chi.NewRouter()
	r.Use(traceRequests(s.tracer), withRequestID, s.clients.Middleware, s.logRequests, s.recoverPanics)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, r, problem(http.StatusNotFound, "not-found", "no route matches "+r.Method+" "+r.URL.Path+"; see /openapi.json for the routes"))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, r, problem(http.StatusMethodNotAllowed, "method-not-allowed", r.Method+" is not allowed on "+r.URL.Path+"; see /openapi.json for the methods it takes"))
	})

	r.Get("/healthz", s.healthz)
	r.Get("/readyz", s.readyz)
	r.With(s.metricsAuth).Method(http.MethodGet, "/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	r.Get("/openapi.json", serveOpenAPI)
	if portal != nil {
		r.Mount("/portal", portal)
	}
	if queueDashboard != nil {
		r.Mount(QueueDashboardPath, s.queueDashboardRoutes(queueDashboard))
	}

	r.Route("/v1", func(r chi.Router) {
		r.Use(s.authenticate)

		r.With(operatorOnly).Get("/api-keys", s.h(s.listOperatorKeys))
		r.With(operatorOnly).Post("/api-keys", s.h(s.createOperatorKey))
		r.With(operatorOnly).Delete("/api-keys/{keyID}", s.h(s.revokeOperatorKey))

		r.Get("/event-types", s.h(s.listEventTypes))
		r.With(operatorOnly).Post("/event-types", s.h(s.createEventType))
		r.Get("/event-types/{eventType}", s.h(s.getEventType))
		r.With(operatorOnly).Patch("/event-types/{eventType}", s.h(s.updateEventType))
		r.With(operatorOnly).Delete("/event-types/{eventType}", s.h(s.deleteEventType))

		r.Get("/tenants", s.h(s.listTenants))
		r.With(operatorOnly).Post("/tenants", s.h(s.createTenant))

		r.Get("/erasures/{erasureID}", s.h(s.getErasure))

		r.Route("/tenants/{tenantID}", func(r chi.Router) {
			// Outside tenantScope: a tenant being erased is not found
			// there, and a repeated DELETE answers with its erasure.
			r.With(tenantVisible, operatorOnly).Delete("/", s.h(s.deleteTenant))
			r.Group(s.tenantRoutes)
		})
	})
	return r
}

// tenantRoutes are the routes under /v1/tenants/{tenantID} but its DELETE,
// behind tenantScope.
func (s *Server) tenantRoutes(r chi.Router) {
	r.Use(s.tenantScope)
	r.Get("/", s.h(s.getTenant))
	r.With(operatorManaged).Patch("/", s.h(s.updateTenant))

	r.With(apiKeyOnly).Get("/api-keys", s.h(s.listTenantKeys))
	r.With(apiKeyOnly).Post("/api-keys", s.h(s.createTenantKey))
	r.With(apiKeyOnly).Delete("/api-keys/{keyID}", s.h(s.revokeTenantKey))
	r.With(apiKeyOnly).Post("/portal-links", s.h(s.createPortalLink))

	r.With(apiKeyOnly, s.rateLimited(limits.Publish)).Post("/messages", s.h(s.publish))
	r.With(apiKeyOnly, s.rateLimited(limits.Publish)).Post("/messages/batch", s.h(s.publishBatch))
	r.Get("/messages", s.h(s.listMessages))
	r.Get("/messages/{messageID}", s.h(s.getMessage))
	r.Get("/messages/{messageID}/attempts", s.h(s.listMessageAttempts))
	r.With(s.rateLimited(limits.Resend)).Post("/messages/{messageID}/endpoints/{endpointID}/resend", s.h(s.resend))

	r.Get("/endpoints", s.h(s.listEndpoints))
	r.Post("/endpoints", s.h(s.createEndpoint))
	r.Get("/endpoints/{endpointID}", s.h(s.getEndpoint))
	r.Patch("/endpoints/{endpointID}", s.h(s.updateEndpoint))
	r.Delete("/endpoints/{endpointID}", s.h(s.deleteEndpoint))
	r.Post("/endpoints/{endpointID}/enable", s.h(s.enableEndpoint))
	r.Post("/endpoints/{endpointID}/disable", s.h(s.disableEndpoint))
	r.Get("/endpoints/{endpointID}/secret", s.h(s.revealSecret))
	r.Post("/endpoints/{endpointID}/secret/rotate", s.h(s.rotateSecret))
	r.Get("/endpoints/{endpointID}/attempts", s.h(s.listEndpointAttempts))
	r.Get("/endpoints/{endpointID}/stats", s.h(s.endpointStats))
	r.With(s.rateLimited(limits.TestEvent)).Post("/endpoints/{endpointID}/test", s.h(s.sendTestEvent))
	r.With(s.rateLimited(limits.TestEvent)).Post("/endpoints/{endpointID}/receiver-checks", s.h(s.createReceiverCheck))
	r.Get("/endpoints/{endpointID}/receiver-checks/{checkID}", s.h(s.getReceiverCheck))
	r.With(s.rateLimited(limits.Replay)).Post("/endpoints/{endpointID}/replays", s.h(s.createReplay))
	r.Get("/endpoints/{endpointID}/replays", s.h(s.listReplays))
	r.Get("/endpoints/{endpointID}/replays/{replayID}", s.h(s.getReplay))
}

// handlerFunc is a handler that reports failure by returning an error;
// s.h turns the error into a problem response.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

func (s *Server) h(fn handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := fn(w, r); err != nil {
			writeProblem(w, r, s.asProblem(r, err))
		}
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	return json.NewEncoder(w).Encode(v)
}

// listResponse is the body of every list route.
type listResponse[T any] struct {
	Data []T `json:"data"`
	// Next is the cursor to pass as ?after= for the next page; absent on
	// the last page.
	Next string `json:"next,omitempty"`
}

func writePage[T any](w http.ResponseWriter, p page.Page[T]) error {
	resp := listResponse[T]{Data: p.Items}
	if p.Next != nil {
		resp.Next = p.Next.String()
	}
	return writeJSON(w, http.StatusOK, resp)
}

func pageRequest(r *http.Request) (page.Request, error) {
	q := r.URL.Query()
	return page.ParseRequest(q.Get("limit"), q.Get("after"))
}

// uuidParam reads a UUID path parameter. A malformed id cannot name an
// object, so it is reported as not found, like any other unknown id.
func uuidParam(r *http.Request, name, what string) (uuid.UUID, error) {
	id, err := uuid.Parse(strings.TrimPrefix(chi.URLParam(r, name), "msg_"))
	if err != nil {
		return uuid.UUID{}, notFound(what + " " + quote(chi.URLParam(r, name)))
	}
	return id, nil
}

// quote prints a client-supplied value in a message, shortened so a long
// value cannot flood the response.
func quote(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return strconv.Quote(s)
}
