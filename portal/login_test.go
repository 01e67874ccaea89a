package portal_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// loginForm reads the hidden fields of the confirmation page's sign-in form.
func loginForm(t *testing.T, page response) url.Values {
	t.Helper()
	require.Regexp(t, `<form method="post" action="/portal/login"`, page.body, "the page posts to /portal/login")
	form := url.Values{}
	for _, name := range []string{"token", "csrf"} {
		m := regexp.MustCompile(`name="` + name + `" value="([^"]+)"`).FindStringSubmatch(page.body)
		require.NotNil(t, m, "the sign-in form has no %s field", name)
		form.Set(name, m[1])
	}
	return form
}

func (b *testBundle) linkUsed(t *testing.T) bool {
	t.Helper()
	var used bool
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT bool_or(used_at IS NOT NULL) FROM herald.portal_links`).Scan(&used))
	return used
}

// Opening a link only shows what it opens; link scanners and prefetchers,
// which GET, neither sign anyone in nor use the link up.
func TestOpeningALinkOnlyShowsAConfirmation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.fixture(t, "acme")
	link := b.link(t, "acme")

	for range 2 {
		scanner := b.browser(t).get(link)
		require.Equal(t, http.StatusOK, scanner.StatusCode, "a GET shows the confirmation page")
		for _, c := range scanner.Cookies() {
			require.NotEqual(t, "herald_portal", c.Name, "a GET opens no session")
		}
		require.Contains(t, scanner.body, "Tenant acme", "the page names the tenant")
		require.Contains(t, scanner.body, "<code>acme</code>", "and its id")
		require.False(t, b.linkUsed(t), "a GET does not use the link up")
	}

	br := b.browser(t)
	page := br.get(link)
	var nonce *http.Cookie
	for _, c := range page.Cookies() {
		if c.Name == "herald_portal_login" {
			nonce = c
		}
	}
	require.NotNil(t, nonce, "the page sets the sign-in form's cookie")
	require.True(t, nonce.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, nonce.SameSite, "never sent with another site's posts")
	require.Equal(t, "/portal/login", nonce.Path)
	resp := br.post("/portal/login", loginForm(t, page))
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, resp.body)
	require.Equal(t, "/portal/endpoints", resp.Header.Get("Location"))
	require.True(t, b.linkUsed(t))
	require.Contains(t, br.get("/portal/endpoints").body, "https://acme.example.com/hooks")

	again := b.browser(t)
	resp = again.get(link)
	require.Equal(t, http.StatusGone, resp.StatusCode)
	require.Contains(t, resp.body, "already been used")
}

// The sign-in POST carries a token bound to a cookie the confirmation page
// set, and must come from the portal's origin: another site cannot sign a
// visitor in to the attacker's tenant (login CSRF).
func TestSigningInNeedsTheConfirmationPagesToken(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.fixture(t, "acme")
	link := b.link(t, "acme")
	br := b.browser(t)
	page := br.get(link)
	require.Equal(t, http.StatusOK, page.StatusCode)
	form := loginForm(t, page)

	victim := b.browser(t)
	resp := victim.post("/portal/login", form)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "a browser that did not see the page")

	forged := url.Values{"token": {form.Get("token")}, "csrf": {"forged"}}
	require.Equal(t, http.StatusForbidden, br.post("/portal/login", forged).StatusCode, "a wrong token")
	require.Equal(t, http.StatusForbidden, br.post("/portal/login", url.Values{"token": {form.Get("token")}}).StatusCode, "no token")

	req, err := http.NewRequest(http.MethodPost, b.server.URL+"/portal/login", strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	cross, err := br.client.Do(req)
	require.NoError(t, err)
	cross.Body.Close()
	require.Equal(t, http.StatusForbidden, cross.StatusCode, "a cross-origin post")

	other := b.link(t, "acme")
	swapped := url.Values{"token": {strings.TrimPrefix(other, "/portal/login?token=")}, "csrf": {form.Get("csrf")}}
	require.Equal(t, http.StatusForbidden, br.post("/portal/login", swapped).StatusCode, "the page's token is for its own link only")

	require.False(t, b.linkUsed(t), "no refused post used a link up")
	require.Equal(t, http.StatusSeeOther, br.post("/portal/login", form).StatusCode)
}

// A visitor signed in to one tenant who opens a link to another sees both
// before the session is replaced, and the replaced session ends.
func TestConfirmationNamesTheSessionItReplaces(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.fixture(t, "tenant-a")
	b.fixture(t, "tenant-b")
	br := b.signIn(t, "tenant-a")
	before := br.csrf()

	page := br.get(b.link(t, "tenant-b"))
	require.Equal(t, http.StatusOK, page.StatusCode)
	require.Regexp(t, `(?s)signed in to <strong>Tenant tenant-a</strong> \(<code>tenant-a</code>\).*Tenant tenant-b`, page.body,
		"the page names the current session's tenant before the link's")
	resp := br.post("/portal/login", loginForm(t, page))
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, resp.body)

	endpoints := br.get("/portal/endpoints")
	require.Contains(t, endpoints.body, "tenant-b.example.com")
	require.NotContains(t, endpoints.body, "tenant-a.example.com")
	require.NotEqual(t, before, br.csrf(), "a new session")
	var sessions int
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT count(*) FROM herald.portal_sessions WHERE tenant_id = 'tenant-a'`).Scan(&sessions))
	require.Zero(t, sessions, "the replaced session ended")
}

// Failed sign-ins (unknown, used or expired links, unknown sessions) are
// throttled per client address: after a burst, the address waits, with a
// link that works too.
func TestFailedSignInsAreThrottled(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.fixture(t, "acme")
	br := b.browser(t)
	for i := range 20 {
		resp := br.get("/portal/login?token=hpl_guess" + strconv.Itoa(i))
		require.Equal(t, http.StatusNotFound, resp.StatusCode, "failure %d is within the burst", i+1)
	}
	resp := br.get("/portal/login?token=hpl_guess")
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.Contains(t, resp.body, "Too many failed sign-ins")
	wait, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After is whole seconds: %q", resp.Header.Get("Retry-After"))
	require.GreaterOrEqual(t, wait, 1)
	require.Equal(t, http.StatusTooManyRequests, br.get(b.link(t, "acme")).StatusCode, "a good link waits too")
}

func TestUnknownSessionsAreThrottledLikeBadLinks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.fixture(t, "acme")
	forged := &http.Cookie{Name: "herald_portal", Value: "hps_guess"}
	get := func() *http.Response {
		req, err := http.NewRequest(http.MethodGet, b.server.URL+"/portal/endpoints", nil)
		require.NoError(t, err)
		req.AddCookie(forged)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		return resp
	}
	for range 20 {
		require.Equal(t, http.StatusUnauthorized, get().StatusCode)
	}
	require.Equal(t, http.StatusTooManyRequests, get().StatusCode)
	require.NotEmpty(t, get().Header.Get("Retry-After"))
}
