package portal_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/portal"
)

// setupEmbedded serves a portal configured with cfg's FrameAncestors and
// Branding, over TLS when tls is true.
func setupEmbedded(t *testing.T, cfg portal.Config, tls bool) *testBundle {
	t.Helper()
	pool := pgtest.NewPool(t)
	st := newStore(t, pool)
	cfg.Pool, cfg.Store = pool, st
	p, err := portal.New(cfg)
	require.NoError(t, err)
	r := chi.NewRouter()
	r.Mount(portal.Path, p)
	server := httptest.NewUnstartedServer(r)
	if tls {
		server.StartTLS()
	} else {
		server.Start()
	}
	t.Cleanup(server.Close)
	b := &testBundle{pool: pool, store: st, server: server}
	b.fixture(t, "acme")
	return b
}

func (b *testBundle) tlsBrowser(t *testing.T) *browser {
	br := b.browser(t)
	br.client.Transport = b.server.Client().Transport
	return br
}

// By default no page may frame the portal.
func TestPortalRefusesFramesByDefault(t *testing.T) {
	t.Parallel()
	b := setup(t)
	resp := b.browser(t).get(auth.PortalLoginPath)
	require.Contains(t, resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'")
	require.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"))
}

// With frame ancestors, only they may frame the portal, and over TLS its
// cookies work in their frames: SameSite=None, Secure and partitioned.
// Over plain HTTP the cookies keep their SameSite=Lax or Strict.
func TestPortalFramedByItsAncestorsOnly(t *testing.T) {
	t.Parallel()
	cfg := portal.Config{FrameAncestors: []string{"https://app.example.com", "https://*.example.org"}}
	b := setupEmbedded(t, cfg, true)
	br := b.tlsBrowser(t)

	page := br.get(b.link(t, "acme"))
	require.Contains(t, page.Header.Get("Content-Security-Policy"), "frame-ancestors https://app.example.com https://*.example.org;")
	require.Empty(t, page.Header.Get("X-Frame-Options"))
	requireFramedCookie(t, page.Response)
	confirmed := br.post(auth.PortalLoginPath, loginForm(t, page))
	require.Equal(t, http.StatusSeeOther, confirmed.StatusCode, confirmed.body)
	requireFramedCookie(t, confirmed.Response)

	plain := setupEmbedded(t, cfg, false)
	resp := plain.browser(t).get(plain.link(t, "acme"))
	require.Contains(t, resp.Header.Get("Set-Cookie"), "SameSite=Strict", "the sign-in nonce, as without frames")
	require.NotContains(t, resp.Header.Get("Set-Cookie"), "Partitioned")
}

func requireFramedCookie(t *testing.T, resp *http.Response) {
	t.Helper()
	cookies := resp.Header.Values("Set-Cookie")
	require.NotEmpty(t, cookies)
	for _, c := range cookies {
		for _, attr := range []string{"HttpOnly", "Secure", "SameSite=None", "Partitioned"} {
			require.Contains(t, c, attr)
		}
	}
}

// With SameSite=None the session cookie comes along with a post from another
// site; the CSRF token and the browser's word about where the post came
// from still refuse it.
func TestFramedPortalRefusesCrossSitePosts(t *testing.T) {
	t.Parallel()
	b := setupEmbedded(t, portal.Config{FrameAncestors: []string{"https://app.example.com"}}, true)
	br := b.tlsBrowser(t)
	br.open(b.link(t, "acme"))
	token := br.csrf()

	for name, header := range map[string]map[string]string{
		"another site, token stolen":         {"Sec-Fetch-Site": "cross-site"},
		"a sibling subdomain, token stolen":  {"Sec-Fetch-Site": "same-site"},
		"an origin header from another site": {"Origin": "https://evil.example"},
	} {
		req, err := http.NewRequest(http.MethodPost, br.base+"/portal/logout", strings.NewReader(url.Values{"csrf": {token}}.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := br.client.Do(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusForbidden, resp.StatusCode, name)
	}
	resp := br.post("/portal/logout", url.Values{"csrf": {"forged"}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "without the session's token")
	require.Equal(t, http.StatusOK, br.get("/portal/endpoints").StatusCode, "still signed in")
}

// Branding changes the portal's name, colour, logo and support link, and
// the logo's origin is the one more place images may come from.
func TestPortalBranding(t *testing.T) {
	t.Parallel()
	b := setupEmbedded(t, portal.Config{Branding: portal.Branding{
		ProductName: "Acme <Hooks>",
		AccentColor: "#d33f49",
		LogoURL:     "https://cdn.acme.example/logo.svg",
		SupportURL:  "https://help.acme.example/webhooks",
	}}, false)
	br := b.signIn(t, "acme")
	page := br.get("/portal/endpoints")
	require.Contains(t, page.body, "<title>Endpoints · Acme &lt;Hooks&gt;</title>")
	require.Contains(t, page.body, `<img class="logo" src="https://cdn.acme.example/logo.svg" alt="Acme &lt;Hooks&gt;">`)
	require.Contains(t, page.body, `href="https://help.acme.example/webhooks"`)
	require.Contains(t, page.body, `href="/portal/brand.css"`)
	require.Contains(t, page.Header.Get("Content-Security-Policy"), "img-src 'self' data: https://cdn.acme.example;")
	css := br.get("/portal/brand.css")
	require.Equal(t, ":root { --accent: #d33f49; }\n", css.body)
	require.Equal(t, "text/css; charset=utf-8", css.Header.Get("Content-Type"))
}

// Branding and frame ancestors are checked: a colour must be a colour, a
// URL https, an ancestor an origin.
func TestPortalRefusesBadBrandingAndAncestors(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	st := newStore(t, pool)
	for _, tt := range []struct {
		cfg  portal.Config
		want string
	}{
		{portal.Config{Branding: portal.Branding{AccentColor: "red; } body { display: none"}}, `accent-color "red; } body { display: none" is not a colour; give it in hex, like #2f5bd3`},
		{portal.Config{Branding: portal.Branding{AccentColor: "#12345"}}, "is not a colour"},
		{portal.Config{Branding: portal.Branding{LogoURL: "http://cdn.example/logo.png"}}, `logo-url "http://cdn.example/logo.png" is not an https URL`},
		{portal.Config{Branding: portal.Branding{SupportURL: "javascript:alert(1)"}}, `support-url "javascript:alert(1)" is not an https URL`},
		{portal.Config{Branding: portal.Branding{ProductName: strings.Repeat("x", 65)}}, "must be 1 to 64 printable characters"},
		{portal.Config{Branding: portal.Branding{ProductName: "Acme\nHooks"}}, "must be 1 to 64 printable characters"},
		{portal.Config{FrameAncestors: []string{"*"}}, `frame ancestor "*" is not an origin`},
		{portal.Config{FrameAncestors: []string{"https://app.example.com/embed"}}, "has more than an origin"},
		{portal.Config{FrameAncestors: []string{"https://app.example.com; script-src *"}}, "is not an origin"},
	} {
		tt.cfg.Pool, tt.cfg.Store = pool, st
		_, err := portal.New(tt.cfg)
		require.ErrorContains(t, err, tt.want)
	}
	origins, err := portal.ParseFrameAncestors(" https://App.Example.com, http://localhost:3000 ,")
	require.NoError(t, err)
	require.Equal(t, []string{"https://app.example.com", "http://localhost:3000"}, origins)
}
