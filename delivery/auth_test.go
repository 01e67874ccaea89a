package delivery_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/endpointauth"
	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/internal/webhooktest"
	"github.com/heraldhq/herald/store"
)

// serverCA is the PEM of an httptest TLS server's certificate, which an
// endpoint's CA bundle trusts.
func serverCA(server *httptest.Server) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw}))
}

func (b *testBundle) setTLS(t *testing.T, ctx context.Context, endpoint uuid.UUID, config *endpointauth.TLS) {
	t.Helper()
	require.NoError(t, b.store.SetCredentials(ctx, endpoint, store.CredentialsChange{TLS: &config}))
}

func (b *testBundle) setAuth(t *testing.T, ctx context.Context, endpoint uuid.UUID, auth *endpointauth.Authentication) {
	t.Helper()
	require.NoError(t, b.store.SetCredentials(ctx, endpoint, store.CredentialsChange{Authentication: &auth}))
}

// A receiver that requires a client certificate gets the endpoint's, over
// one kept connection while the certificate is unchanged; a new
// certificate is presented from the next attempt on; an endpoint without
// one is refused at the handshake and the receiver sees no request.
func TestMutualTLSPresentsTheEndpointsCertificate(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, delivery.Config{Policy: fast})
	ca := webhooktest.NewCA(t)
	var (
		mu          sync.Mutex
		commonNames []string
		connections atomic.Int64
	)
	server := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		commonNames = append(commonNames, r.TLS.PeerCertificates[0].Subject.CommonName)
		mu.Unlock()
	}))
	server.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool}
	server.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			connections.Add(1)
		}
	}
	server.StartTLS()
	t.Cleanup(server.Close)

	certPEM, keyPEM := ca.IssueClient(t, "first", time.Now().Add(30*24*time.Hour))
	with := b.endpoint(t, ctx, server.URL)
	b.setTLS(t, ctx, with, &endpointauth.TLS{ClientCertificate: certPEM, ClientKey: keyPEM, CABundle: serverCA(server)})
	for range 3 {
		b.waitStatus(t, ctx, b.enqueue(t, ctx, b.message(t, ctx), with), "succeeded")
	}
	require.Equal(t, int64(1), connections.Load(), "the endpoint's transport is kept between attempts, with its connection")

	certPEM, keyPEM = ca.IssueClient(t, "second", time.Now().Add(30*24*time.Hour))
	b.setTLS(t, ctx, with, &endpointauth.TLS{ClientCertificate: certPEM, ClientKey: keyPEM, CABundle: serverCA(server)})
	b.waitStatus(t, ctx, b.enqueue(t, ctx, b.message(t, ctx), with), "succeeded")
	mu.Lock()
	require.Equal(t, []string{"first", "first", "first", "second"}, commonNames)
	mu.Unlock()

	without := b.endpoint(t, ctx, server.URL)
	b.setTLS(t, ctx, without, &endpointauth.TLS{CABundle: serverCA(server)})
	id := b.enqueue(t, ctx, b.message(t, ctx), without)
	require.Eventually(t, func() bool { return len(b.attempts(t, ctx, id)) > 0 }, 10*time.Second, 20*time.Millisecond)
	a := b.attempts(t, ctx, id)[0]
	require.Equal(t, "retry", a.Outcome)
	require.Nil(t, a.StatusCode)
	require.Contains(t, *a.Error, "certificate", "the handshake failure is the attempt's error")
	mu.Lock()
	require.Len(t, commonNames, 4, "no request without a certificate reaches the receiver")
	mu.Unlock()
}

// tokenServer is an OAuth2 token endpoint on loopback (TLS) issuing
// tokens that live lifetime; a token is good until it expires or is
// revoked.
type tokenServer struct {
	*httptest.Server
	lifetime time.Duration

	mu      sync.Mutex
	issued  []string
	expiry  map[string]time.Time
	revoked map[string]bool
	refuse  bool
}

func newTokenServer(t *testing.T, lifetime time.Duration) *tokenServer {
	ts := &tokenServer{lifetime: lifetime, expiry: make(map[string]time.Time), revoked: make(map[string]bool)}
	ts.Server = httptest.NewTLSServer(http.HandlerFunc(ts.serve))
	t.Cleanup(ts.Close)
	return ts
}

func (ts *tokenServer) serve(w http.ResponseWriter, r *http.Request) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	id, secret, _ := r.BasicAuth()
	if ts.refuse || id != "herald" || secret != "s3cret" || r.PostFormValue("grant_type") != "client_credentials" || r.PostFormValue("scope") != "webhooks:write" {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":"invalid_client","error_description":"unknown client"}`))
		return
	}
	token := fmt.Sprintf("tok-%d", len(ts.issued)+1)
	ts.issued = append(ts.issued, token)
	ts.expiry[token] = time.Now().Add(ts.lifetime)
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": token, "token_type": "Bearer", "expires_in": int(ts.lifetime / time.Second)})
}

// valid reports whether an Authorization header carries a good token.
func (ts *tokenServer) valid(authorization string) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	token, ok := strings.CutPrefix(authorization, "Bearer ")
	expiry, known := ts.expiry[token]
	return ok && known && time.Now().Before(expiry) && !ts.revoked[token]
}

func (ts *tokenServer) issuedCount() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return len(ts.issued)
}

func (ts *tokenServer) revokeAll() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, token := range ts.issued {
		ts.revoked[token] = true
	}
}

func (ts *tokenServer) authentication() *endpointauth.Authentication {
	return &endpointauth.Authentication{Type: endpointauth.OAuth2ClientCredentials, TokenURL: ts.URL + "/oauth2/token",
		ClientID: "herald", ClientSecret: "s3cret", Scopes: []string{"webhooks:write"}}
}

// Deliveries carry a valid token across its expiry and a revocation: the
// token is reused while fresh, replaced before it expires, and replaced
// exactly once when the receiver answers 401.
func TestOAuth2TokenIsCachedRefreshedAndRetriedOnceOn401(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, delivery.Config{Policy: fast})
	tokens := newTokenServer(t, 2*time.Second)
	r := webhooktest.NewReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		if !tokens.valid(r.Header.Get("Authorization")) {
			w.WriteHeader(http.StatusUnauthorized)
		}
	})
	endpoint := b.endpoint(t, ctx, r.URL)
	b.setAuth(t, ctx, endpoint, tokens.authentication())
	b.setTLS(t, ctx, endpoint, &endpointauth.TLS{CABundle: serverCA(tokens.Server)})

	deliver := func() uuid.UUID {
		id := b.enqueue(t, ctx, b.message(t, ctx), endpoint)
		b.waitStatus(t, ctx, id, "succeeded")
		return id
	}
	deliver()
	deliver()
	require.Equal(t, 1, tokens.issuedCount(), "a fresh token is reused")

	time.Sleep(2100 * time.Millisecond) // past the first token's expiry
	id := deliver()
	require.Equal(t, 2, tokens.issuedCount(), "an expired token is replaced before sending")
	require.Len(t, b.attempts(t, ctx, id), 1)
	require.Equal(t, "Bearer [redacted]", b.attempts(t, ctx, id)[0].RequestHeaders["authorization"], "the token is not stored")

	tokens.revokeAll()
	id = deliver()
	require.Equal(t, 3, tokens.issuedCount(), "a 401 fetches exactly one new token")
	attempts := b.attempts(t, ctx, id)
	require.Len(t, attempts, 1, "the retry with a fresh token is part of the same attempt")
	require.Equal(t, 200, *attempts[0].StatusCode)

	reqs := r.Requests()
	require.Len(t, reqs, 5, "four deliveries and the one refused with a revoked token")
	require.Equal(t, "Bearer tok-2", reqs[3].Header.Get("Authorization"))
	require.Equal(t, "Bearer tok-3", reqs[4].Header.Get("Authorization"))
}

// A token endpoint that refuses is the endpoint's failure, recorded on the
// attempt as a token error; nothing reaches the receiver.
func TestOAuth2TokenFailureIsRecordedAndNothingIsSent(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, delivery.Config{Policy: fast})
	tokens := newTokenServer(t, time.Hour)
	tokens.refuse = true
	r := webhooktest.NewReceiver(t, webhooktest.Status(http.StatusOK))
	endpoint := b.endpoint(t, ctx, r.URL)
	b.setAuth(t, ctx, endpoint, tokens.authentication())
	b.setTLS(t, ctx, endpoint, &endpointauth.TLS{CABundle: serverCA(tokens.Server)})

	id := b.enqueue(t, ctx, b.message(t, ctx), endpoint)
	require.Eventually(t, func() bool { return len(b.attempts(t, ctx, id)) >= 2 }, 10*time.Second, 20*time.Millisecond)
	for _, a := range b.attempts(t, ctx, id) {
		require.Equal(t, "retry", a.Outcome)
		require.Nil(t, a.StatusCode)
		require.Equal(t, "not sent, no OAuth2 access token: the token request to "+tokens.URL+"/oauth2/token failed: the token endpoint answered HTTP 401 Unauthorized (invalid_client: unknown client)", *a.Error)
		require.Empty(t, a.RequestHeaders, "nothing was sent")
	}
	require.Empty(t, r.Requests())

	// Once the token endpoint accepts again, the delivery goes out.
	tokens.mu.Lock()
	tokens.refuse = false
	tokens.mu.Unlock()
	b.waitStatus(t, ctx, id, "succeeded")
	require.Equal(t, "Bearer tok-1", r.Requests()[0].Header.Get("Authorization"))
}

// Static Authorization headers arrive as configured and are stored
// redacted.
func TestStaticAuthorization(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, delivery.Config{Policy: fast})
	r := webhooktest.NewReceiver(t, webhooktest.Status(http.StatusOK))
	bearer := b.endpoint(t, ctx, r.URL)
	b.setAuth(t, ctx, bearer, &endpointauth.Authentication{Type: endpointauth.Bearer, Token: "t0ken"})
	basic := b.endpoint(t, ctx, r.URL)
	b.setAuth(t, ctx, basic, &endpointauth.Authentication{Type: endpointauth.Basic, Username: "herald", Password: "pa55"})

	first := b.enqueue(t, ctx, b.message(t, ctx), bearer)
	b.waitStatus(t, ctx, first, "succeeded")
	second := b.enqueue(t, ctx, b.message(t, ctx), basic)
	b.waitStatus(t, ctx, second, "succeeded")
	reqs := r.Requests()
	require.Equal(t, "Bearer t0ken", reqs[0].Header.Get("Authorization"))
	require.Equal(t, "Basic aGVyYWxkOnBhNTU=", reqs[1].Header.Get("Authorization"))
	require.Equal(t, "Bearer [redacted]", b.attempts(t, ctx, first)[0].RequestHeaders["authorization"])
	require.Equal(t, "Basic [redacted]", b.attempts(t, ctx, second)[0].RequestHeaders["authorization"])

	// Removing the authentication takes effect at the next attempt.
	b.setAuth(t, ctx, bearer, nil)
	b.waitStatus(t, ctx, b.enqueue(t, ctx, b.message(t, ctx), bearer), "succeeded")
	require.Empty(t, r.Requests()[2].Header.Get("Authorization"))
}

// With an egress proxy every connection to a receiver, and to a token
// endpoint, is a CONNECT tunnel: the receiver sees connections only from
// the proxy.
func TestEgressProxyCarriesDeliveriesAndTokenRequests(t *testing.T) {
	t.Parallel()
	proxy := webhooktest.NewConnectProxy(t)
	proxy.Authorization = "Basic aGVyYWxkOnByb3h5LXBhc3M=" // herald:proxy-pass
	proxyURL, err := ssrf.ParseProxy("http://herald:proxy-pass@" + proxy.Addr)
	require.NoError(t, err)
	guard := ssrf.New(netip.MustParsePrefix("127.0.0.0/8"))
	b, ctx := setup(t, delivery.Config{Policy: fast, Transport: guard.ProxyTransport(proxyURL)})

	tokens := newTokenServer(t, time.Hour)
	r := webhooktest.NewReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		if auth := r.Header.Get("Authorization"); auth != "" && !tokens.valid(auth) {
			w.WriteHeader(http.StatusUnauthorized)
		}
	})
	plain := b.endpoint(t, ctx, r.URL)
	withToken := b.endpoint(t, ctx, r.URL)
	b.setAuth(t, ctx, withToken, tokens.authentication())
	b.setTLS(t, ctx, withToken, &endpointauth.TLS{CABundle: serverCA(tokens.Server)})
	for _, endpoint := range []uuid.UUID{plain, withToken, plain, withToken} {
		b.waitStatus(t, ctx, b.enqueue(t, ctx, b.message(t, ctx), endpoint), "succeeded")
	}

	reqs := r.Requests()
	require.Len(t, reqs, 4)
	for _, req := range reqs {
		require.True(t, proxy.Made(req.RemoteAddr), "the request from %s came through the proxy", req.RemoteAddr)
	}
	receiver, err := url.Parse(r.URL)
	require.NoError(t, err)
	tokenHost, err := url.Parse(tokens.URL)
	require.NoError(t, err)
	connects := proxy.Connects()
	require.Contains(t, connects, "CONNECT "+receiver.Host)
	require.Contains(t, connects, "CONNECT "+tokenHost.Host, "the token request goes through the proxy too")
	for _, c := range connects {
		require.Contains(t, []string{"CONNECT " + receiver.Host, "CONNECT " + tokenHost.Host}, c)
	}
}

// A receiver check (Probe) sends with the endpoint's credentials, read
// afresh, as deliveries do.
func TestProbeSendsWithTheEndpointsCredentials(t *testing.T) {
	t.Parallel()
	b, ctx := newBundle(t)
	worker, err := delivery.NewWorker(delivery.Config{DB: b.pool, Secrets: b.store, Transport: webhooktest.Transport()})
	require.NoError(t, err)
	r := webhooktest.NewReceiver(t, webhooktest.Status(http.StatusOK))
	e, err := b.store.CreateEndpoint(ctx, store.NewEndpoint{TenantID: tenant, URL: r.URL})
	require.NoError(t, err)

	require.Equal(t, http.StatusOK, worker.Probe(ctx, e.ID, r.URL, uuid.New(), []byte(`{}`)).StatusCode)
	b.setAuth(t, ctx, e.ID, &endpointauth.Authentication{Type: endpointauth.Bearer, Token: "probe-token"})
	require.Equal(t, http.StatusOK, worker.Probe(ctx, e.ID, r.URL, uuid.New(), []byte(`{}`)).StatusCode)

	reqs := r.Requests()
	require.Empty(t, reqs[0].Header.Get("Authorization"))
	require.Equal(t, "Bearer probe-token", reqs[1].Header.Get("Authorization"), "a change is seen at the next probe")
}

// An endpoint's own transport (mutual TLS) dials through the same SSRF
// guard as the worker's: a blocked address is refused.
func TestMutualTLSTransportKeepsTheSSRFGuard(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, delivery.Config{Policy: fast, Transport: ssrf.New().Transport()})
	ca := webhooktest.NewCA(t)
	var requests atomic.Int64
	server := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { requests.Add(1) }))
	t.Cleanup(server.Close)
	certPEM, keyPEM := ca.IssueClient(t, "herald", time.Now().Add(time.Hour))
	endpoint := b.endpoint(t, ctx, server.URL)
	b.setTLS(t, ctx, endpoint, &endpointauth.TLS{ClientCertificate: certPEM, ClientKey: keyPEM, CABundle: serverCA(server)})

	id := b.enqueue(t, ctx, b.message(t, ctx), endpoint)
	require.Eventually(t, func() bool { return len(b.attempts(t, ctx, id)) > 0 }, 10*time.Second, 20*time.Millisecond)
	require.Contains(t, *b.attempts(t, ctx, id)[0].Error, "127.0.0.1 is loopback; Herald does not connect to such addresses (SSRF guard)")
	require.Zero(t, requests.Load())
}

// An endpoint's own transport (mutual TLS) keeps the worker's response
// header limit: a receiver that answers with 9 MiB of headers fails the
// attempt without being read into memory.
func TestMutualTLSTransportKeepsTheResponseHeaderLimit(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, delivery.Config{Policy: once, Transport: ssrf.New(netip.MustParsePrefix("127.0.0.0/8")).Transport()})
	ca := webhooktest.NewCA(t)
	var requests atomic.Int64
	server := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		hugeHeaders(w)
	}))
	server.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool}
	server.StartTLS()
	t.Cleanup(server.Close)
	certPEM, keyPEM := ca.IssueClient(t, "herald", time.Now().Add(time.Hour))
	endpoint := b.endpoint(t, ctx, server.URL)
	b.setTLS(t, ctx, endpoint, &endpointauth.TLS{ClientCertificate: certPEM, ClientKey: keyPEM, CABundle: serverCA(server)})

	id := b.enqueue(t, ctx, b.message(t, ctx), endpoint)
	d := b.waitStatus(t, ctx, id, "failed")
	require.Equal(t, int64(1), requests.Load(), "the request was made, with the client certificate")
	require.Contains(t, *d.LastError, "server response headers exceeded 65536 bytes")
}

// The token request is an outgoing request like a delivery: the SSRF guard
// refuses a token endpoint on a blocked address, and nothing is sent.
func TestOAuth2TokenRequestGoesThroughTheSSRFGuard(t *testing.T) {
	t.Parallel()
	guard := ssrf.New(netip.MustParsePrefix("127.0.0.2/32")) // the receiver's address only
	b, ctx := setup(t, delivery.Config{Policy: fast, Transport: guard.Transport()})
	tokens := newTokenServer(t, time.Hour) // on 127.0.0.1, which stays blocked
	var requests atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	require.NoError(t, err)
	receiver := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) { requests.Add(1) })}}
	receiver.Start()
	t.Cleanup(receiver.Close)
	endpoint := b.endpoint(t, ctx, receiver.URL)
	b.setAuth(t, ctx, endpoint, tokens.authentication())
	b.setTLS(t, ctx, endpoint, &endpointauth.TLS{CABundle: serverCA(tokens.Server)})

	id := b.enqueue(t, ctx, b.message(t, ctx), endpoint)
	require.Eventually(t, func() bool { return len(b.attempts(t, ctx, id)) > 0 }, 10*time.Second, 20*time.Millisecond)
	a := b.attempts(t, ctx, id)[0]
	require.Contains(t, *a.Error, "not sent, no OAuth2 access token")
	require.Contains(t, *a.Error, "127.0.0.1 is loopback; Herald does not connect to such addresses (SSRF guard)")
	require.Zero(t, tokens.issuedCount())
	require.Zero(t, requests.Load())
}

// An endpoint's authentication and its custom headers go together: the
// request carries the Authorization of the one and the headers of the
// other, within the endpoint's own timeout, and the attempt log redacts
// the one and masks the secret value of the other.
func TestAuthenticationBesideCustomHeaders(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, delivery.Config{Policy: fast, Timeout: 100 * time.Millisecond})
	r := webhooktest.NewReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		time.Sleep(300 * time.Millisecond) // beyond the worker's timeout, within the endpoint's
		w.WriteHeader(http.StatusOK)
	})
	e, err := b.store.CreateEndpoint(ctx, store.NewEndpoint{TenantID: tenant, URL: r.URL, Timeout: 2 * time.Second, Headers: []store.EndpointHeader{
		{Name: "X-Region", Value: "eu"},
		{Name: "X-Api-Key", Value: "sk_live_123", Secret: true},
	}})
	require.NoError(t, err)
	b.setAuth(t, ctx, e.ID, &endpointauth.Authentication{Type: endpointauth.Bearer, Token: "t0ken"})

	id := b.enqueue(t, ctx, b.message(t, ctx), e.ID)
	b.waitStatus(t, ctx, id, "succeeded")
	req := r.Requests()[0]
	require.Equal(t, "Bearer t0ken", req.Header.Get("Authorization"))
	require.Equal(t, "eu", req.Header.Get("X-Region"))
	require.Equal(t, "sk_live_123", req.Header.Get("X-Api-Key"))
	logged := b.attempts(t, ctx, id)[0].RequestHeaders
	require.Equal(t, "Bearer [redacted]", logged["authorization"])
	require.Equal(t, store.MaskedHeaderValue, logged["x-api-key"])
	require.Equal(t, "eu", logged["x-region"])
}
