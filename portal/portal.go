// Package portal serves the customer portal: server-rendered pages where the
// people who receive a tenant's webhooks manage their endpoints, read the
// delivery log, look at every attempt, resend a delivery and replay an
// endpoint since a point in time.
//
// The portal runs inside cmd/api, mounted at Path, and calls the same Go
// packages the JSON API calls (store, replay, auth), so both behave alike.
// A browser gets in with a portal link that the management API mints for one
// tenant (auth.PortalLoginPath?token=…): opening it shows which tenant it
// opens, and confirming there (a POST, see login.go) spends the link, which
// works once and expires, and opens a session held in an HttpOnly cookie.
// Every query a page makes is scoped to that session's tenant; another
// tenant's objects are "not found".
//
// Pages are html/template files from package web with embedded static
// assets; there is no JavaScript build step, and the one script only
// enhances pages that work without it (local times, copy buttons, live
// replay progress). Responses carry a Content-Security-Policy that allows no
// inline script or style, and every form carries a CSRF token.
package portal

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/jobtrace"
	"github.com/heraldhq/herald/limits"
	"github.com/heraldhq/herald/migrations"
	"github.com/heraldhq/herald/replay"
	"github.com/heraldhq/herald/store"
)

// Path is where cmd/api mounts the portal. Links and forms in the pages use
// it, and auth.PortalLoginPath (where portal links point) lies under it.
const Path = "/portal"

// Config configures the portal.
type Config struct {
	// Pool is Herald's database. Required.
	Pool *pgxpool.Pool
	// Store creates, changes and deletes endpoints and their secrets, with
	// the same validation (URL policy included) as the JSON API. Required.
	Store *store.Store
	// Logger receives one record per failed request. Defaults to slog.Default().
	Logger *slog.Logger
	// SessionTTL is how long a session lasts after a link is opened.
	// Defaults to 12 hours (auth.DefaultSessionTTL). Zero means the default.
	SessionTTL time.Duration
	// SecureCookies marks the session cookie Secure on every request. It is
	// always Secure on requests that arrived over TLS; set this when TLS ends
	// at a proxy in front of Herald. Defaults to false.
	SecureCookies bool
	// Limits rate-limits resends, replays and test events per tenant and
	// per session. Give the API the same one. Defaults to a Limiter with
	// limits' defaults.
	Limits *limits.Limiter
	// AuthThrottle slows down failed sign-ins (links that do not work,
	// sessions that do not exist) per client address, as
	// clientaddr.From finds it. Give the API the same one. Defaults to a
	// FailureThrottle with auth's defaults: 20 failures, then one a second.
	AuthThrottle *auth.FailureThrottle
	// FrameAncestors are the origins whose pages may embed the portal in a
	// frame, each as ParseFrameAncestors gives them ("https://app.example.com").
	// Cookies then work inside such a frame over TLS (see embedding.go).
	// Defaults to none: no page may frame the portal.
	FrameAncestors []string
	// Branding is the portal's product name, accent colour, logo and
	// support link (see Branding.Validate). Defaults to Herald's own look.
	Branding Branding
	// TracerProvider, when set, traces the jobs the portal queues (resends,
	// test events, replays) in the trace of the request that queued them.
	// Nil (the default) traces nothing.
	TracerProvider trace.TracerProvider
}

// Portal is the customer portal's HTTP handler. Mount it at Path.
type Portal struct {
	cfg    Config
	pool   *pgxpool.Pool
	store  *store.Store
	jobs   replay.Inserter
	limits *limits.Limiter
	logger *slog.Logger
	pages  *pages
	assets *assets
	router chi.Router
	// csp is the Content-Security-Policy of every response.
	csp string
}

// New builds the portal. It fails only when Pool or Store is missing.
func New(cfg Config) (*Portal, error) {
	if cfg.Pool == nil {
		return nil, errors.New("portal: Config.Pool is required")
	}
	if cfg.Store == nil {
		return nil, errors.New("portal: Config.Store is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.AuthThrottle == nil {
		cfg.AuthThrottle = auth.NewFailureThrottle(auth.ThrottleConfig{})
	}
	if cfg.Limits == nil {
		var err error
		if cfg.Limits, err = limits.New(cfg.Pool, limits.Config{}); err != nil {
			return nil, fmt.Errorf("portal: %w", err)
		}
	}
	for _, origin := range cfg.FrameAncestors {
		if _, err := checkFrameAncestor(origin); err != nil {
			return nil, fmt.Errorf("portal: Config.FrameAncestors: %w", err)
		}
	}
	if err := cfg.Branding.Validate(""); err != nil {
		return nil, fmt.Errorf("portal: Config.Branding: %w", err)
	}
	as, err := loadAssets()
	if err != nil {
		return nil, err
	}
	pg, err := loadPages(as.url)
	if err != nil {
		return nil, err
	}
	// An insert-only River client: resends, test events and replays queue
	// their jobs in the portal's transactions; dispatchers work them, in the
	// request's trace when tracing is on.
	jobs, err := river.NewClient(riverpgxv5.New(cfg.Pool), &river.Config{
		Schema: migrations.Schema, Logger: cfg.Logger, Middleware: jobtrace.Middleware(cfg.TracerProvider),
	})
	if err != nil {
		return nil, fmt.Errorf("portal: River client: %w", err)
	}
	p := &Portal{cfg: cfg, pool: cfg.Pool, store: cfg.Store, jobs: jobs, limits: cfg.Limits, logger: cfg.Logger, pages: pg, assets: as,
		csp: contentSecurityPolicy(cfg.FrameAncestors, cfg.Branding.logoOrigin())}
	p.router = p.routes()
	return p, nil
}

// ServeHTTP serves a request whose path is relative to Path, as chi's Mount
// passes it.
func (p *Portal) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.router.ServeHTTP(w, r)
}

func (p *Portal) routes() chi.Router {
	r := chi.NewRouter()
	r.Use(p.securityHeaders)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) { p.renderError(w, r, nil, errNotFound) })
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		p.renderError(w, r, nil, &pageError{status: http.StatusMethodNotAllowed, heading: "Not allowed", message: "This page cannot be used that way. Use the buttons and links on the portal's pages."})
	})
	r.Get("/static/{name}", p.assets.serve)
	r.Get("/brand.css", p.brandStylesheet)
	r.Get("/login", p.confirmLogin)
	r.Post("/login", p.login)

	r.Group(func(r chi.Router) {
		r.Use(p.requireSession)
		r.Get("/", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, Path+"/endpoints", http.StatusSeeOther)
		})
		r.Post("/logout", p.handle(p.logout))

		r.Get("/endpoints", p.handle(p.endpointList))
		r.Get("/endpoints/new", p.handle(p.newEndpoint))
		r.Post("/endpoints", p.handle(p.createEndpoint))
		r.Get("/endpoints/{id}", p.handle(p.endpointDetail))
		r.Get("/endpoints/{id}/edit", p.handle(p.editEndpoint))
		r.Post("/endpoints/{id}", p.handle(p.updateEndpoint))
		r.Post("/endpoints/{id}/enable", p.handle(p.enableEndpoint))
		r.Post("/endpoints/{id}/disable", p.handle(p.disableEndpoint))
		r.Get("/endpoints/{id}/delete", p.handle(p.confirmDelete))
		r.Post("/endpoints/{id}/delete", p.handle(p.deleteEndpoint))
		r.Post("/endpoints/{id}/secret", p.handle(p.revealSecret))
		r.Post("/endpoints/{id}/secret/rotate", p.handle(p.rotateSecret))
		r.Post("/endpoints/{id}/test", p.handle(p.limited(limits.TestEvent, p.sendTestEvent)))
		r.Post("/endpoints/{id}/receiver-checks", p.handle(p.limited(limits.TestEvent, p.startReceiverCheck)))
		r.Get("/endpoints/{id}/receiver-checks/{checkID}", p.handle(p.receiverCheckDetail))
		r.Post("/endpoints/{id}/replays", p.handle(p.limited(limits.Replay, p.startReplay)))
		r.Get("/endpoints/{id}/replays/{replayID}", p.handle(p.replayDetail))
		r.Get("/endpoints/{id}/replays/{replayID}/progress", p.handle(p.replayProgress))

		r.Get("/messages", p.handle(p.messageLog))
		r.Get("/messages/{id}", p.handle(p.messageDetail))
		r.Get("/attempts/{id}", p.handle(p.attemptDetail))
		r.Post("/deliveries/{id}/resend", p.handle(p.limited(limits.Resend, p.resend)))
	})
	return r
}
