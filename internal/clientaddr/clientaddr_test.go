package clientaddr_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/clientaddr"
)

func TestAddr(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, header, remote string
		values               []string
		want                 string
	}{
		{name: "no header configured", remote: "192.0.2.1:4321", values: []string{"203.0.113.7"}, want: "192.0.2.1"},
		{name: "IPv6 peer", remote: "[2001:db8::1]:4321", want: "2001:db8::1"},
		{name: "IPv4 in IPv6 form", remote: "[::ffff:192.0.2.1]:4321", want: "192.0.2.1"},
		{name: "the proxy's entry is the last", header: "X-Forwarded-For", remote: "10.0.0.2:1", values: []string{"198.51.100.9, 203.0.113.7"}, want: "203.0.113.7"},
		{name: "of the last header line", header: "X-Forwarded-For", remote: "10.0.0.2:1", values: []string{"198.51.100.9", "203.0.113.7"}, want: "203.0.113.7"},
		{name: "with a port", header: "X-Real-IP", remote: "10.0.0.2:1", values: []string{"[2001:db8::7]:443"}, want: "2001:db8::7"},
		{name: "garbage falls back", header: "X-Forwarded-For", remote: "10.0.0.2:1", values: []string{"198.51.100.9, unknown"}, want: "10.0.0.2"},
		{name: "missing falls back", header: "X-Forwarded-For", remote: "10.0.0.2:1", want: "10.0.0.2"},
		{name: "nothing at all", remote: "pipe", want: ""},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = tt.remote
		for _, v := range tt.values {
			r.Header.Add("X-Forwarded-For", v)
			r.Header.Add("X-Real-IP", v)
		}
		got := clientaddr.Resolver{Header: tt.header}.Addr(r)
		require.Equal(t, tt.want, clientaddr.String(got), tt.name)
	}
}

func TestMiddlewareStoresTheAddressForFrom(t *testing.T) {
	t.Parallel()
	var seen string
	h := clientaddr.Resolver{Header: "X-Real-IP"}.Middleware(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		seen = clientaddr.From(r).String()
	}))
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("X-Real-IP", "203.0.113.7")
	h.ServeHTTP(httptest.NewRecorder(), r)
	require.Equal(t, "203.0.113.7", seen)

	r.Header.Del("X-Real-IP")
	r.RemoteAddr = "192.0.2.1:1"
	require.Equal(t, "192.0.2.1", clientaddr.From(r).String(), "without the middleware, RemoteAddr")
}

func TestCheckHeader(t *testing.T) {
	t.Parallel()
	require.NoError(t, clientaddr.CheckHeader(""))
	require.NoError(t, clientaddr.CheckHeader("X-Forwarded-For"))
	require.ErrorContains(t, clientaddr.CheckHeader("X Forwarded For"), "not an HTTP header name")
	require.Error(t, clientaddr.CheckHeader("X-Forwarded-For:"))
}
