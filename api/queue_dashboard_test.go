package api_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/api"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/dispatcher"
	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/browsertest"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/store"
)

// envUpdateScreenshots makes the dashboard's browser test rewrite the
// README's screenshot: HERALD_UPDATE_SCREENSHOTS=1 go test ./api/ -run QueueDashboard
const envUpdateScreenshots = "HERALD_UPDATE_SCREENSHOTS"

// dashboardBundle is the api with the queue dashboard mounted, as
// cmd/api --queue-dashboard mounts it, and a running dispatcher, whose
// River client registers Herald's queue.
type dashboardBundle struct {
	server   *httptest.Server
	pool     *pgxpool.Pool
	operator string
	tenant   string
}

func setupDashboard(t *testing.T) *dashboardBundle {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pool := pgtest.NewPool(t)
	box, err := secretbox.Parse(secretbox.Generate())
	require.NoError(t, err)
	st, err := store.New(pool, store.Config{Box: box})
	require.NoError(t, err)
	logger := slog.New(slog.DiscardHandler)
	dashboard, err := api.NewQueueDashboard(ctx, pool, logger)
	require.NoError(t, err)
	s, err := api.New(api.Config{Pool: pool, Store: st, Logger: logger, QueueDashboard: dashboard})
	require.NoError(t, err)
	server := httptest.NewServer(s.Handler())

	d, err := dispatcher.New(dispatcher.Config{Pool: pool, Logger: logger, Delivery: delivery.Config{Secrets: st}})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
		server.Close()
	})
	_, err = st.CreateTenant(ctx, store.NewTenant{ID: "acme"})
	require.NoError(t, err)
	b := &dashboardBundle{server: server, pool: pool}
	_, b.operator, err = auth.CreateAPIKey(ctx, pool, "", "operator")
	require.NoError(t, err)
	_, b.tenant, err = auth.CreateAPIKey(ctx, pool, "acme", "acme")
	require.NoError(t, err)
	return b
}

func (b *dashboardBundle) get(t *testing.T, path, key string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.server.URL+path, nil)
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return resp
}

// The dashboard is off unless the api is given one.
func TestQueueDashboardIsOffByDefault(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do(t, b.operator, "GET", api.QueueDashboardPath+"/", nil).Problem(t, http.StatusNotFound)
}

// Only operators get in: a tenant's key is refused, an unknown one too,
// and the sign-in form refuses a post from another origin.
func TestQueueDashboardIsForOperatorsOnly(t *testing.T) {
	t.Parallel()
	b := setupDashboard(t)

	require.Equal(t, http.StatusUnauthorized, b.get(t, api.QueueDashboardPath+"/", "").StatusCode)
	require.Equal(t, http.StatusUnauthorized, b.get(t, api.QueueDashboardPath+"/", "hk_unknown_0123456789abcdefghijklmnopqrstuv").StatusCode)
	require.Equal(t, http.StatusForbidden, b.get(t, api.QueueDashboardPath+"/", b.tenant).StatusCode)
	require.Equal(t, http.StatusForbidden, b.get(t, api.QueueDashboardPath+"/api/queues", b.tenant).StatusCode, "River UI's API too")
	ok := b.get(t, api.QueueDashboardPath+"/api/queues", b.operator)
	require.Equal(t, http.StatusOK, ok.StatusCode)
	require.Equal(t, "frame-ancestors 'none'", ok.Header.Get("Content-Security-Policy"))

	form := url.Values{"key": {b.operator}}.Encode()
	req, err := http.NewRequest(http.MethodPost, b.server.URL+api.QueueDashboardPath+"/sign-in", strings.NewReader(form))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "a sign-in posted from another site")
	require.Empty(t, resp.Cookies())
}

// signIn posts key to the sign-in form, as the page does, and returns the
// response; its body is closed.
func (b *dashboardBundle) signIn(t *testing.T, key string) *http.Response {
	t.Helper()
	noRedirects := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirects.PostForm(b.server.URL+api.QueueDashboardPath+"/sign-in", url.Values{"key": {key}})
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return resp
}

// withCookie requests path with the dashboard's cookie set to c.
func (b *dashboardBundle) withCookie(t *testing.T, method, path string, c *http.Cookie) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, b.server.URL+path, nil)
	require.NoError(t, err)
	req.AddCookie(c)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return resp
}

// Signing in keeps an operator session in the browser, not the key: a
// random token that expires, that signing out ends, and that revoking the
// key ends at once.
func TestQueueDashboardSignInOpensAnOperatorSession(t *testing.T) {
	t.Parallel()
	b := setupDashboard(t)
	const queues = api.QueueDashboardPath + "/api/queues"

	resp := b.signIn(t, b.operator)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Len(t, resp.Cookies(), 1)
	session := resp.Cookies()[0]
	require.Equal(t, "herald_operator", session.Name)
	require.True(t, strings.HasPrefix(session.Value, "hos_"), "an operator session's token: %s", session.Value)
	require.NotContains(t, session.Value, b.operator, "the browser does not keep the key")
	require.True(t, session.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, session.SameSite)
	require.Equal(t, api.QueueDashboardPath, session.Path)
	require.WithinDuration(t, time.Now().Add(auth.DefaultOperatorSessionTTL), session.Expires, time.Minute)
	require.Equal(t, http.StatusOK, b.withCookie(t, http.MethodGet, queues, session).StatusCode)
	require.Equal(t, http.StatusUnauthorized, b.get(t, "/v1/tenants", session.Value).StatusCode, "the session opens the dashboard only, not the API")

	resp = b.withCookie(t, http.MethodPost, api.QueueDashboardPath+"/sign-out", session)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, http.StatusUnauthorized, b.withCookie(t, http.MethodGet, queues, session).StatusCode, "signed out, the old cookie opens nothing")
	require.Equal(t, http.StatusUnauthorized, b.withCookie(t, http.MethodGet, queues, &http.Cookie{Name: "herald_operator", Value: b.operator}).StatusCode,
		"a cookie holding the key itself is no session")

	ctx := context.Background()
	ops2, key2, err := auth.CreateAPIKey(ctx, b.pool, "", "second operator")
	require.NoError(t, err)
	session = b.signIn(t, key2).Cookies()[0]
	require.Equal(t, http.StatusOK, b.withCookie(t, http.MethodGet, queues, session).StatusCode)
	_, err = b.pool.Exec(ctx, "UPDATE herald.operator_sessions SET expires_at = now() - interval '1 second'")
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, b.withCookie(t, http.MethodGet, queues, session).StatusCode, "an expired session")

	session = b.signIn(t, key2).Cookies()[0]
	require.Equal(t, http.StatusOK, b.withCookie(t, http.MethodGet, queues, session).StatusCode)
	req, err := http.NewRequest(http.MethodDelete, b.server.URL+"/v1/api-keys/"+ops2.ID.String(), nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+b.operator)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, http.StatusUnauthorized, b.withCookie(t, http.MethodGet, queues, session).StatusCode, "revoking the key ends its sessions")
}

// An operator signs in on the dashboard's page with an operator key and
// sees Herald's delivery queue in River UI.
func TestQueueDashboardInABrowser(t *testing.T) {
	t.Parallel()
	b := setupDashboard(t)
	window := browsertest.NewWindow(t)

	browsertest.Do(t, window, "open the dashboard",
		chromedp.Navigate(b.server.URL+api.QueueDashboardPath+"/"),
		chromedp.WaitVisible(chromedp.CSS(`input[name="key"]`)))
	browsertest.Do(t, window, "sign in with a tenant's key",
		chromedp.SendKeys(chromedp.CSS(`input[name="key"]`), b.tenant),
		chromedp.Submit(chromedp.CSS(`input[name="key"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#message`)))
	refused, err := chromedp.Run(window, chromedp.Text(chromedp.CSS(`#message`)))
	require.NoError(t, err)
	require.Contains(t, refused, "needs an operator API key")

	browsertest.Do(t, window, "sign in with the operator's key",
		chromedp.SendKeys(chromedp.CSS(`input[name="key"]`), b.operator),
		chromedp.Submit(chromedp.CSS(`input[name="key"]`)))
	browsertest.Do(t, window, "leave the sign-in page",
		chromedp.WaitNotPresent(chromedp.CSS(`input[name="key"]`)),
		chromedp.WaitReady(chromedp.CSS("body")))
	browsertest.Do(t, window, "open the queues",
		chromedp.Navigate(b.server.URL+api.QueueDashboardPath+"/queues"),
		chromedp.WaitVisible(chromedp.CSS(`a[href$="/queues/`+delivery.Queue+`"]`)))
	if os.Getenv(envUpdateScreenshots) == "1" {
		time.Sleep(500 * time.Millisecond) // let the page settle
		browsertest.Screenshot(t, window, "../docs/queue-dashboard.png")
	}
}
