package ssrf_test

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/ssrf"
)

func TestCheckURLAcceptsUsableURLs(t *testing.T) {
	t.Parallel()
	guard := ssrf.New()
	for _, raw := range []string{
		"https://example.com/webhooks",
		"http://example.com:8080/hook?x=1",
		"HTTPS://Example.COM/",
		"https://8.8.8.8/hook",
		"https://[2606:4700:4700::1111]:8443/hook",
		"https://hooks.example.com./x",
		"https://123.example.com/",
	} {
		require.NoError(t, guard.CheckURL(raw), raw)
	}
}

func TestCheckURLRejectsUnusableURLsSayingWhy(t *testing.T) {
	t.Parallel()
	guard := ssrf.New()
	cases := []struct {
		url, reason string
		blocked     bool
	}{
		{"", "empty", false},
		{"example.com/hooks", "no scheme", false},
		{"ftp://example.com/", `scheme "ftp" is not supported`, false},
		{"https:///hooks", "no host", false},
		{"https://exa mple.com/", "not a valid URL", false},
		{"https://example.com:99999/", "port", false},
		{"http://127.0.0.1:8080/", "loopback", true},
		{"http://localhost:8080/", "loopback", true},
		{"http://api.localhost/", "loopback", true},
		{"http://[::1]/", "loopback", true},
		{"http://[::ffff:127.0.0.1]/", "IPv4-mapped form of 127.0.0.1", true},
		{"http://169.254.169.254/latest/meta-data/", "metadata", true},
		{"http://10.0.0.7/", "private", true},
		{"http://[fd00::1]/", "unique local", true},
		{"http://100.64.1.1/", "carrier-grade NAT", true},
		{"http://[fe80::1%25eth0]/", "link-local", true},
		{"http://2130706433/", "four decimal numbers", false},
		{"http://127.1/", "four decimal numbers", false},
		{"http://0x7f.0.0.1/", "four decimal numbers", false},
		{"http://0177.0.0.1/", "four decimal numbers", false},
	}
	for _, tc := range cases {
		err := guard.CheckURL(tc.url)
		require.Error(t, err, "%q must be rejected", tc.url)
		var urlErr *ssrf.URLError
		require.ErrorAs(t, err, &urlErr)
		require.Contains(t, err.Error(), tc.reason, tc.url)
		require.Equal(t, tc.blocked, errors.Is(err, ssrf.ErrBlocked), "is %q refused as a blocked address", tc.url)
	}
}

func TestCheckURLHonoursTheAllowList(t *testing.T) {
	t.Parallel()
	guard := ssrf.New(netip.MustParsePrefix("127.0.0.0/8"))
	require.NoError(t, guard.CheckURL("http://127.0.0.1:8080/hook"))
	require.NoError(t, guard.CheckURL("http://localhost:8080/hook"), "localhost also means 127.0.0.1, which is allowed")
	require.NoError(t, guard.CheckURL("http://[::ffff:127.0.0.1]:8080/hook"))
	require.ErrorIs(t, guard.CheckURL("http://[::1]:8080/hook"), ssrf.ErrBlocked)
	require.ErrorIs(t, guard.CheckURL("http://10.0.0.1/hook"), ssrf.ErrBlocked)
}
