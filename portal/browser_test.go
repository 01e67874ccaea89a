package portal_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/browsertest"
)

// The browser tests drive Debian's chromium, headless, through
// internal/browsertest: one browser serves the whole test binary; each test
// gets its own private window (its own cookies) and tab.

// tab is one test's browser window.
type tab struct {
	t    *testing.T
	ctx  context.Context
	base string
}

// newTab opens a private window on base (the server's URL). When the test
// fails, the window's last page is saved as a PNG in a temporary folder and
// its path logged.
func newTab(t *testing.T, base string) *tab {
	t.Helper()
	tb := &tab{t: t, ctx: browsertest.NewWindow(t), base: base}
	t.Cleanup(func() {
		if t.Failed() {
			tb.saveFailureScreenshot()
		}
	})
	return tb
}

func (tb *tab) saveFailureScreenshot() {
	dir := filepath.Join(os.TempDir(), "herald-portal-screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.t.Logf("screenshot folder: %v", err)
		return
	}
	ctx, cancel := context.WithTimeout(tb.ctx, 15*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tb.t.Logf("screenshot of the last page: %v", err)
		return
	}
	name := regexp.MustCompile(`[^A-Za-z0-9_-]+`).ReplaceAllString(tb.t.Name(), "_") + ".png"
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		tb.t.Logf("save screenshot: %v", err)
		return
	}
	location, _ := chromedp.Run(ctx, chromedp.Location())
	tb.t.Logf("last page (%s) saved to %s", location, path)
}

// do runs browser steps, failing the test with what was being done.
func (tb *tab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	browsertest.Do(tb.t, tb.ctx, what, steps...)
}

// open navigates to a path on the server and waits for the page's body.
func (tb *tab) open(path string) {
	tb.t.Helper()
	tb.do("open "+path, chromedp.Navigate(tb.base+path), chromedp.WaitReady(chromedp.CSS("body")))
}

// signIn opens a portal link and confirms on the page it shows.
func (tb *tab) signIn(link string) {
	tb.t.Helper()
	tb.open(link)
	require.Equal(tb.t, "Open the webhook portal", tb.text("h1"), "a link first shows what it opens")
	tb.clickAndLoad("confirm the sign-in", `form[action="/portal/login"] button`)
}

// text returns the visible text of the first element matching a CSS selector.
func (tb *tab) text(selector string) string {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, browsertest.StepTimeout)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(selector)))
	require.NoError(tb.t, err, "read text of %s", selector)
	return s
}

// location is the tab's current URL.
func (tb *tab) location() string {
	tb.t.Helper()
	loc, err := chromedp.Run(tb.ctx, chromedp.Location())
	require.NoError(tb.t, err)
	return loc
}

// clickAndLoad clicks an element that navigates (a link or a submit button)
// and waits for the next page.
func (tb *tab) clickAndLoad(what, selector string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, browsertest.StepTimeout)
	defer cancel()
	_, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(selector)))
	require.NoError(tb.t, err, what)
}

// textNow returns the visible text of the first element matching a CSS
// selector, or "" when there is none yet, without waiting.
func (tb *tab) textNow(selector string) string {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, browsertest.StepTimeout)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`((el) => el ? el.innerText : "")(document.querySelector(`+strconv.Quote(selector)+`))`))
	require.NoError(tb.t, err, "read text of %s", selector)
	return s
}

// reloadUntil waits until the page's text matches, reloading it in between as a
// person would while background work (a delivery, a retry) happens.
func (tb *tab) reloadUntil(what, selector, want string) {
	tb.t.Helper()
	deadline := time.Now().Add(browsertest.StepTimeout)
	for {
		got := tb.textNow(selector)
		if strings.Contains(got, want) {
			return
		}
		if time.Now().After(deadline) {
			tb.t.Fatalf("%s: %q never contained %q; last saw:\n%s", what, selector, want, got)
		}
		time.Sleep(300 * time.Millisecond)
		tb.do("reload", chromedp.Reload(), chromedp.WaitReady(chromedp.CSS("body")))
	}
}
