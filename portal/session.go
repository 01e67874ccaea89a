package portal

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/auth"
)

// cookieName holds the portal session token. The cookie is scoped to Path,
// HttpOnly (no script can read it), SameSite=Lax (not sent with cross-site
// form posts; SameSite=None inside a permitted frame, see embedding.go) and
// Secure on TLS.
const cookieName = "herald_portal"

// maxFormBytes bounds a form body; the largest form (an endpoint) is far
// smaller.
const maxFormBytes = 64 << 10

// session is the signed-in browser: one tenant, and the CSRF token its forms
// must carry.
type session struct {
	TenantID   string
	TenantName string
	CSRF       string
	token      string
	// id is the session's id, the credential its rate limits count by.
	id uuid.UUID
}

// page fills the fields every template needs.
func (s *session) page(title, nav string, data any) layoutData {
	return layoutData{Title: title, Nav: nav, Tenant: s.TenantID, TenantName: s.TenantName, CSRF: s.CSRF, Data: data}
}

type sessionKey struct{}

func sessionFrom(ctx context.Context) *session {
	s, _ := ctx.Value(sessionKey{}).(*session)
	return s
}

// csrfToken derives the session's CSRF token from its secret session token:
// a page can embed it, a cross-site attacker (who cannot read the HttpOnly
// cookie) cannot compute it, and nothing more needs storing.
func csrfToken(sessionToken string) string {
	mac := hmac.New(sha256.New, []byte(sessionToken))
	mac.Write([]byte("herald portal csrf"))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

var (
	errNoSession = &pageError{status: http.StatusUnauthorized, heading: "Please open the portal from your account",
		message: "You are not signed in to the webhook portal, or your session has ended. Open the portal again from the application that sent you here to get a new link."}
	errCSRF = &pageError{status: http.StatusForbidden, heading: "This form has expired",
		message: "The form was not sent from this portal session (its security token is missing or out of date). Go back, reload the page and try again."}
)

// sentence turns an error message ("this portal link has expired; ask for a
// new one") into a sentence for a page.
func sentence(msg string) string {
	if msg == "" {
		return msg
	}
	r, size := utf8.DecodeRuneInString(msg)
	return string(unicode.ToUpper(r)) + msg[size:] + "."
}

func (p *Portal) secure(r *http.Request) bool {
	return r.TLS != nil || p.cfg.SecureCookies
}

// requireSession resolves the cookie to a session (a cookie that names no
// session is a failed sign-in, throttled like a link that does not work),
// and on every state-changing
// request checks that it came from one of this session's own pages: the
// Origin header, when the browser sends one, must be this host, and the form
// must carry the session's CSRF token.
func (p *Portal) requireSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie(cookieName)
		if err != nil || c.Value == "" {
			p.renderError(w, r, nil, errNoSession)
			return
		}
		if p.throttled(w, r) {
			return
		}
		principal, err := auth.PortalSession(r.Context(), p.pool, c.Value)
		if errors.Is(err, auth.ErrUnauthenticated) {
			p.signInFailed(r)
			p.renderError(w, r, nil, errNoSession)
			return
		}
		if err != nil {
			p.fail(w, r, err)
			return
		}
		s := &session{TenantID: principal.TenantID, CSRF: csrfToken(c.Value), token: c.Value, id: principal.ID}
		if err := p.pool.QueryRow(r.Context(), selectTenantName, s.TenantID).Scan(&s.TenantName); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				p.renderError(w, r, nil, errNoSession)
				return
			}
			p.fail(w, r, fmt.Errorf("load tenant %s: %w", s.TenantID, err))
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
			if !sameOrigin(r) || !hmac.Equal([]byte(r.PostFormValue("csrf")), []byte(s.CSRF)) {
				p.renderError(w, r, s, errCSRF)
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, s)))
	})
}

// sameOrigin reports whether the request came from the portal's own pages,
// as far as the browser says: Sec-Fetch-Site, when sent, must be
// same-origin (a form inside a frame on another site is still same-origin
// with the portal: the frame's document is the portal's), and the Origin
// header, when present, must name this host. Browsers send Origin with
// every POST ("null" from sandboxed or privacy-stripped contexts, which is
// refused); its absence (older clients) leaves the CSRF token as the
// check. The portal's Referrer-Policy is same-origin, not no-referrer,
// because with no-referrer browsers send "null" for the portal's own forms.
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host == r.Host
}

// handle adapts a page handler that returns an error: a *pageError is shown
// to the person with its status; anything else is logged and shown as a 500.
func (p *Portal) handle(h func(w http.ResponseWriter, r *http.Request, s *session) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s := sessionFrom(r.Context())
		if err := h(w, r, s); err != nil {
			p.renderError(w, r, s, err)
		}
	}
}

func (p *Portal) logout(w http.ResponseWriter, r *http.Request, s *session) error {
	if err := auth.EndPortalSession(r.Context(), p.pool, s.token); err != nil {
		return err
	}
	ended := p.cookie(r, cookieName, "", Path, http.SameSiteLaxMode)
	ended.MaxAge = -1
	http.SetCookie(w, ended)
	p.render(w, r, http.StatusOK, "error", layoutData{Title: "Signed out", Data: struct{ Heading, Message string }{
		"Signed out", "You have left the webhook portal. Open it again from the application that sent you here.",
	}})
	return nil
}
