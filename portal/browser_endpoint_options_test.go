package portal_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/browsertest"
	"github.com/heraldhq/herald/internal/webhooktest"
	"github.com/heraldhq/herald/outbox"
)

// The endpoint form takes a filter and custom headers: a filter that does
// not parse and a forbidden header are refused inline, next to their
// fields; a secret header's value is never shown again and is kept when
// the form is saved without it; deliveries carry the headers and only the
// events the filter lets through arrive.
func TestBrowserEndpointFormFilterAndHeaders(t *testing.T) {
	t.Parallel()
	b := setupFlow(t)
	receiver := webhooktest.NewReceiver(t, webhooktest.Status(200))
	tb := newTab(t, b.server.URL)
	tb.signIn(b.link(t, "acme"))

	tb.clickAndLoad("open the create form", `a[href="/portal/endpoints/new"]`)
	tb.do("fill in an endpoint with a broken filter and headers",
		chromedp.SendKeys(chromedp.ID("url"), receiver.URL+"/hook"),
		chromedp.SendKeys(chromedp.ID("filter"), "data.amount >> 100"),
		chromedp.SendKeys(chromedp.CSS(`input[name="header_name_0"]`), "X-Api-Key"),
		chromedp.SendKeys(chromedp.CSS(`input[name="header_value_0"]`), "sk_live_123"),
		chromedp.Click(chromedp.CSS(`input[name="header_secret_0"]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name="header_name_1"]`), "X-Region"),
		chromedp.SendKeys(chromedp.CSS(`input[name="header_value_1"]`), "eu"),
	)
	tb.clickAndLoad("add the endpoint", `main form button[type="submit"]`)
	require.Contains(t, tb.text("#filter-error"), "The filter does not parse at character 14")
	require.Equal(t, "data.amount >> 100", tb.value("filter"), "the form keeps what was typed")

	tb.setValue("filter", "data.amount >= 100")
	tb.do("type the secret again", chromedp.SendKeys(chromedp.CSS(`input[name="header_value_0"]`), "sk_live_123"))
	tb.clickAndLoad("add the endpoint", `main form button[type="submit"]`)
	require.Contains(t, tb.text(".flash"), "Endpoint added.")
	facts := tb.text("dl.facts")
	require.Contains(t, facts, "data.amount >= 100")
	require.Contains(t, facts, "X-Api-Key: ********")
	require.Contains(t, facts, "X-Region: eu")
	require.NotContains(t, tb.html(), "sk_live_123", "the endpoint page masks the secret")

	for _, amount := range []int{50, 150} {
		_, err := outbox.PublishPool(context.Background(), b.pool, outbox.Message{Tenant: "acme", Type: "invoice.paid", ObjectID: "inv_" + strconv.Itoa(amount), Data: map[string]any{"amount": amount}})
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return receiver.Count() >= 1 }, 20*time.Second, 50*time.Millisecond)
	time.Sleep(500 * time.Millisecond) // room for a delivery the filter should have stopped
	reqs := receiver.Requests()
	require.Len(t, reqs, 1, "only the event the filter lets through arrives")
	require.Contains(t, string(reqs[0].Body), `"inv_150"`)
	require.Equal(t, "sk_live_123", reqs[0].Header.Get("X-Api-Key"))
	require.Equal(t, "eu", reqs[0].Header.Get("X-Region"))

	tb.clickAndLoad("open the edit form", `a[href$="/edit"]`)
	require.Equal(t, "", tb.value(`input[name="header_value_0"]`), "a secret value is write-only")
	require.Equal(t, "data.amount >= 100", tb.value("filter"))
	html := tb.html()
	require.NotContains(t, html, "sk_live_123", "the secret is nowhere in the page")

	tb.do("add a forbidden header", chromedp.SendKeys(chromedp.CSS(`input[name="header_name_2"]`), "Host"), chromedp.SendKeys(chromedp.CSS(`input[name="header_value_2"]`), "evil.example"))
	tb.clickAndLoad("save", `main form button[type="submit"]`)
	require.Contains(t, tb.text("#headers-error"), `"Host" is refused`)

	tb.setValue(`input[name="header_name_2"]`, "")
	tb.setValue(`input[name="header_value_2"]`, "")
	tb.clickAndLoad("save without retyping the secret", `main form button[type="submit"]`)
	require.Contains(t, tb.text(".flash"), "Endpoint saved.")
	_, err := outbox.PublishPool(context.Background(), b.pool, outbox.Message{Tenant: "acme", Type: "invoice.paid", ObjectID: "inv_200", Data: map[string]any{"amount": 200}})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return receiver.Count() >= 2 }, 20*time.Second, 50*time.Millisecond)
	require.Equal(t, "sk_live_123", receiver.Requests()[1].Header.Get("X-Api-Key"), "the stored secret was kept")
}

// value is the value of the form control with that id or CSS selector.
func (tb *tab) value(selector string) string {
	tb.t.Helper()
	return tb.eval(`((el) => el ? el.value : "<none>")(document.getElementById(` + strconv.Quote(selector) + `) || document.querySelector(` + strconv.Quote(selector) + `))`)
}

// setValue replaces the value of the form control with that id or CSS
// selector.
func (tb *tab) setValue(selector, value string) {
	tb.t.Helper()
	tb.eval(`((el) => { el.value = ` + strconv.Quote(value) + `; return "" })(document.getElementById(` + strconv.Quote(selector) + `) || document.querySelector(` + strconv.Quote(selector) + `))`)
}

// html is the page's markup.
func (tb *tab) html() string {
	tb.t.Helper()
	return tb.eval(`document.documentElement.outerHTML`)
}

func (tb *tab) eval(js string) string {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, browsertest.StepTimeout)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
	require.NoError(tb.t, err, js)
	return s
}
