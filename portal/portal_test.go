package portal_test

import (
	"context"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/deliverylog"
	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/historyid"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/portal"
	"github.com/heraldhq/herald/store"
)

type testBundle struct {
	pool   *pgxpool.Pool
	store  *store.Store
	server *httptest.Server
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	pool := pgtest.NewPool(t)
	st := newStore(t, pool)
	p, err := portal.New(portal.Config{Pool: pool, Store: st})
	require.NoError(t, err)
	r := chi.NewRouter()
	r.Mount(portal.Path, p)
	server := httptest.NewServer(r)
	t.Cleanup(server.Close)
	return &testBundle{pool: pool, store: st, server: server}
}

// newStore is the store as cmd/api builds it, with an SSRF guard that lets
// endpoints reach loopback, where the tests' receivers listen.
func newStore(t *testing.T, pool *pgxpool.Pool) *store.Store {
	t.Helper()
	box, err := secretbox.Parse(secretbox.Generate())
	require.NoError(t, err)
	guard := ssrf.New(netip.MustParsePrefix("127.0.0.0/8"))
	st, err := store.New(pool, store.Config{Box: box, CheckURL: guard.CheckURL})
	require.NoError(t, err)
	return st
}

// browser is an HTTP client with its own cookie jar that does not follow
// redirects, so tests see each response.
type browser struct {
	t      *testing.T
	client *http.Client
	base   string
}

func (b *testBundle) browser(t *testing.T) *browser {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &browser{t: t, base: b.server.URL, client: &http.Client{
		Jar:           jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// signIn mints a link for tenant, opens it and confirms.
func (b *testBundle) signIn(t *testing.T, tenant string) *browser {
	t.Helper()
	br := b.browser(t)
	br.open(b.link(t, tenant))
	return br
}

// open opens a portal link and confirms on its page, as a person would.
func (br *browser) open(link string) response {
	br.t.Helper()
	page := br.get(link)
	require.Equal(br.t, http.StatusOK, page.StatusCode, page.body)
	resp := br.post(auth.PortalLoginPath, loginForm(br.t, page))
	require.Equal(br.t, http.StatusSeeOther, resp.StatusCode, resp.body)
	return resp
}

func (b *testBundle) link(t *testing.T, tenant string) string {
	t.Helper()
	l, err := auth.MintPortalLink(context.Background(), b.pool, tenant, 0)
	require.NoError(t, err)
	return auth.PortalLoginPath + "?token=" + url.QueryEscape(l.Token)
}

type response struct {
	*http.Response
	body string
}

func (br *browser) get(path string) response {
	br.t.Helper()
	resp, err := br.client.Get(br.base + path)
	require.NoError(br.t, err)
	return read(br.t, resp)
}

func (br *browser) post(path string, form url.Values) response {
	br.t.Helper()
	req, err := http.NewRequest(http.MethodPost, br.base+path, strings.NewReader(form.Encode()))
	require.NoError(br.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", br.base)
	resp, err := br.client.Do(req)
	require.NoError(br.t, err)
	return read(br.t, resp)
}

// csrf reads the CSRF token from a page's forms.
func (br *browser) csrf() string {
	br.t.Helper()
	resp := br.get("/portal/endpoints")
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(resp.body)
	require.NotNil(br.t, m, "no CSRF token on the endpoints page")
	return m[1]
}

func read(t *testing.T, resp *http.Response) response {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return response{Response: resp, body: string(b)}
}

// fixture is one tenant with an endpoint, a message delivered to it after a
// failed attempt, and the two attempts.
type fixture struct {
	tenant     string
	endpoint   uuid.UUID
	message    uuid.UUID
	delivery   uuid.UUID
	failedTry  uuid.UUID
	successTry uuid.UUID
}

func (b *testBundle) fixture(t *testing.T, tenant string) fixture {
	t.Helper()
	ctx := context.Background()
	// History ids carry their message's millisecond, as Herald makes them
	// (historyid): the log finds a message's rows in its partition.
	now := time.Now()
	message := uuid.Must(historyid.Child(historyid.Bound(now.Add(-time.Minute))))
	delivery := uuid.Must(historyid.Child(message))
	f := fixture{tenant: tenant, endpoint: uuid.New(), message: message, delivery: delivery,
		failedTry: uuid.Must(historyid.Child(delivery)), successTry: uuid.Must(historyid.Child(delivery))}
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := b.pool.Exec(ctx, sql, args...)
		require.NoError(t, err)
	}
	exec(`INSERT INTO herald.tenants (id, name) VALUES ($1, $2)`, tenant, "Tenant "+tenant)
	exec(`INSERT INTO herald.endpoints (id, tenant_id, url, description, event_types) VALUES ($1, $2, $3, 'orders', '{invoice.paid}')`,
		f.endpoint, tenant, "https://"+tenant+".example.com/hooks")
	exec(`INSERT INTO herald.messages (id, tenant_id, event_type, object_id, object_version, body, created_at, dispatched_at)
	      VALUES ($1, $2, 'invoice.paid', 'inv_1', 1, '{"type":"invoice.paid","data":{"amount":42}}', $3, $3)`, f.message, tenant, now.Add(-time.Minute))
	exec(`INSERT INTO herald.deliveries (id, message_id, endpoint_id, tenant_id, status, attempt_count, last_status_code)
	      VALUES ($1, $2, $3, $4, 'succeeded', 2, 200)`, f.delivery, f.message, f.endpoint, tenant)
	exec(`INSERT INTO herald.attempts (id, delivery_id, message_id, endpoint_id, attempt_number, trigger, started_at, duration_ms,
	      request_headers, status_code, error, response_excerpt, outcome)
	      VALUES ($1, $2, $3, $4, 1, 'scheduled', $5, 120, '{"webhook-id":"msg_x","content-type":"application/json"}', 500, 'HTTP 500 Internal Server Error', 'oops <b>bold</b>', 'retry')`,
		f.failedTry, f.delivery, f.message, f.endpoint, now.Add(-50*time.Second))
	exec(`INSERT INTO herald.attempts (id, delivery_id, message_id, endpoint_id, attempt_number, trigger, started_at, duration_ms,
	      request_headers, status_code, response_excerpt, outcome)
	      VALUES ($1, $2, $3, $4, 2, 'manual', $5, 30, '{"webhook-id":"msg_x"}', 200, 'ok', 'succeeded')`,
		f.successTry, f.delivery, f.message, f.endpoint, now.Add(-10*time.Second))
	// What recording the attempts counts per hour (migration 0051).
	exec(`INSERT INTO herald.endpoint_outcome_deltas (endpoint_id, hour, succeeded, failed)
	      SELECT endpoint_id, date_trunc('hour', started_at, 'UTC'), count(*) FILTER (WHERE outcome = 'succeeded'),
	          count(*) FILTER (WHERE outcome <> 'succeeded')
	      FROM herald.attempts WHERE endpoint_id = $1 GROUP BY 1, 2`, f.endpoint)
	return f
}

func TestPortalLinkWorksOnceAndSetsASafeCookie(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.fixture(t, "acme")
	link := b.link(t, "acme")

	br := b.browser(t)
	resp := br.open(link)
	require.Equal(t, "/portal/endpoints", resp.Header.Get("Location"))
	c := sessionCookie(t, resp)
	require.True(t, c.HttpOnly, "session cookie must be HttpOnly")
	require.Equal(t, http.SameSiteLaxMode, c.SameSite)
	require.False(t, c.Secure, "plain HTTP without SecureCookies sets no Secure flag")
	require.Equal(t, "/portal", c.Path)

	resp = br.get("/portal/endpoints")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.body, "https://acme.example.com/hooks")

	again := b.browser(t).get(link)
	require.Equal(t, http.StatusGone, again.StatusCode)
	require.Contains(t, again.body, "already been used")

	unknown := b.browser(t).get("/portal/login?token=hpl_nope")
	require.Equal(t, http.StatusNotFound, unknown.StatusCode)

	expired := b.link(t, "acme")
	_, err := b.pool.Exec(context.Background(), `UPDATE herald.portal_links SET expires_at = now() - interval '1 second' WHERE used_at IS NULL`)
	require.NoError(t, err)
	resp = b.browser(t).get(expired)
	require.Equal(t, http.StatusGone, resp.StatusCode)
	require.Contains(t, resp.body, "expired")
}

func TestSecureCookieOverTLS(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	p, err := portal.New(portal.Config{Pool: pool, Store: newStore(t, pool)})
	require.NoError(t, err)
	r := chi.NewRouter()
	r.Mount(portal.Path, p)
	server := httptest.NewTLSServer(r)
	t.Cleanup(server.Close)
	_, err = pool.Exec(context.Background(), `INSERT INTO herald.tenants (id) VALUES ('acme')`)
	require.NoError(t, err)
	l, err := auth.MintPortalLink(context.Background(), pool, "acme", 0)
	require.NoError(t, err)

	client := server.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	client.Jar, err = cookiejar.New(nil)
	require.NoError(t, err)
	br := &browser{t: t, client: client, base: server.URL}
	resp := br.open(auth.PortalLoginPath + "?token=" + url.QueryEscape(l.Token))
	require.True(t, sessionCookie(t, resp).Secure, "cookie set over TLS must be Secure")
}

// sessionCookie is the portal session cookie a response sets.
func sessionCookie(t *testing.T, resp response) *http.Cookie {
	t.Helper()
	for _, c := range resp.Cookies() {
		if c.Name == "herald_portal" {
			return c
		}
	}
	require.Fail(t, "the response sets no session cookie")
	return nil
}

func TestPagesRenderTheTenantsData(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := b.fixture(t, "acme")
	br := b.signIn(t, "acme")

	resp := br.get("/portal/endpoints/" + f.endpoint.String())
	require.Equal(t, http.StatusOK, resp.StatusCode, resp.body)
	require.Contains(t, resp.body, `<svg`)
	require.Contains(t, resp.body, "Last 24 hours: 1 succeeded, 1 failed")

	resp = br.get("/portal/messages")
	require.Equal(t, http.StatusOK, resp.StatusCode, resp.body)
	require.Contains(t, resp.body, "invoice.paid")
	require.Contains(t, resp.body, "badge-succeeded")

	resp = br.get("/portal/messages?status=failed")
	require.Equal(t, http.StatusOK, resp.StatusCode, resp.body)
	require.Contains(t, resp.body, "No messages match")

	resp = br.get("/portal/messages/" + f.message.String())
	require.Equal(t, http.StatusOK, resp.StatusCode, resp.body)
	require.Contains(t, resp.body, "msg_"+f.message.String())
	require.Contains(t, resp.body, "/portal/attempts/"+f.failedTry.String())

	resp = br.get("/portal/attempts/" + f.failedTry.String())
	require.Equal(t, http.StatusOK, resp.StatusCode, resp.body)
	require.Contains(t, resp.body, "HTTP 500 Internal Server Error")
	require.Contains(t, resp.body, "oops &lt;b&gt;bold&lt;/b&gt;", "the response excerpt is escaped")
	require.Contains(t, resp.body, "webhook-id")
}

func TestBadFiltersAreClearErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.fixture(t, "acme")
	br := b.signIn(t, "acme")
	for _, q := range []string{"status=exploded", "endpoint=nope", "period=forever", "after=garbage"} {
		resp := br.get("/portal/messages?" + q)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, q)
	}
}

func TestASessionSeesOnlyItsOwnTenant(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.fixture(t, "tenant-a")
	b.fixture(t, "tenant-b")
	asB := b.signIn(t, "tenant-b")

	for _, path := range []string{
		"/portal/endpoints/" + a.endpoint.String(),
		"/portal/messages/" + a.message.String(),
		"/portal/attempts/" + a.failedTry.String(),
		"/portal/attempts/" + a.successTry.String(),
	} {
		resp := asB.get(path)
		require.Equal(t, http.StatusNotFound, resp.StatusCode, path)
		require.NotContains(t, resp.body, "tenant-a.example.com", path)
	}
	for _, path := range []string{"/portal/endpoints", "/portal/messages", "/portal/messages?endpoint=" + a.endpoint.String()} {
		resp := asB.get(path)
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		require.NotContains(t, resp.body, "tenant-a.example.com", path)
	}
}

func TestWithoutASessionNothingIsShown(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := b.fixture(t, "acme")
	anon := b.browser(t)
	for _, path := range []string{"/portal/", "/portal/endpoints", "/portal/endpoints/" + f.endpoint.String(), "/portal/messages"} {
		resp := anon.get(path)
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, path)
		require.NotContains(t, resp.body, "acme.example.com")
	}
}

func TestFormsNeedTheSessionsCSRFToken(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.fixture(t, "acme")
	br := b.signIn(t, "acme")
	token := br.csrf()

	resp := br.post("/portal/logout", url.Values{})
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "no token")
	resp = br.post("/portal/logout", url.Values{"csrf": {"forged"}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "wrong token")

	req, err := http.NewRequest(http.MethodPost, b.server.URL+"/portal/logout", strings.NewReader(url.Values{"csrf": {token}}.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	cross, err := br.client.Do(req)
	require.NoError(t, err)
	cross.Body.Close()
	require.Equal(t, http.StatusForbidden, cross.StatusCode, "cross-origin post")

	other := b.signIn(t, "acme")
	resp = other.post("/portal/logout", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "another session's token")

	resp = br.post("/portal/logout", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, http.StatusUnauthorized, br.get("/portal/endpoints").StatusCode, "signed out")
}

func TestEveryResponseCarriesAStrictCSP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.fixture(t, "acme")
	br := b.signIn(t, "acme")
	for _, path := range []string{"/portal/endpoints", "/portal/nowhere", "/portal/login?token=hpl_x"} {
		resp := br.get(path)
		csp := resp.Header.Get("Content-Security-Policy")
		require.Contains(t, csp, "script-src 'self'", path)
		require.NotContains(t, csp, "unsafe-inline", path)
		require.Contains(t, csp, "frame-ancestors 'none'", path)
		require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), path)
	}
	page := br.get("/portal/endpoints").body
	require.NotRegexp(t, `<script>|<script [^>]*>[^<]`, page, "no inline script")
	require.NotContains(t, page, ` style="`, "no inline style")

	js := br.get("/portal/static/portal.js")
	require.Equal(t, http.StatusOK, js.StatusCode)
	require.Contains(t, js.Header.Get("Content-Type"), "javascript")
	require.Equal(t, http.StatusNotFound, br.get("/portal/static/missing.js").StatusCode)
}

func TestDeliveryLogPagesNewestFirst(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.fixture(t, "acme")
	_, err := b.pool.Exec(context.Background(), `
INSERT INTO herald.messages (id, tenant_id, event_type, object_id, object_version, body, created_at)
SELECT gen_random_uuid(), 'acme', 'order.created', 'ord_' || n, 1, '{}', now() - make_interval(secs => n)
FROM generate_series(1, 30) n`)
	require.NoError(t, err)
	br := b.signIn(t, "acme")

	first := br.get("/portal/messages?event_type=order.created")
	require.Equal(t, http.StatusOK, first.StatusCode)
	require.Equal(t, 25, strings.Count(first.body, "order.created</code>"))
	require.Contains(t, first.body, "ord_1 v1", "newest first")
	require.NotContains(t, first.body, "ord_26 v1")
	m := regexp.MustCompile(`href="([^"]+)" rel="next"`).FindStringSubmatch(first.body)
	require.NotNil(t, m, "an Older link")

	second := br.get(html.UnescapeString(m[1]))
	require.Equal(t, http.StatusOK, second.StatusCode)
	require.Equal(t, 5, strings.Count(second.body, "order.created</code>"))
	require.Contains(t, second.body, "ord_30 v1")
	require.NotContains(t, second.body, `rel="next"`, "the last page")
	require.Contains(t, second.body, "← Newest")
}

// A filtered page of the log that read its budget of messages without a
// match still offers the older ones (issue 16: lists bounded by an index):
// the match further back is one click away.
func TestDeliveryLogEmptyFilteredPageLinksOlder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.fixture(t, "acme")
	_, err := b.pool.Exec(context.Background(), `
INSERT INTO herald.messages (id, tenant_id, event_type, object_id, object_version, body, created_at)
SELECT gen_random_uuid(), 'acme', CASE WHEN n = $1 THEN 'order.rare' ELSE 'order.created' END, 'ord_' || n, 1, '{}',
       now() - make_interval(secs => n)
FROM generate_series(1, $1) n`, deliverylog.ScanBudget+5)
	require.NoError(t, err)
	br := b.signIn(t, "acme")

	first := br.get("/portal/messages?event_type=order.rare")
	require.Equal(t, http.StatusOK, first.StatusCode)
	require.NotContains(t, first.body, "order.rare</code>")
	m := regexp.MustCompile(`href="([^"]+)" rel="next"`).FindStringSubmatch(first.body)
	require.NotNil(t, m, "an Older link, though this page found nothing")

	second := br.get(html.UnescapeString(m[1]))
	require.Equal(t, http.StatusOK, second.StatusCode)
	require.Equal(t, 1, strings.Count(second.body, "order.rare</code>"))
}

// An endpoint behind an open breaker says so on its page, and that the
// other deliveries wait until it answers.
func TestEndpointPageShowsTheBreaker(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := b.fixture(t, "acme")
	br := b.signIn(t, "acme")
	path := "/portal/endpoints/" + f.endpoint.String()

	resp := br.get(path)
	require.Equal(t, http.StatusOK, resp.StatusCode, resp.body)
	require.NotContains(t, resp.body, `data-breaker="open"`)

	_, err := b.pool.Exec(context.Background(), `UPDATE herald.endpoints SET unreachable_streak = 3, breaker_opened_at = now(), failing_since = now() WHERE id = $1`, f.endpoint)
	require.NoError(t, err)
	resp = br.get(path)
	require.Equal(t, http.StatusOK, resp.StatusCode, resp.body)
	require.Contains(t, resp.body, `data-breaker="open"`)
	require.Contains(t, resp.body, "one delivery at a time to test it")
}
