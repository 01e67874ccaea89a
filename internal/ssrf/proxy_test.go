package ssrf_test

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/internal/webhooktest"
)

func proxyURL(t *testing.T, proxy *webhooktest.ConnectProxy, userinfo string) *url.URL {
	t.Helper()
	u, err := ssrf.ParseProxy("http://" + userinfo + proxy.Addr)
	require.NoError(t, err)
	return u
}

// A blocked address is refused before the proxy is asked: the proxy gets
// no connection at all, whether the URL names the address or a host name
// that resolves to it.
func TestProxyTransportRefusesBlockedAddressesBeforeAskingTheProxy(t *testing.T) {
	t.Parallel()
	bundle := setupDial(t)
	proxy := webhooktest.NewConnectProxy(t)
	transport := ssrf.New().ProxyTransport(proxyURL(t, proxy, ""))

	for _, target := range []string{
		"http://127.0.0.1:" + bundle.port + "/",
		"http://localhost:" + bundle.port + "/",
		"https://[::ffff:10.0.0.1]:" + bundle.port + "/",
	} {
		err := post(t, transport, target)
		require.ErrorIs(t, err, ssrf.ErrBlocked, target)
	}
	require.Zero(t, proxy.Accepted(), "the proxy was never asked")
	require.Zero(t, bundle.requests.Load())

	// The same receiver, allowed, is reached through the proxy by name.
	allowing := ssrf.New(netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")).ProxyTransport(proxyURL(t, proxy, ""))
	require.NoError(t, post(t, allowing, "http://localhost:"+bundle.port+"/"))
	require.Equal(t, []string{"CONNECT localhost:" + bundle.port}, proxy.Connects(), "the proxy resolves the name itself")
	require.Equal(t, int64(1), bundle.requests.Load())
}

func TestProxyTransportSendsCredentialsAndReportsRefusal(t *testing.T) {
	t.Parallel()
	bundle := setupDial(t)
	proxy := webhooktest.NewConnectProxy(t)
	proxy.Authorization = "Basic aGVyYWxkOnNlY3JldA==" // herald:secret
	loopback := ssrf.New(netip.MustParsePrefix("127.0.0.0/8"))
	target := "http://127.0.0.1:" + bundle.port + "/"

	require.NoError(t, post(t, loopback.ProxyTransport(proxyURL(t, proxy, "herald:secret@")), target))
	err := post(t, loopback.ProxyTransport(proxyURL(t, proxy, "herald:wrong@")), target)
	require.ErrorIs(t, err, ssrf.ErrProxyUnavailable, "wrong credentials are the proxy's, whatever the receiver")
	require.ErrorContains(t, err, "407 Proxy Authentication Required")
	require.NotContains(t, err.Error(), "wrong", "the proxy's password is not in errors")
	require.Equal(t, int64(1), bundle.requests.Load())
}

// A proxy that answers, but cannot reach the receiver, speaks of the
// receiver; a proxy that cannot be reached is unavailable.
func TestProxyTransportTellsTheProxysFailuresFromTheReceivers(t *testing.T) {
	t.Parallel()
	proxy := webhooktest.NewConnectProxy(t)
	loopback := ssrf.New(netip.MustParsePrefix("127.0.0.0/8"))
	closed := setupDial(t)
	closed.server.Close()

	err := post(t, loopback.ProxyTransport(proxyURL(t, proxy, "")), "http://127.0.0.1:"+closed.port+"/")
	require.ErrorIs(t, err, ssrf.ErrProxyRefused)
	require.ErrorContains(t, err, "502 Bad Gateway")
	require.NotErrorIs(t, err, ssrf.ErrProxyUnavailable)

	gone, err := ssrf.ParseProxy("http://127.0.0.1:" + closed.port)
	require.NoError(t, err)
	err = post(t, loopback.ProxyTransport(gone), "http://127.0.0.1:"+closed.port+"/")
	require.ErrorIs(t, err, ssrf.ErrProxyUnavailable)
}

func TestParseProxy(t *testing.T) {
	t.Parallel()
	u, err := ssrf.ParseProxy("http://user:pw@proxy.internal")
	require.NoError(t, err)
	require.Equal(t, "proxy.internal:80", u.Host)
	for raw, problem := range map[string]string{
		"proxy.internal:3128":          "is not a URL",
		"https://proxy.internal:3128":  "give an http:// URL",
		"socks5://proxy.internal:1080": "give an http:// URL",
		"http://proxy.internal/path":   "has a path",
		"":                             "is not a URL",
	} {
		_, err := ssrf.ParseProxy(raw)
		require.ErrorContains(t, err, problem, raw)
		require.ErrorContains(t, err, ssrf.EnvEgressProxy, raw)
	}
}

// The egress proxy's transport keeps the response header limit: a
// receiver reached through a real CONNECT proxy that answers with 9 MiB of
// headers fails the request instead of being read into memory.
func TestProxyTransportLimitsResponseHeaders(t *testing.T) {
	t.Parallel()
	server := httptest.NewServer(http.HandlerFunc(hugeHeaders))
	t.Cleanup(server.Close)
	proxy := webhooktest.NewConnectProxy(t)
	transport := ssrf.New(netip.MustParsePrefix("127.0.0.0/8")).ProxyTransport(proxyURL(t, proxy, ""))
	require.EqualValues(t, ssrf.MaxResponseHeaderBytes, transport.MaxResponseHeaderBytes)

	err := post(t, transport, server.URL)
	require.ErrorContains(t, err, "server response headers exceeded 65536 bytes")
	require.Equal(t, 1, proxy.Accepted(), "the request went through the proxy")
}
