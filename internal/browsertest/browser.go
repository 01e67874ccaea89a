// Package browsertest drives Debian's chromium, headless, for the browser
// tests (the portal's, the queue dashboard's): one browser per test binary
// that accepts the throwaway TLS certificates tests serve on loopback, and
// a private window (its own cookies) per test.
package browsertest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// ChromiumPath is where Debian's chromium package installs the browser.
const ChromiumPath = "/usr/bin/chromium"

// StepTimeout bounds one browser step (a navigation, a click, a wait).
const StepTimeout = 45 * time.Second

var (
	once   sync.Once
	shared context.Context
	stop   context.CancelFunc
	err    error
)

// browser starts chromium the first time a test asks for it. It accepts
// any certificate: tests serve TLS on loopback with certificates made for
// the run (httptest's), and nothing else is reachable from here. Site
// isolation is off, which only this test browser can afford.
func browser(t testing.TB) context.Context {
	t.Helper()
	once.Do(func() {
		path := ChromiumPath
		if _, statErr := os.Stat(path); statErr != nil {
			found, lookErr := exec.LookPath("chromium")
			if lookErr != nil {
				err = errors.New("chromium is not installed at " + ChromiumPath + "; the browser tests need it: apt-get install -y chromium (scripts/ensure-chromium.sh)")
				return
			}
			path = found
		}
		dataDir, mkErr := os.MkdirTemp("", "herald-chromium-")
		if mkErr != nil {
			err = mkErr
			return
		}
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(path),
			chromedp.Headless,
			chromedp.NoSandbox,
			chromedp.DisableGPU,
			chromedp.NoFirstRun,
			chromedp.IgnoreCertErrors,
			// A frame from another site stays in its page's process, so a
			// test reaches into it from the page (chromedp.FromNode).
			chromedp.Flag("disable-features", "SitePerProcess,IsolateOrigins"),
			chromedp.Flag("disable-site-isolation-trials", true),
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-dev-shm-usage", true),
			chromedp.UserDataDir(dataDir),
			chromedp.WindowSize(1280, 900),
		)
		allocCtx, allocCancel := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancel := chromedp.NewContext(allocCtx)
		if runErr := chromedp.Do(ctx); runErr != nil {
			cancel()
			allocCancel()
			_ = os.RemoveAll(dataDir)
			err = errors.New("start chromium: " + runErr.Error())
			return
		}
		shared = ctx
		stop = func() {
			cancel()
			allocCancel()
			_ = os.RemoveAll(dataDir)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return shared
}

// Stop ends the shared browser, if one was started. Call it from TestMain
// after the tests ran.
func Stop() {
	if stop != nil {
		stop()
	}
}

// NewWindow opens a private window (a browser context of its own) that
// closes when the test ends.
func NewWindow(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser(t), chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	require.NoError(t, chromedp.Do(ctx), "open a browser window")
	return ctx
}

// Do runs browser steps within StepTimeout, failing the test with what was
// being done.
func Do(t testing.TB, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, StepTimeout)
	defer cancel()
	require.NoError(t, chromedp.Do(ctx, steps...), what)
}

// Screenshot captures the window's visible page as a PNG into path.
func Screenshot(t testing.TB, ctx context.Context, path string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, StepTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	require.NoError(t, err, "screenshot")
	require.NoError(t, os.WriteFile(path, png, 0o644))
}
