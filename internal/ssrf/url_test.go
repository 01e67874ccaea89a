package ssrf_test

import (
	"errors"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/idna"

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
		"https://bücher.example/hooks",
		"https://ｅｘａｍｐｌｅ.com/",
		"https://xn--bcher-kva.example/",
		"https://under_score.example.com/",
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
		// Internationalised forms are read as net/http reads them when it
		// connects (IDNA, UTS #46): these are 127.0.0.1, localhost and the
		// metadata service.
		{"http://①②⑦.⓪.⓪.①:8080/", "host ①②⑦.⓪.⓪.① (read as 127.0.0.1): address 127.0.0.1 is loopback", true},
		{"http://ｌｏｃａｌｈｏｓｔ:8080/", "host ｌｏｃａｌｈｏｓｔ (read as localhost): address 127.0.0.1 is loopback", true},
		{"http://ＡＰＩ.ｌｏｃａｌｈｏｓｔ./", "read as api.localhost.", true},
		{"http://１６９.２５４.１６９.２５４/", "169.254.169.254 is link-local", true},
		{"http://10。0。0。7/", "host 10。0。0。7 (read as 10.0.0.7): address 10.0.0.7 is private", true},
		{"http://[::ffff:１２７.０.０.１]/", "not a valid URL", false},
		{"http://①②⑦.①/", `host "①②⑦.①" (read as "127.1") looks like an IPv4 address`, false},
		{"http://ex\u200dample.com/", "not a valid internationalised domain name", false},
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

// FuzzCheckURLReadsHostsAsTheDialer checks that a URL CheckURL accepts never
// names a blocked address or localhost once its host is read the way
// net/http reads it when it connects (IDNA lookup mapping for non-ASCII
// hosts): the creation check must not be fooled by a spelling the dialer
// understands.
func FuzzCheckURLReadsHostsAsTheDialer(f *testing.F) {
	for _, seed := range []string{
		"example.com", "127.0.0.1", "①②⑦.⓪.⓪.①", "ｌｏｃａｌｈｏｓｔ", "ＡＰＩ.ｌｏｃａｌｈｏｓｔ.",
		"１６９.２５４.１６９.２５４", "10。0。0。7", "[::１]", "bücher.example", "xn--bcher-kva.example",
		"⑩.⓪.⓪.⑤", "①②⑦.①", "ⓛⓞⓒⓐⓛⓗⓞⓢⓣ",
	} {
		f.Add(seed)
	}
	guard := ssrf.New()
	f.Fuzz(func(t *testing.T, host string) {
		raw := "http://" + host + "/"
		if guard.CheckURL(raw) != nil {
			return
		}
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("CheckURL accepted %q, which url.Parse refuses: %v", raw, err)
		}
		name := u.Hostname()
		if !isASCII(name) {
			if name, err = idna.Lookup.ToASCII(name); err != nil {
				t.Fatalf("CheckURL accepted %q, whose host net/http cannot read: %v", raw, err)
			}
		}
		if addr, err := netip.ParseAddr(name); err == nil && guard.Check(addr) != nil {
			t.Fatalf("CheckURL accepted %q, which net/http connects to as %s: %v", raw, addr, guard.Check(addr))
		}
		if lower := strings.TrimSuffix(strings.ToLower(name), "."); lower == "localhost" || strings.HasSuffix(lower, ".localhost") {
			t.Fatalf("CheckURL accepted %q, which net/http reads as %s", raw, name)
		}
	})
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
