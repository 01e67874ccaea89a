package portal

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Embedding the portal in another application's pages.
//
// By default no page may frame the portal (frame-ancestors 'none',
// X-Frame-Options DENY). Config.FrameAncestors lists the origins that may:
// the portal's Content-Security-Policy names them in frame-ancestors, so
// no other site can frame it (clickjacking), and X-Frame-Options, which
// cannot express a list, is left out.
//
// A frame from another site is a third-party context: browsers send it no
// SameSite=Lax or Strict cookie. So when framing is allowed and the
// request is secure (TLS, or Config.SecureCookies behind a TLS proxy), the
// portal's cookies are SameSite=None; Secure; Partitioned: sent inside the
// frame, kept in a jar of the embedding site's own (CHIPS), so they work
// where browsers block third-party cookies and cannot follow the person to
// other sites. Over plain HTTP they stay SameSite=Lax: a frame on the same
// site (app.example.com framing webhooks.example.com) still works.
//
// SameSite=None means a cross-site form post carries the session cookie;
// what stops a forged one is what stopped it before, now without the
// cookie's help: every state-changing request must carry the session's
// CSRF token, which another site cannot read or compute (the cookie is
// HttpOnly, the pages are not readable cross-origin), and it is refused
// when the browser says it came from another origin (Origin,
// Sec-Fetch-Site); see requireSession and sameOrigin.

// ParseFrameAncestors checks a comma-separated list of origins that may
// frame the portal, like "https://app.example.com, https://*.example.org",
// and returns them; an empty list means none. Each is a scheme (https, or
// http for development) and a host with an optional port, which may start
// with "*." for every subdomain; nothing else (no path, no 'self', no *
// alone, which would let any site frame it).
func ParseFrameAncestors(list string) ([]string, error) {
	var origins []string
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		origin, err := checkFrameAncestor(item)
		if err != nil {
			return nil, err
		}
		origins = append(origins, origin)
	}
	return origins, nil
}

func checkFrameAncestor(origin string) (string, error) {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", fmt.Errorf("frame ancestor %q is not an origin; give the scheme and host of the page that embeds the portal, like https://app.example.com", origin)
	}
	if u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("frame ancestor %q has more than an origin; give only the scheme, host and port, like https://app.example.com", origin)
	}
	host := strings.TrimPrefix(u.Hostname(), "*.")
	if host == "" || strings.ContainsAny(host, "*;' ") {
		return "", fmt.Errorf("frame ancestor %q has a malformed host; a wildcard may only start it, like https://*.example.com", origin)
	}
	return u.Scheme + "://" + strings.ToLower(u.Host), nil
}

// framingAllowed reports whether some origin may frame the portal.
func (p *Portal) framingAllowed() bool { return len(p.cfg.FrameAncestors) > 0 }

// framedCookies reports whether r's cookies must work inside a frame from
// another site: SameSite=None, Secure and Partitioned.
func (p *Portal) framedCookies(r *http.Request) bool {
	return p.framingAllowed() && p.secure(r)
}

// cookie returns a portal cookie with the attributes this request calls
// for: HttpOnly, Secure on TLS, and sameSite unless it must work in a
// frame from another site (framedCookies). Clearing a cookie uses the same
// attributes, or a partitioned cookie would stay.
func (p *Portal) cookie(r *http.Request, name, value, path string, sameSite http.SameSite) *http.Cookie {
	c := &http.Cookie{Name: name, Value: value, Path: path, HttpOnly: true, Secure: p.secure(r), SameSite: sameSite}
	if p.framedCookies(r) {
		c.SameSite, c.Secure, c.Partitioned = http.SameSiteNoneMode, true, true
	}
	return c
}
