package portal_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/browsertest"
	"github.com/heraldhq/herald/internal/webhooktest"
	"github.com/heraldhq/herald/store"
)

// The endpoint page's "Test your receiver" button sends the pre-launch
// checks and shows, step by step, how the endpoint answered and what to
// verify; the page follows the check until it has finished.
func TestBrowserReceiverCheck(t *testing.T) {
	t.Parallel()
	b := setupFlow(t)
	receiver := webhooktest.NewReceiver(t, webhooktest.Status(http.StatusOK))
	ep, err := b.store.CreateEndpoint(context.Background(), store.NewEndpoint{TenantID: "acme", URL: receiver.URL + "/webhooks"})
	require.NoError(t, err)
	tb := newTab(t, b.server.URL)
	tb.signIn(b.link(t, "acme"))

	tb.open("/portal/endpoints/" + ep.ID.String())
	tb.clickAndLoad("test the receiver", `form[action$="/receiver-checks"] button`)
	require.Contains(t, tb.text("h1"), "Receiver check")
	checkPage := tb.location()
	// The test never reloads: the page does, while the check runs.
	deadline := time.Now().Add(browsertest.StepTimeout)
	for {
		state, err := chromedp.Run(tb.ctx, chromedp.Evaluate[string](`((el) => el ? el.innerText : "")(document.querySelector(".check-state"))`))
		if err == nil && strings.HasPrefix(state, "Finished") {
			break
		}
		require.True(t, time.Now().Before(deadline), "the check page never said Finished; last: %q (%v)", state, err)
		time.Sleep(100 * time.Millisecond)
	}
	require.Equal(t, checkPage, tb.location())

	for step, want := range map[string]string{"duplicate": "succeeded", "concurrent": "succeeded", "shuffled": "succeeded", "old_event": "skipped"} {
		section := `section[data-step="` + step + `"]`
		require.Contains(t, tb.text(section+" h2"), want, step)
		require.Contains(t, tb.text(section+" .verify"), "Verify on your side:", step)
	}
	dup := tb.text(`section[data-step="duplicate"] table`)
	require.Equal(t, 2, strings.Count(dup, "200 OK"), dup)
	require.Equal(t, 2, strings.Count(dup, "msg_"), "the same webhook-id twice: %s", dup)
	require.Equal(t, 5, strings.Count(tb.text(`section[data-step="shuffled"] table`), "200 OK"))
	require.Contains(t, tb.text(`section[data-step="shuffled"] .verify`), "ends at version 5")
	require.Contains(t, tb.text(`section[data-step="old_event"]`), "a day old")
	require.Contains(t, tb.text(`section[aria-labelledby="owner-h"]`), "dead letter")
	require.Equal(t, 9, receiver.Count())

	// A second press within the minute is refused with when to come back.
	tb.open("/portal/endpoints/" + ep.ID.String())
	tb.clickAndLoad("test the receiver again", `form[action$="/receiver-checks"] button`)
	require.Contains(t, tb.text("main"), "start the next one in")
}
