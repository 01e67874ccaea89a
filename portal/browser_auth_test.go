package portal_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/browsertest"
	"github.com/heraldhq/herald/internal/webhooktest"
)

// The endpoint form sets authentication: a bad token URL is refused inline
// at its field, a bearer token arrives with deliveries, and the edit form
// never shows the secret, which an edit that leaves it empty keeps.
func TestBrowserEndpointAuthentication(t *testing.T) {
	t.Parallel()
	b := setupFlow(t)
	receiver := webhooktest.NewReceiver(t, webhooktest.Status(http.StatusOK))
	tb := newTab(t, b.server.URL)
	tb.signIn(b.link(t, "acme"))

	tb.open("/portal/endpoints/new")
	tb.do("fill in an OAuth2 endpoint with an http token URL",
		chromedp.SendKeys(chromedp.ID("url"), receiver.URL+"/secured"),
		chromedp.SetValue(chromedp.ID("auth_type"), "oauth2_client_credentials"),
		chromedp.SendKeys(chromedp.ID("auth_token_url"), "http://auth.example.com/token"),
		chromedp.SendKeys(chromedp.ID("auth_client_id"), "herald"),
		chromedp.SendKeys(chromedp.ID("auth_client_secret"), "cs-secret-1"),
	)
	tb.clickAndLoad("add the endpoint", `main form button[type="submit"]`)
	require.Contains(t, tb.text(".alert"), "The token URL uses \"http\"; the client secret is sent to it, so it must be https")
	invalid, err := chromedp.Run(tb.ctx, chromedp.Evaluate[string](`document.getElementById('auth_token_url').getAttribute('aria-invalid') || ''`))
	require.NoError(t, err)
	require.Equal(t, "true", invalid, "the field at fault is marked")
	secret, err := chromedp.Run(tb.ctx, chromedp.Evaluate[string](`document.getElementById('auth_client_secret').value`))
	require.NoError(t, err)
	require.Empty(t, secret, "a secret is never written back into the page")

	tb.do("switch to a bearer token",
		chromedp.SetValue(chromedp.ID("auth_type"), "bearer"),
		chromedp.Clear(chromedp.ID("auth_token_url")),
		chromedp.Clear(chromedp.ID("auth_client_id")),
		chromedp.SendKeys(chromedp.ID("auth_token"), "gw-token-42"),
	)
	tb.clickAndLoad("add the endpoint", `main form button[type="submit"]`)
	require.Contains(t, tb.text(".flash"), "Endpoint added.")
	endpointPage, _, _ := strings.Cut(strings.TrimPrefix(tb.location(), b.server.URL), "?")
	require.Equal(t, "Bearer token", tb.text("#authentication-type"), "the endpoint page says how it authenticates")
	require.NotContains(t, tb.text("main"), "gw-token-42")

	publish(t, b.pool, "acme", "invoice.paid", "inv_1")
	require.Eventually(t, func() bool { return receiver.Count() == 1 }, browsertest.StepTimeout, 50*time.Millisecond)
	require.Equal(t, "Bearer gw-token-42", receiver.Requests()[0].Header.Get("Authorization"))

	tb.open(endpointPage + "/edit")
	html, err := chromedp.Run(tb.ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
	require.NoError(t, err)
	require.NotContains(t, html, "gw-token-42", "the edit form never holds the secret")
	placeholder, err := chromedp.Run(tb.ctx, chromedp.Evaluate[string](`document.getElementById('auth_token').placeholder`))
	require.NoError(t, err)
	require.Contains(t, placeholder, "set; type to replace")
	tb.do("change the description only", chromedp.SendKeys(chromedp.ID("description"), "gateway"))
	tb.clickAndLoad("save", `main form button[type="submit"]`)
	require.Contains(t, tb.text(".flash"), "Endpoint saved.")

	publish(t, b.pool, "acme", "invoice.paid", "inv_2")
	require.Eventually(t, func() bool { return receiver.Count() == 2 }, browsertest.StepTimeout, 50*time.Millisecond)
	require.Equal(t, "Bearer gw-token-42", receiver.Requests()[1].Header.Get("Authorization"), "an empty secret field keeps the token")
}
