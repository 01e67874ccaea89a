package portal

import (
	"net/http"
	"strings"
)

// contentSecurityPolicy allows scripts, styles and fetches from the portal's
// own origin only: no inline script or style, forms post only here. Inline
// SVG charts are markup, not images, so they need nothing more. Images may
// also come from the brand's logo origin, when there is one; only
// frameAncestors may frame the portal ('none' when there are none).
func contentSecurityPolicy(frameAncestors []string, logoOrigin string) string {
	img := "'self' data:"
	if logoOrigin != "" {
		img += " " + logoOrigin
	}
	ancestors := "'none'"
	if len(frameAncestors) > 0 {
		ancestors = strings.Join(frameAncestors, " ")
	}
	return "default-src 'none'; script-src 'self'; style-src 'self'; img-src " + img + "; " +
		"connect-src 'self'; form-action 'self'; frame-ancestors " + ancestors + "; base-uri 'none'"
}

// securityHeaders sets the headers every portal response carries. Pages are
// never cached (they show secrets and per-session tokens); static assets
// override Cache-Control. X-Frame-Options, which cannot name the origins
// that may frame the portal, is sent only when none may.
func (p *Portal) securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", p.csp)
		h.Set("X-Content-Type-Options", "nosniff")
		if !p.framingAllowed() {
			h.Set("X-Frame-Options", "DENY")
		}
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}
