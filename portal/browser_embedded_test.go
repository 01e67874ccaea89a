package portal_test

import (
	"context"
	"fmt"
	"html"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
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
	"github.com/heraldhq/herald/store"
)

// embeddedScreenshot is the README's picture of the portal in a frame.
const embeddedScreenshot = "../docs/portal-embedded.png"

// The SaaS team's application, on another site than Herald (localhost
// against 127.0.0.1, both over TLS), embeds the branded portal in an
// iframe, as the README's snippet does; a person signs in inside the frame
// and resends a delivery.
func TestBrowserEmbeddedPortalResends(t *testing.T) {
	t.Parallel()
	var frameSrc atomic.Value
	app := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>Acme · Settings</title>
<body style="font-family: sans-serif; margin: 0; background: #eef0f4">
<header style="background: #d33f49; color: #fff; padding: 12px 20px; font-weight: bold">Acme · Settings › Webhooks</header>
<iframe id="portal" src="%s" title="Webhooks" style="border: 0; width: 100%%; height: 780px"></iframe>
</body>`, html.EscapeString(frameSrc.Load().(string)))
	}))
	t.Cleanup(app.Close)
	appOrigin := strings.Replace(app.URL, "127.0.0.1", "localhost", 1)

	pool := pgtest.NewPool(t)
	st := newStore(t, pool)
	logger := slog.New(slog.DiscardHandler)
	p, err := portal.New(portal.Config{Pool: pool, Store: st, Logger: logger,
		FrameAncestors: []string{appOrigin},
		Branding:       portal.Branding{ProductName: "Acme Webhooks", AccentColor: "#d33f49", SupportURL: "https://help.acme.example/webhooks"},
	})
	require.NoError(t, err)
	server, err := api.New(api.Config{Pool: pool, Store: st, Portal: p, Logger: logger})
	require.NoError(t, err)
	herald := httptest.NewTLSServer(server.Handler())
	t.Cleanup(herald.Close)

	guard := ssrf.New(netip.MustParsePrefix("127.0.0.0/8"))
	d, err := dispatcher.New(dispatcher.Config{Pool: pool, PollInterval: 100 * time.Millisecond, Logger: logger,
		Delivery: delivery.Config{Secrets: st, Policy: flowPolicy, Timeout: 5 * time.Second, Transport: guard.Transport()}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})

	receiver := webhooktest.NewReceiver(t, webhooktest.Status(http.StatusOK))
	_, err = st.CreateTenant(ctx, store.NewTenant{ID: "acme", Name: "Acme"})
	require.NoError(t, err)
	_, err = st.CreateEndpoint(ctx, store.NewEndpoint{TenantID: "acme", URL: receiver.URL + "/webhooks"})
	require.NoError(t, err)
	_, err = outbox.PublishPool(ctx, pool, outbox.Message{Tenant: "acme", Type: "invoice.paid", ObjectID: "inv_1", Data: map[string]any{"amount": 4200}})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return receiver.Count() == 1 }, 30*time.Second, 50*time.Millisecond)

	frameSrc.Store(herald.URL + (&testBundle{pool: pool}).link(t, "acme"))
	window := browsertest.NewWindow(t)
	browsertest.Do(t, window, "open the application's page", chromedp.Navigate(appOrigin+"/"), chromedp.WaitVisible(chromedp.CSS("#portal")))
	frame := &portalFrame{t: t, window: window}
	frame.click("confirm the sign-in inside the frame", `form[action="/portal/login"] button`)
	require.Contains(t, frame.html(`a.brand`), ">Acme Webhooks</a>", "the brand's name in the header")
	frame.click("open the delivery log", `nav a[href="/portal/messages"]`)
	frame.click("open the message", `table.log a[href^="/portal/messages/"]`)
	frame.click("resend", `.delivery form[action$="/resend"] button`)
	require.Contains(t, frame.html(".flash"), "Resend queued.")
	require.Eventually(t, func() bool { return receiver.Count() == 2 }, 30*time.Second, 50*time.Millisecond, "the resend arrives")

	if os.Getenv(envUpdateScreenshots) == "1" {
		browsertest.Screenshot(t, window, embeddedScreenshot)
	}
}

// portalFrame drives the portal's iframe (#portal) from the page that
// embeds it, querying inside the frame's current document.
type portalFrame struct {
	t      *testing.T
	window context.Context
}

// document is the iframe's element, whose content document queries run in.
func (f *portalFrame) document(ctx context.Context) *chromedp.Node {
	f.t.Helper()
	nodes, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSS("#portal")))
	require.NoError(f.t, err, "find the portal's iframe")
	return nodes[0]
}

// click waits for the first element in the frame matching selector, then
// clicks it.
func (f *portalFrame) click(what, selector string) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(f.window, browsertest.StepTimeout)
	defer cancel()
	for {
		// A navigation of the frame replaces its document: look again.
		frameCtx, stop := context.WithTimeout(ctx, 2*time.Second)
		doc := f.document(ctx)
		err := chromedp.Do(frameCtx, chromedp.WaitVisible(chromedp.CSS(selector), chromedp.FromNode(doc)), chromedp.Click(chromedp.CSS(selector), chromedp.FromNode(doc)))
		stop()
		if err == nil {
			return
		}
		require.NoError(f.t, ctx.Err(), what)
	}
}

// html is the markup of the first element in the frame matching selector.
func (f *portalFrame) html(selector string) string {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(f.window, browsertest.StepTimeout)
	defer cancel()
	for {
		frameCtx, stop := context.WithTimeout(ctx, 2*time.Second)
		markup, err := chromedp.Run(frameCtx, chromedp.OuterHTML(chromedp.CSS(selector), chromedp.FromNode(f.document(ctx))))
		stop()
		if err == nil {
			return markup
		}
		require.NoError(f.t, ctx.Err(), "read %s in the frame", selector)
	}
}
