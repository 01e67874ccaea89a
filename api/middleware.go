package api

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/netip"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/google/uuid"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/clientaddr"
)

// RequestIDHeader carries a request's id in both directions: a client may
// send one (letters, digits, ".", "_", "-"; at most 64), otherwise the
// server makes one. Every log line and problem of the request names it.
const RequestIDHeader = "X-Request-Id"

// validTenantID is the tenants_id_format check of the core schema; an id
// that fails it cannot exist, and must not reach Postgres as a parameter.
var validTenantID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_:-]{0,127}$`)

var validRequestID = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

type requestIDKey struct{}

func requestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

func withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(RequestIDHeader)
		if !validRequestID.MatchString(id) {
			id = uuid.Must(uuid.NewV7()).String()
		}
		w.Header().Set(RequestIDHeader, id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id)))
	})
}

// logRequests writes one slog line per request once it is answered.
func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		// The principal is known only after authentication, deeper in the
		// chain; the holder lets it reach this log line.
		holder := &principalHolder{}
		r = r.WithContext(context.WithValue(r.Context(), principalHolderKey{}, holder))
		defer func() {
			route := chi.RouteContext(r.Context()).RoutePattern()
			attrs := []slog.Attr{
				slog.String("request_id", requestIDFrom(r.Context())),
				slog.String("client", clientaddr.String(clientaddr.From(r))),
				slog.String("method", r.Method),
				slog.String("path", r.URL.Path),
				slog.String("route", route),
				slog.Int("status", ww.Status()),
				slog.Int("bytes", ww.BytesWritten()),
				slog.Duration("duration", time.Since(start)),
			}
			if p := holder.p; p != nil {
				attrs = append(attrs, slog.String("auth", string(p.Kind)), slog.String("tenant", p.TenantID))
			}
			level := slog.LevelInfo
			if ww.Status() >= 500 {
				level = slog.LevelError
			}
			s.logger.LogAttrs(r.Context(), level, "http request", attrs...)
		}()
		next.ServeHTTP(ww, r)
	})
}

type principalHolderKey struct{}

type principalHolder struct{ p *auth.Principal }

// recoverPanics turns a panic in a handler into a logged 500 rather than a
// dropped connection.
func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil || v == http.ErrAbortHandler {
				if v != nil {
					panic(v)
				}
				return
			}
			s.logger.ErrorContext(r.Context(), "handler panicked", "request_id", requestIDFrom(r.Context()), "panic", v, "stack", string(debug.Stack()))
			writeProblem(w, r, problem(http.StatusInternalServerError, "internal", "the server failed to handle this request; quote the request id if it keeps failing"))
		}()
		next.ServeHTTP(w, r)
	})
}

// authenticate requires a bearer token: an API key or a portal session.
// Every 401 counts against the client's address in s.throttle, and an
// address that has used up its failures gets 429 before its token, good or
// bad, is looked at.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		client := clientaddr.From(r)
		if s.throttled(w, r, client, "the API key") {
			return
		}
		scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
			s.throttle.Fail(client)
			w.Header().Set("WWW-Authenticate", `Bearer realm="herald"`)
			writeProblem(w, r, problem(http.StatusUnauthorized, "unauthenticated",
				"this route needs an API key; send it as the header Authorization: Bearer hk_…"))
			return
		}
		p, err := s.keys.Authenticate(r.Context(), s.pool, strings.TrimSpace(token))
		if errors.Is(err, auth.ErrUnauthenticated) {
			s.throttle.Fail(client)
			w.Header().Set("WWW-Authenticate", `Bearer realm="herald", error="invalid_token"`)
			writeProblem(w, r, problem(http.StatusUnauthorized, "unauthenticated",
				"the bearer token is unknown, revoked or expired; check the API key you send or ask an operator for a new one"))
			return
		}
		if err != nil {
			writeProblem(w, r, s.asProblem(r, err))
			return
		}
		if holder, ok := r.Context().Value(principalHolderKey{}).(*principalHolder); ok {
			holder.p = &p
		}
		next.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
	})
}

func principal(r *http.Request) auth.Principal {
	p, _ := auth.FromContext(r.Context())
	return p
}

// operatorOnly guards routes that act across tenants.
var operatorOnly = requireOperator("this route acts across tenants and needs an operator API key; your key is scoped to one tenant")

// operatorManaged guards what operators set for a tenant and the tenant may
// not change itself: its name is how people tell tenants apart in the
// portal, so a tenant renamed after another could pass its portal links off
// as the other's; its limits keep it from crowding out the others.
var operatorManaged = requireOperator("only an operator API key may rename a tenant or change its limits: people tell tenants apart by name in the portal, and limits keep one tenant from crowding out the others, so the operator sets both; ask your operator to change them")

// requireOperator returns a guard that refuses every caller but an operator
// API key with a 403 saying detail.
func requireOperator(detail string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !principal(r).Operator() {
				writeProblem(w, r, forbidden(detail))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// apiKeyOnly guards the routes a portal session may not use: minting API
// keys or portal links would outlive the session, and publishing is the
// producer's job, not the webhook receiver's.
func apiKeyOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if principal(r).Kind != auth.KindAPIKey {
			writeProblem(w, r, forbidden("this route needs an API key; a portal session cannot manage keys, mint portal links or publish"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// tenantVisible answers 404 to a caller that may not see the tenant of
// the route, as tenantScope does, without asking whether it exists: a key
// of another tenant learns nothing about it.
func tenantVisible(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tenantID := chi.URLParam(r, "tenantID")
		if !validTenantID.MatchString(tenantID) || !principal(r).CanAccess(tenantID) {
			writeProblem(w, r, notFound("tenant "+quote(tenantID)))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// tenantScope guards every route under /v1/tenants/{tenantID}: a caller
// that may not see the tenant gets the same 404 as for a tenant that does
// not exist (or is being erased), so keys learn nothing about other
// tenants. A caller scoped to the tenant proves it exists and is not being
// erased: its key or session is deleted when the tenant's erasure starts,
// and a cached key with it (auth.KeyCache).
func (s *Server) tenantScope(next http.Handler) http.Handler {
	return tenantVisible(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tenantID := chi.URLParam(r, "tenantID")
		if principal(r).TenantID == tenantID {
			next.ServeHTTP(w, r)
			return
		}
		var exists bool
		if err := s.pool.QueryRow(r.Context(), tenantExists, tenantID).Scan(&exists); err != nil {
			writeProblem(w, r, s.asProblem(r, err))
			return
		}
		if !exists {
			writeProblem(w, r, notFound("tenant "+quote(tenantID)))
			return
		}
		next.ServeHTTP(w, r)
	}))
}

// metricsAuth guards /metrics with s.metricsToken when one is set. A wrong
// or missing token counts against the client's address like any failed
// authentication.
func (s *Server) metricsAuth(next http.Handler) http.Handler {
	if s.metricsToken == "" {
		return next
	}
	want := []byte(s.metricsToken)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		client := clientaddr.From(r)
		if s.throttled(w, r, client, "the metrics token") {
			return
		}
		scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(token)), want) != 1 {
			s.throttle.Fail(client)
			w.Header().Set("WWW-Authenticate", `Bearer realm="herald-metrics"`)
			writeProblem(w, r, problem(http.StatusUnauthorized, "unauthenticated",
				"/metrics needs the metrics token (--metrics-token); send it as the header Authorization: Bearer <token>"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// throttled answers 429 with Retry-After, and reports true, when client has
// spent its failed authentications; credential names what it should check.
func (s *Server) throttled(w http.ResponseWriter, r *http.Request, client netip.Addr, credential string) bool {
	wait := s.throttle.Wait(client)
	if wait <= 0 {
		return false
	}
	seconds := int(math.Ceil(wait.Seconds()))
	w.Header().Set("Retry-After", strconv.Itoa(seconds))
	writeProblem(w, r, problem(http.StatusTooManyRequests, "too-many-failed-authentications", fmt.Sprintf(
		"too many failed authentications came from your address; wait %d s (Retry-After) before the next request, and check %s you send", seconds, credential)))
	return true
}
