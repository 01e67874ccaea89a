package portal_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/webhooktest"
	"github.com/heraldhq/herald/outbox"
)

// An endpoint added with "one at a time per object" shows its order, and an
// object whose head keeps failing is listed as held back with the error.
func TestBrowserOrderedEndpointShowsAHeldBackObject(t *testing.T) {
	t.Parallel()
	b := setupFlow(t)
	receiver := webhooktest.NewReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	tb := newTab(t, b.server.URL)
	tb.open(b.link(t, "acme"))
	tb.clickAndLoad("confirm the sign-in", `form[action="/portal/login"] button`)

	tb.clickAndLoad("open the create form", `a[href="/portal/endpoints/new"]`)
	tb.do("fill in an ordered endpoint",
		chromedp.SendKeys(chromedp.ID("url"), receiver.URL+"/ledger"),
		chromedp.Click(chromedp.CSS(`input[name="ordering"][value="object"]`)),
	)
	tb.clickAndLoad("add the endpoint", `main form button[type="submit"]`)
	require.Contains(t, tb.text(".flash"), "Endpoint added.")
	require.Contains(t, tb.text("dl.facts"), "One at a time per object, in version order")

	for range 2 {
		_, err := outbox.PublishPool(context.Background(), b.pool, outbox.Message{Tenant: "acme", Type: "ledger.entry", ObjectID: "acct_7", Data: map[string]any{}})
		require.NoError(t, err)
	}
	tb.reloadUntil("the object is held back", `section[aria-labelledby="held-h"]`, "acct_7")
	held := tb.text(`section[aria-labelledby="held-h"]`)
	require.Contains(t, held, "HTTP 503 Service Unavailable", "the head's last error")
	require.True(t, strings.HasSuffix(strings.TrimSpace(held), "\t1"), "one version waits behind it: %s", held)

	tb.clickAndLoad("open the edit form", `a[href$="/edit"]`)
	require.Contains(t, tb.text("main form"), "chosen when an endpoint is added")
}
