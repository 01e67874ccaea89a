package portal_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBrowserTenantBCannotReachTenantAsPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.fixture(t, "tenant-a")
	b.fixture(t, "tenant-b")
	linkB := b.link(t, "tenant-b")

	tb := newTab(t, b.server.URL)
	tb.signIn(linkB)
	require.Contains(t, tb.text("main"), "tenant-b.example.com")
	require.NotContains(t, tb.text("main"), "tenant-a.example.com")

	for _, path := range []string{
		"/portal/endpoints/" + a.endpoint.String(),
		"/portal/messages/" + a.message.String(),
		"/portal/attempts/" + a.failedTry.String(),
	} {
		tb.open(path)
		require.Equal(t, "Not found", tb.text("h1"), path)
		require.NotContains(t, tb.text("body"), "tenant-a", path)
	}
	tb.open("/portal/messages?period=all")
	require.NotContains(t, tb.text("main"), "tenant-a.example.com")

	tb.open(linkB)
	require.Equal(t, "This link does not work any more", tb.text("h1"), "a link works once")
}
