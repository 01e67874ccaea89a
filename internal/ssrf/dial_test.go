package ssrf_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/ssrf"
)

type dialBundle struct {
	server   *httptest.Server
	requests *atomic.Int64
	port     string
}

func setupDial(t *testing.T) *dialBundle {
	t.Helper()
	var requests atomic.Int64
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
	}))
	t.Cleanup(server.Close)
	u, err := url.Parse(server.URL)
	require.NoError(t, err)
	return &dialBundle{server: server, requests: &requests, port: u.Port()}
}

func post(t *testing.T, transport http.RoundTripper, target string) error {
	t.Helper()
	client := &http.Client{Transport: transport}
	resp, err := client.Post(target, "application/json", nil)
	if err == nil {
		resp.Body.Close()
	}
	return err
}

func TestTransportRefusesLoopbackAtDialTime(t *testing.T) {
	t.Parallel()
	bundle := setupDial(t)
	transport := ssrf.New().Transport()

	for _, target := range []string{
		"http://127.0.0.1:" + bundle.port + "/",
		"http://localhost:" + bundle.port + "/",
		"http://[::ffff:127.0.0.1]:" + bundle.port + "/",
	} {
		err := post(t, transport, target)
		require.ErrorIs(t, err, ssrf.ErrBlocked, target)
		require.ErrorContains(t, err, "loopback", target)
	}
	require.Zero(t, bundle.requests.Load(), "no request may reach the receiver")
}

func TestTransportConnectsWhenAllowed(t *testing.T) {
	t.Parallel()
	bundle := setupDial(t)
	transport := ssrf.New(netip.MustParsePrefix("127.0.0.0/8")).Transport()

	require.NoError(t, post(t, transport, "http://127.0.0.1:"+bundle.port+"/"))
	require.NoError(t, post(t, transport, "http://[::ffff:127.0.0.1]:"+bundle.port+"/"))
	require.Equal(t, int64(2), bundle.requests.Load())
}

// net/http reads a non-ASCII host through IDNA before it connects: the
// circled digits reach the receiver on 127.0.0.1 when loopback is allowed,
// and are refused as loopback otherwise. CheckURL reads them the same way.
func TestTransportReadsInternationalisedHostsAsCheckURLDoes(t *testing.T) {
	t.Parallel()
	bundle := setupDial(t)
	target := "http://①②⑦.⓪.⓪.①:" + bundle.port + "/"

	err := post(t, ssrf.New().Transport(), target)
	require.ErrorIs(t, err, ssrf.ErrBlocked)
	require.ErrorContains(t, err, "127.0.0.1 is loopback")
	require.ErrorIs(t, ssrf.New().CheckURL(target), ssrf.ErrBlocked)

	require.NoError(t, post(t, ssrf.New(netip.MustParsePrefix("127.0.0.0/8")).Transport(), target))
	require.Equal(t, int64(1), bundle.requests.Load())
}

// hugeHeaders answers every request with nine 1 MiB headers: under Go's
// default limit of 10 MiB, so without a limit of its own a client holds
// all of them in memory.
func hugeHeaders(w http.ResponseWriter, _ *http.Request) {
	value := strings.Repeat("x", 1<<20)
	for i := range 9 {
		w.Header().Set(fmt.Sprintf("X-Huge-%d", i), value)
	}
	w.WriteHeader(http.StatusOK)
}

func TestTransportLimitsResponseHeaders(t *testing.T) {
	t.Parallel()
	loopback := ssrf.New(netip.MustParsePrefix("127.0.0.0/8"))
	require.EqualValues(t, 64<<10, ssrf.MaxResponseHeaderBytes)
	require.EqualValues(t, ssrf.MaxResponseHeaderBytes, loopback.Transport().MaxResponseHeaderBytes)

	t.Run("HTTP/1.1", func(t *testing.T) {
		t.Parallel()
		server := httptest.NewServer(http.HandlerFunc(hugeHeaders))
		t.Cleanup(server.Close)
		err := post(t, loopback.Transport(), server.URL)
		require.ErrorContains(t, err, "server response headers exceeded 65536 bytes")
	})

	t.Run("HTTP/2", func(t *testing.T) {
		t.Parallel()
		server := httptest.NewUnstartedServer(http.HandlerFunc(hugeHeaders))
		server.EnableHTTP2 = true
		server.StartTLS()
		t.Cleanup(server.Close)
		transport := loopback.Transport()
		transport.TLSClientConfig = server.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
		client := &http.Client{Transport: transport}
		resp, err := client.Post(server.URL, "application/json", nil)
		if err == nil {
			resp.Body.Close()
			require.Equal(t, "HTTP/2.0", resp.Proto, "the test must speak HTTP/2")
		}
		require.Error(t, err, "an HTTP/2 response with 9 MiB of headers must fail")
	})

	t.Run("headers under the limit", func(t *testing.T) {
		t.Parallel()
		server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("X-Large", strings.Repeat("x", 60<<10))
		}))
		t.Cleanup(server.Close)
		require.NoError(t, post(t, loopback.Transport(), server.URL))
	})
}

func TestTransportIgnoresProxyEnvironment(t *testing.T) {
	t.Parallel()
	require.Nil(t, ssrf.New().Transport().Proxy, "a proxy would hide the real destination from the guard")
}

// A host name is checked by what it resolves to when Herald connects: the
// URL check lets an ordinary-looking name through, and the dial refuses it
// because the DNS answer is 127.0.0.1 (the shape of a DNS rebinding attack).
func TestDialRefusesHostNameResolvingToLoopback(t *testing.T) {
	t.Parallel()
	bundle := setupDial(t)
	resolver := fakeResolver(t, netip.MustParseAddr("127.0.0.1"))
	target := "http://rebind.example.com:" + bundle.port + "/"

	guard := ssrf.New()
	require.NoError(t, guard.CheckURL(target), "nothing in the URL itself is wrong")
	dialer := guard.Dialer()
	dialer.Resolver = resolver
	transport := guard.Transport()
	transport.DialContext = dialer.DialContext
	err := post(t, transport, target)
	require.ErrorIs(t, err, ssrf.ErrBlocked)
	require.ErrorContains(t, err, "127.0.0.1 is loopback")
	require.Zero(t, bundle.requests.Load())

	// The same name with loopback allowed reaches the receiver, which shows
	// the resolver really answered 127.0.0.1.
	allowing := ssrf.New(netip.MustParsePrefix("127.0.0.0/8"))
	dialer = allowing.Dialer()
	dialer.Resolver = resolver
	transport = allowing.Transport()
	transport.DialContext = dialer.DialContext
	require.NoError(t, post(t, transport, target))
	require.Equal(t, int64(1), bundle.requests.Load())
}

// fakeResolver returns a resolver whose DNS server, on loopback, answers
// every A question with addr and every other question with no records.
func fakeResolver(t *testing.T, addr netip.Addr) *net.Resolver {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	go serveDNS(conn, addr.As4())
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "udp", conn.LocalAddr().String())
		},
	}
}

func serveDNS(conn net.PacketConn, ip [4]byte) {
	buf := make([]byte, 512)
	for {
		n, from, err := conn.ReadFrom(buf)
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil || n < 12 {
			continue
		}
		if reply, ok := dnsReply(buf[:n], ip); ok {
			_, _ = conn.WriteTo(reply, from)
		}
	}
}

// dnsReply builds the answer to a one-question query (RFC 1035 §4.1).
func dnsReply(query []byte, ip [4]byte) ([]byte, bool) {
	end := 12
	for end < len(query) && query[end] != 0 {
		end += int(query[end]) + 1
	}
	end += 5 // the root label, QTYPE and QCLASS
	if end > len(query) {
		return nil, false
	}
	qtype := binary.BigEndian.Uint16(query[end-4:])
	reply := make([]byte, 0, end+16)
	reply = append(reply, query[0], query[1], 0x81, 0x80, 0, 1) // id, response+recursion, one question
	answers := uint16(0)
	if qtype == 1 {
		answers = 1
	}
	reply = binary.BigEndian.AppendUint16(reply, answers)
	reply = append(reply, 0, 0, 0, 0)
	reply = append(reply, query[12:end]...)
	if answers == 1 {
		reply = append(reply, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4)
		reply = append(reply, ip[:]...)
	}
	return reply, true
}
