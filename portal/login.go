package portal

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/clientaddr"
)

// Signing in takes two steps, so that opening a link changes nothing:
//
//  1. GET auth.PortalLoginPath?token=… shows which tenant the link opens
//     and, when the browser already has a session, which tenant that one
//     belongs to. The link is looked at, not spent: link scanners and
//     prefetchers that fetch it neither use it up nor sign anyone in.
//  2. The page's form POSTs the token back. Only then is the link redeemed,
//     the previous session ended and the new session's cookie set.
//
// The POST is protected like every other form, with no session yet to tie a
// token to: the page sets loginCookieName to a random nonce and the form
// carries loginCSRF(nonce, link token). Another site cannot read the cookie
// (HttpOnly), nor get it sent with its own posts (SameSite=Strict; None in
// a permitted frame, see embedding.go, where the token alone stops it), so
// it cannot sign a visitor in to the attacker's tenant (login CSRF); the
// Origin header, when present, must be this host as well.

// loginCookieName holds the nonce the sign-in form's token is derived from.
// It is scoped to auth.PortalLoginPath.
const loginCookieName = "herald_portal_login"

// loginCookieTTL is how long a confirmation page's form stays usable. A
// person who waits longer opens the link again (it is not spent).
const loginCookieTTL = time.Hour

// tenantRef is a tenant as the confirmation page names it.
type tenantRef struct {
	ID   string
	Name string
}

// loginPage is the confirmation page: the tenant the link opens, the one
// the current session (if any) belongs to, and the form's hidden fields.
type loginPage struct {
	Tenant  tenantRef
	Current *tenantRef
	Token   string
	CSRF    string
}

var errLoginCSRF = &pageError{status: http.StatusForbidden, heading: "This sign-in form has expired",
	message: "The sign-in was not sent from this portal's own confirmation page, or the page was open too long. Open the link you were given again and confirm there."}

// confirmLogin shows what a portal link opens, without spending it.
func (p *Portal) confirmLogin(w http.ResponseWriter, r *http.Request) {
	if p.throttled(w, r) {
		return
	}
	token := r.URL.Query().Get("token")
	link, err := auth.LookUpPortalLink(r.Context(), p.pool, token)
	if err != nil {
		p.renderLinkError(w, r, err)
		return
	}
	page := loginPage{Tenant: tenantRef{ID: link.TenantID}, Token: token}
	if err := p.pool.QueryRow(r.Context(), selectTenantName, link.TenantID).Scan(&page.Tenant.Name); err != nil {
		p.fail(w, r, fmt.Errorf("load tenant %s: %w", link.TenantID, err))
		return
	}
	if page.Current, err = p.currentTenant(r); err != nil {
		p.fail(w, r, err)
		return
	}
	nonce := loginNonce(r)
	page.CSRF = loginCSRF(nonce, token)
	c := p.cookie(r, loginCookieName, nonce, auth.PortalLoginPath, http.SameSiteStrictMode)
	c.MaxAge = int(loginCookieTTL / time.Second)
	http.SetCookie(w, c)
	p.render(w, r, http.StatusOK, "login", layoutData{Title: "Open the webhook portal", Data: page})
}

// login redeems a portal link confirmed on its page: the token works once
// and only before it expires. On success a session previously held by this
// browser ends, the browser gets the new session's cookie and is sent to the
// endpoints page.
func (p *Portal) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	token := r.PostFormValue("token")
	nonce, err := r.Cookie(loginCookieName)
	if err != nil || nonce.Value == "" || !sameOrigin(r) ||
		!hmac.Equal([]byte(r.PostFormValue("csrf")), []byte(loginCSRF(nonce.Value, token))) {
		p.renderError(w, r, nil, errLoginCSRF)
		return
	}
	if p.throttled(w, r) {
		return
	}
	s, err := auth.RedeemPortalLink(r.Context(), p.pool, token, p.cfg.SessionTTL)
	if err != nil {
		p.renderLinkError(w, r, err)
		return
	}
	if old, err := r.Cookie(cookieName); err == nil && old.Value != "" {
		if err := auth.EndPortalSession(r.Context(), p.pool, old.Value); err != nil {
			p.fail(w, r, err)
			return
		}
	}
	spent := p.cookie(r, loginCookieName, "", auth.PortalLoginPath, http.SameSiteStrictMode)
	spent.MaxAge = -1
	http.SetCookie(w, spent)
	session := p.cookie(r, cookieName, s.Token, Path, http.SameSiteLaxMode)
	session.Expires, session.MaxAge = s.ExpiresAt, int(time.Until(s.ExpiresAt).Seconds())
	http.SetCookie(w, session)
	http.Redirect(w, r, Path+"/endpoints", http.StatusSeeOther)
}

// throttled answers 429 when the client's address has failed to sign in
// too often (auth.FailureThrottle), and reports whether it did. It comes
// before any token is looked at, so a guesser learns nothing while it waits.
func (p *Portal) throttled(w http.ResponseWriter, r *http.Request) bool {
	wait := p.cfg.AuthThrottle.Wait(clientaddr.From(r))
	if wait <= 0 {
		return false
	}
	seconds := int(math.Ceil(wait.Seconds()))
	w.Header().Set("Retry-After", strconv.Itoa(seconds))
	p.renderError(w, r, nil, &pageError{status: http.StatusTooManyRequests, heading: "Too many failed sign-ins",
		message: fmt.Sprintf("Too many failed sign-ins came from your network. Wait %d seconds, then open the link you were given again.", seconds)})
	return true
}

// signInFailed counts a failed sign-in against the client's address.
func (p *Portal) signInFailed(r *http.Request) {
	p.cfg.AuthThrottle.Fail(clientaddr.From(r))
}

// renderLinkError explains why a link cannot be used, or fails on any other
// error. A link that does not work is a failed sign-in.
func (p *Portal) renderLinkError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, auth.ErrLinkUnknown) || errors.Is(err, auth.ErrLinkUsed) || errors.Is(err, auth.ErrLinkExpired) {
		p.signInFailed(r)
	}
	switch {
	case errors.Is(err, auth.ErrLinkUnknown):
		p.renderError(w, r, nil, &pageError{status: http.StatusNotFound, heading: "This link does not work", message: sentence(err.Error())})
	case errors.Is(err, auth.ErrLinkUsed), errors.Is(err, auth.ErrLinkExpired):
		p.renderError(w, r, nil, &pageError{status: http.StatusGone, heading: "This link does not work any more", message: sentence(err.Error())})
	default:
		p.fail(w, r, fmt.Errorf("portal link: %w", err))
	}
}

// currentTenant is the tenant of the session the browser already holds, or
// nil when it holds none that is still valid.
func (p *Portal) currentTenant(r *http.Request) (*tenantRef, error) {
	c, err := r.Cookie(cookieName)
	if err != nil || c.Value == "" {
		return nil, nil
	}
	principal, err := auth.PortalSession(r.Context(), p.pool, c.Value)
	if errors.Is(err, auth.ErrUnauthenticated) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	current := &tenantRef{ID: principal.TenantID}
	err = p.pool.QueryRow(r.Context(), selectTenantName, current.ID).Scan(&current.Name)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load tenant %s: %w", current.ID, err)
	}
	return current, nil
}

// loginNonce keeps the browser's nonce when it has one, so that two
// confirmation pages open side by side both stay usable; otherwise it makes
// a new one.
func loginNonce(r *http.Request) string {
	if c, err := r.Cookie(loginCookieName); err == nil && len(c.Value) == nonceLength {
		return c.Value
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return base64.RawURLEncoding.EncodeToString(b)
}

// nonceLength is the length of a nonce: 32 bytes in unpadded base64.
var nonceLength = base64.RawURLEncoding.EncodedLen(32)

// loginCSRF derives the sign-in form's token from the browser's nonce and
// the link's token, so it is good for that browser and that link only.
func loginCSRF(nonce, linkToken string) string {
	mac := hmac.New(sha256.New, []byte(nonce))
	mac.Write([]byte("herald portal login\x00" + linkToken))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}
