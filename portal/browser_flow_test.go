package portal_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/api"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/dispatcher"
	"github.com/heraldhq/herald/internal/browsertest"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/internal/webhooktest"
	"github.com/heraldhq/herald/outbox"
	"github.com/heraldhq/herald/portal"
	"github.com/heraldhq/herald/schedule"
	"github.com/heraldhq/herald/store"
)

// envUpdateScreenshots makes the flow test rewrite the README's screenshot
// of the delivery log: HERALD_UPDATE_SCREENSHOTS=1 go test ./portal/ -run Flow
const envUpdateScreenshots = "HERALD_UPDATE_SCREENSHOTS"

// readmeScreenshot is the screenshot of the delivery log the README shows.
const readmeScreenshot = "../docs/portal-delivery-log.png"

// flowPolicy retries within milliseconds and gives up after a couple of
// seconds, so a failing delivery reaches "failed" while the test watches.
var flowPolicy = schedule.Policy{Base: 50 * time.Millisecond, Cap: 200 * time.Millisecond, Window: 2 * time.Second}

// flowBundle is Herald in one process: the api (with the portal mounted as
// cmd/api mounts it) and a dispatcher, on a fresh database.
type flowBundle struct {
	pool   *pgxpool.Pool
	store  *store.Store
	server *httptest.Server
}

func setupFlow(t *testing.T) *flowBundle {
	t.Helper()
	pool := pgtest.NewPool(t)
	st := newStore(t, pool)
	logger := slog.New(slog.DiscardHandler)
	p, err := portal.New(portal.Config{Pool: pool, Store: st, Logger: logger})
	require.NoError(t, err)
	server, err := api.New(api.Config{Pool: pool, Store: st, Portal: p, Logger: logger})
	require.NoError(t, err)
	ts := httptest.NewServer(server.Handler())
	t.Cleanup(ts.Close)

	guard := ssrf.New(netip.MustParsePrefix("127.0.0.0/8"))
	d, err := dispatcher.New(dispatcher.Config{
		Pool:         pool,
		PollInterval: 100 * time.Millisecond,
		Logger:       logger,
		Delivery:     delivery.Config{Secrets: st, Policy: flowPolicy, Timeout: 5 * time.Second, Transport: guard.Transport()},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done, "dispatcher stops cleanly")
	})
	for _, tenant := range []string{"acme", "globex"} {
		_, err := st.CreateTenant(context.Background(), store.NewTenant{ID: tenant, Name: strings.ToUpper(tenant[:1]) + tenant[1:]})
		require.NoError(t, err)
	}
	return &flowBundle{pool: pool, store: st, server: ts}
}

func (b *flowBundle) link(t *testing.T, tenant string) string {
	t.Helper()
	return (&testBundle{pool: b.pool}).link(t, tenant)
}

// switchable answers 200 while healthy and 500 otherwise.
type switchable struct{ down atomic.Bool }

func (s *switchable) respond(_ int, w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	if s.down.Load() {
		http.Error(w, "receiver is down for maintenance", http.StatusInternalServerError)
		return
	}
	_, _ = w.Write([]byte(`{"received":true}`))
}

func TestBrowserFlowEndpointTestEventFailureResendReplay(t *testing.T) {
	t.Parallel()
	b := setupFlow(t)
	health := &switchable{}
	receiver := webhooktest.NewReceiver(t, health.respond)
	tb := newTab(t, b.server.URL)

	// Open the portal link: it names the tenant and, confirmed, lands on
	// the (empty) endpoints page.
	tb.open(b.link(t, "acme"))
	require.Contains(t, tb.text("main"), "This link opens the webhooks of Acme (acme)")
	require.NotContains(t, tb.text("main"), "signed in", "no session yet")
	tb.clickAndLoad("confirm the sign-in", `form[action="/portal/login"] button`)
	require.True(t, strings.HasSuffix(tb.location(), "/portal/endpoints"), tb.location())
	require.Contains(t, tb.text("main"), "No endpoints yet")

	// Create an endpoint pointing at the test receiver.
	tb.clickAndLoad("open the create form", `a[href="/portal/endpoints/new"]`)
	tb.do("fill in the endpoint",
		chromedp.SendKeys(chromedp.ID("url"), receiver.URL+"/webhooks"),
		chromedp.SendKeys(chromedp.ID("description"), "Order sync"),
		chromedp.SendKeys(chromedp.ID("other_types"), "invoice.paid"),
	)
	tb.clickAndLoad("add the endpoint", `main form button[type="submit"]`)
	require.Contains(t, tb.text(".flash"), "Endpoint added.")
	require.Equal(t, receiver.URL+"/webhooks", tb.text("h1"))
	endpointPage := tb.location()

	// Reveal the secret; the copy button appears (progressive enhancement).
	tb.clickAndLoad("reveal the secret", `form[action$="/secret"] button`)
	require.True(t, strings.HasPrefix(tb.text("#secret-value"), "whsec_"))
	tb.do("the copy button shows", chromedp.WaitVisible(chromedp.CSS(`button[data-copy="secret-value"]`)))

	// Send a test event and see it delivered.
	tb.clickAndLoad("send a test event", `form[action$="/test"] button`)
	require.Contains(t, tb.text(".flash"), "Test event queued.")
	tb.reloadUntil("the test event is delivered", `section[aria-labelledby="recent-h"]`, "succeeded")
	require.Contains(t, tb.text(`section[aria-labelledby="recent-h"]`), "herald.test")
	require.Equal(t, 1, receiver.Count())

	// The receiver fails; a published event fails and its attempts show why.
	health.down.Store(true)
	publish(t, b.pool, "acme", "invoice.paid", "inv_1001")
	tb.open("/portal/messages?status=failed")
	tb.reloadUntil("the event fails", "table.log", "invoice.paid")
	require.Contains(t, tb.text("table.log"), "failed")
	tb.clickAndLoad("open the failed message", `table.log tbody tr:first-child td:first-child a`)
	messagePage := tb.location()
	require.Contains(t, tb.text(".delivery h3"), "failed")
	tb.clickAndLoad("open the first attempt", `.delivery table tbody tr:first-child a[href^="/portal/attempts/"]`)
	require.Contains(t, tb.text("h1"), "Attempt 1")
	require.Contains(t, tb.text("h1"), "failed")
	facts := tb.text("dl.facts")
	require.Contains(t, facts, "500")
	require.Contains(t, facts, "ms")
	require.Contains(t, tb.text("table.headers"), "webhook-signature")
	require.Contains(t, tb.text("table.headers"), "webhook-id")
	require.Contains(t, tb.text("pre.payload"), "receiver is down for maintenance")

	// Fix the receiver and press Resend: the delivery succeeds.
	health.down.Store(false)
	tb.open(strings.TrimPrefix(messagePage, b.server.URL))
	tb.clickAndLoad("resend", `.delivery form[action$="/resend"] button`)
	require.Contains(t, tb.text(".flash"), "Resend queued.")
	tb.reloadUntil("the resend succeeds", ".delivery h3", "succeeded")
	require.Contains(t, tb.text(".delivery table"), "manual")

	// Replay everything since an hour ago and watch the bar reach 100 %
	// (portal.js follows the job; the page is not reloaded).
	sentBefore := receiver.Count()
	tb.open(strings.TrimPrefix(endpointPage, b.server.URL))
	tb.do("choose since an hour ago", chromedp.SetValue(chromedp.ID("since"), "1h"))
	tb.clickAndLoad("start the replay", `form[action$="/replays"] button`)
	require.Contains(t, tb.text("h1"), "Replay since")
	tb.do("the progress reaches 100%", chromedp.Poll[chromedp.Void](
		`document.querySelector('[data-field="state"]').textContent === 'finished' &&
		 document.querySelector('[data-field="percent"]').textContent === '100'`,
		chromedp.WithPollingTimeout(browsertest.StepTimeout), chromedp.WithPollingInterval(100*time.Millisecond)))
	require.Equal(t, "2", tb.text(`[data-field="total"]`), "the test event and the invoice")
	require.Equal(t, "2", tb.text(`[data-field="done"]`))
	bar, err := chromedp.Run(tb.ctx, chromedp.Evaluate[bool](`(() => { const p = document.getElementById('replay-progress'); return p.value === p.max })()`))
	require.NoError(t, err)
	require.True(t, bar, "the progress bar is full")
	require.Equal(t, sentBefore+2, receiver.Count(), "the replay sent both messages again")

	// A second endpoint that is down, and more traffic: the delivery log
	// shows each message's status per endpoint. This is the README's
	// picture.
	broken := webhooktest.NewReceiver(t, webhooktest.Status(http.StatusServiceUnavailable))
	_, err = b.store.CreateEndpoint(context.Background(), store.NewEndpoint{TenantID: "acme", URL: broken.URL + "/hooks/billing"})
	require.NoError(t, err)
	publish(t, b.pool, "acme", "invoice.paid", "inv_1002")
	publish(t, b.pool, "acme", "invoice.voided", "inv_0997")
	publish(t, b.pool, "acme", "customer.updated", "cus_2048")
	// The pending filter matches a message by its deliveries, so until the
	// fan-out has run it matches nothing either: wait for the fan-out and
	// for the broken endpoint's retries to run out before looking.
	require.Eventually(t, func() bool {
		var unsettled int
		err := b.pool.QueryRow(context.Background(), `SELECT
    (SELECT count(*) FROM herald.messages WHERE tenant_id = 'acme' AND dispatched_at IS NULL)
  + (SELECT count(*) FROM herald.deliveries WHERE tenant_id = 'acme' AND status = 'pending')`).Scan(&unsettled)
		return err == nil && unsettled == 0
	}, browsertest.StepTimeout, 50*time.Millisecond, "the new deliveries settle")
	tb.open("/portal/messages?status=pending")
	require.Contains(t, tb.text("main"), "No messages match")
	tb.open("/portal/messages")
	log := tb.text("table.log")
	require.Contains(t, log, "customer.updated")
	require.Contains(t, log, "failed")
	if os.Getenv(envUpdateScreenshots) == "1" {
		saveReadmeScreenshot(t, tb)
	}

	// A link to another tenant, opened in this session, says whose session
	// it would replace, and replaces nothing until confirmed.
	globexLink := b.link(t, "globex")
	tb.open(globexLink)
	confirm := tb.text("main")
	require.Contains(t, confirm, "This browser is signed in to Acme (acme)")
	require.Contains(t, confirm, "This link opens the webhooks of Globex (globex)")
	tb.open(strings.TrimPrefix(endpointPage, b.server.URL))
	require.Equal(t, receiver.URL+"/webhooks", tb.text("h1"), "still signed in to acme")

	// Another tenant's link never reaches these pages.
	other := newTab(t, b.server.URL)
	other.signIn(globexLink)
	require.Contains(t, other.text("main"), "No endpoints yet")
	for _, page := range []string{endpointPage, messagePage} {
		other.open(strings.TrimPrefix(page, b.server.URL))
		require.Equal(t, "Not found", other.text("h1"), page)
		require.NotContains(t, other.text("body"), receiver.URL, page)
	}
	other.open("/portal/messages?period=all")
	require.NotContains(t, other.text("main"), "invoice.paid")
}

// publish commits one event in tenant's name, as a producer would.
func publish(t *testing.T, pool *pgxpool.Pool, tenant, eventType, objectID string) {
	t.Helper()
	ctx := context.Background()
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		_, err := outbox.Publish(ctx, tx, outbox.Message{Tenant: tenant, Type: eventType, ObjectID: objectID,
			Data: map[string]any{"invoice": objectID, "amount_cents": 4200, "currency": "EUR"}})
		return err
	})
	require.NoError(t, err)
}

// saveReadmeScreenshot writes the README's picture of the delivery log at a
// laptop's width.
func saveReadmeScreenshot(t *testing.T, tb *tab) {
	t.Helper()
	tb.do("laptop viewport", chromedp.EmulateViewport(1200, 640))
	png, err := chromedp.Run(tb.ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	path, err := filepath.Abs(readmeScreenshot)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, png, 0o644))
	t.Logf("README screenshot written to %s", path)
}
