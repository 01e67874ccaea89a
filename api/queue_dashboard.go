package api

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"riverqueue.com/riverui"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/clientaddr"
	"github.com/heraldhq/herald/migrations"
)

// QueueDashboardPath is where the api serves the queue dashboard, River UI
// (Config.QueueDashboard): River's queues, jobs and their errors, for
// operators only.
const QueueDashboardPath = "/riverui"

// queueDashboardCookie holds the operator session (auth.OpenOperatorSession)
// a browser signed in to the dashboard with: a random token, of which only
// the hash is stored, never the operator key the person typed. HttpOnly,
// SameSite=Strict, scoped to QueueDashboardPath, Secure on TLS. Every
// request checks the session again, so it ends after
// auth.DefaultOperatorSessionTTL (8 hours), at sign-out, or as soon as its
// key is revoked.
const queueDashboardCookie = "herald_operator"

// NewQueueDashboard builds River UI on Herald's River schema and starts its
// background services, which stop when ctx ends. Give the handler to
// Config.QueueDashboard; the api serves it to operators only.
func NewQueueDashboard(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) (http.Handler, error) {
	if logger == nil {
		logger = slog.Default()
	}
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Schema: migrations.Schema, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("queue dashboard: River client: %w", err)
	}
	h, err := riverui.NewHandler(&riverui.HandlerOpts{
		Endpoints: riverui.NewEndpoints(client, nil),
		Logger:    logger,
		Prefix:    QueueDashboardPath,
	})
	if err != nil {
		return nil, fmt.Errorf("queue dashboard: River UI: %w", err)
	}
	if err := h.Start(ctx); err != nil {
		return nil, fmt.Errorf("queue dashboard: start River UI: %w", err)
	}
	return h, nil
}

// queueDashboardRoutes serves the dashboard behind the operator check. Its
// state-changing requests (River UI's job actions, the sign-in form) must
// come from the dashboard's own origin: net/http's CrossOriginProtection
// refuses any that the browser marks cross-origin (Sec-Fetch-Site, Origin),
// on top of the SameSite=Strict cookie. Its pages may not be framed.
func (s *Server) queueDashboardRoutes(dashboard http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+QueueDashboardPath+"/sign-in", s.queueDashboardSignIn)
	mux.HandleFunc("POST "+QueueDashboardPath+"/sign-out", s.queueDashboardSignOut)
	mux.Handle(QueueDashboardPath+"/", s.requireOperatorBrowser(dashboard))
	mux.Handle(QueueDashboardPath, http.RedirectHandler(QueueDashboardPath+"/", http.StatusSeeOther))
	protected := http.NewCrossOriginProtection().Handler(mux)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "frame-ancestors 'none'")
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Cache-Control", "no-store")
		protected.ServeHTTP(w, r)
	})
}

// requireOperatorBrowser lets through an operator API key sent as a bearer
// token, or an operator session held in the dashboard's cookie. Without
// either a browser gets the sign-in page (401); a key scoped to a tenant
// gets 403.
func (s *Server) requireOperatorBrowser(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		client := clientaddr.From(r)
		if s.throttled(w, r, client, "the API key") {
			return
		}
		var p auth.Principal
		if scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " "); strings.EqualFold(scheme, "Bearer") {
			var ok bool
			if p, ok = s.dashboardOperator(w, r, client, strings.TrimSpace(token)); !ok {
				return
			}
		} else if c, err := r.Cookie(queueDashboardCookie); err == nil && c.Value != "" {
			p, err = auth.AuthenticateOperatorSession(r.Context(), s.pool, c.Value)
			switch {
			case errors.Is(err, auth.ErrUnauthenticated):
				s.throttle.Fail(client)
				renderSignIn(w, http.StatusUnauthorized, "Your session has ended (it expired, you signed out, or its key was revoked). Sign in again with an operator API key.")
				return
			case err != nil:
				writeProblem(w, r, s.asProblem(r, err))
				return
			}
		} else {
			renderSignIn(w, http.StatusUnauthorized, "")
			return
		}
		if holder, ok := r.Context().Value(principalHolderKey{}).(*principalHolder); ok {
			holder.p = &p
		}
		next.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
	})
}

// queueDashboardSignIn checks the operator key posted by the sign-in page
// and opens an operator session for it, kept in the dashboard's cookie.
func (s *Server) queueDashboardSignIn(w http.ResponseWriter, r *http.Request) {
	client := clientaddr.From(r)
	if s.throttled(w, r, client, "the API key") {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	p, ok := s.dashboardOperator(w, r, client, strings.TrimSpace(r.PostFormValue("key")))
	if !ok {
		return
	}
	session, err := auth.OpenOperatorSession(r.Context(), s.pool, p, 0)
	if err != nil {
		writeProblem(w, r, s.asProblem(r, err))
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name:     queueDashboardCookie,
		Value:    session.Token,
		Path:     QueueDashboardPath,
		Expires:  session.ExpiresAt,
		HttpOnly: true,
		Secure:   r.TLS != nil || strings.HasPrefix(s.publicURL, "https://"),
		SameSite: http.SameSiteStrictMode,
	})
	http.Redirect(w, r, QueueDashboardPath+"/", http.StatusSeeOther)
}

// queueDashboardSignOut ends the browser's operator session and forgets
// its cookie.
func (s *Server) queueDashboardSignOut(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(queueDashboardCookie); err == nil && c.Value != "" {
		if err := auth.EndOperatorSession(r.Context(), s.pool, c.Value); err != nil {
			writeProblem(w, r, s.asProblem(r, err))
			return
		}
	}
	http.SetCookie(w, &http.Cookie{Name: queueDashboardCookie, Value: "", Path: QueueDashboardPath, MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	renderSignIn(w, http.StatusOK, "Signed out.")
}

var signInPage = template.Must(template.New("sign-in").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Herald queue dashboard: sign in</title></head>
<body>
<h1>Herald queue dashboard</h1>
{{if .}}<p id="message">{{.}}</p>{{end}}
<form method="post" action="` + QueueDashboardPath + `/sign-in">
<label>Operator API key <input type="password" name="key" autocomplete="off" required></label>
<button type="submit">Sign in</button>
</form>
</body></html>
`))

func renderSignIn(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = signInPage.Execute(w, message)
}

// dashboardOperator authenticates token as an operator key for the queue
// dashboard. When it is not one it answers (the sign-in page with the
// reason, counting a failed sign-in against client) and returns false.
func (s *Server) dashboardOperator(w http.ResponseWriter, r *http.Request, client netip.Addr, token string) (auth.Principal, bool) {
	p, err := auth.Authenticate(r.Context(), s.pool, token)
	switch {
	case errors.Is(err, auth.ErrUnauthenticated):
		s.throttle.Fail(client)
		renderSignIn(w, http.StatusUnauthorized, "That API key is unknown, revoked or expired. Sign in with an operator API key.")
		return auth.Principal{}, false
	case err != nil:
		writeProblem(w, r, s.asProblem(r, err))
		return auth.Principal{}, false
	case !p.Operator():
		renderSignIn(w, http.StatusForbidden, "The queue dashboard shows every tenant's jobs and needs an operator API key; this key is scoped to one tenant.")
		return auth.Principal{}, false
	}
	return p, true
}
