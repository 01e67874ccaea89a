package ssrf

import (
	"bufio"
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"time"
)

// EnvEgressProxy is the environment variable the dispatcher reads the
// egress proxy from (with the --egress-proxy flag); errors name it.
const EnvEgressProxy = "HERALD_EGRESS_PROXY"

// ParseProxy reads an egress proxy's URL: http://host:port, optionally
// with credentials (http://user:password@proxy.internal:3128). The port
// defaults to 80 when absent. Errors never echo the password.
func ParseProxy(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Scheme == "" {
		return nil, fmt.Errorf("--egress-proxy / %s is not a URL like http://proxy.internal:3128 (with user:password@ before the host when the proxy wants credentials)", EnvEgressProxy)
	}
	switch {
	case u.Scheme != "http":
		return nil, fmt.Errorf("--egress-proxy / %s uses %q; Herald speaks HTTP CONNECT to the proxy, so give an http:// URL (TLS to the receiver runs inside the tunnel)", EnvEgressProxy, u.Scheme)
	case (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("--egress-proxy / %s has a path, query or fragment; give only http://[user:password@]host:port", EnvEgressProxy)
	}
	if u.Port() == "" {
		u.Host = net.JoinHostPort(u.Hostname(), "80")
	}
	return u, nil
}

// ProxyTransport is Transport for a network where every outgoing
// connection goes through an egress proxy (HTTP CONNECT, RFC 9110
// §9.3.6), so that receivers can allow-list the proxy's addresses. The
// guard still decides: before asking the proxy, the transport resolves
// the receiver's host itself and refuses it when any address it resolves
// to is blocked; only then does it ask the proxy to CONNECT to host:port
// by name. The proxy resolves the name again to connect (a DNS answer
// may change in between), so it must refuse private and local ranges
// itself. The proxy's own address is the operator's choice and is not
// checked. Every request, http:// included, goes through a CONNECT
// tunnel, and TLS to the receiver runs inside it.
func (g *Guard) ProxyTransport(proxy *url.URL) *http.Transport {
	t := g.Transport()
	p := &proxyDialer{guard: g, proxy: proxy, dialer: &net.Dialer{Timeout: DefaultDialTimeout, KeepAlive: 30 * time.Second}}
	if proxy.User != nil {
		password, _ := proxy.User.Password()
		p.authorization = "Basic " + base64.StdEncoding.EncodeToString([]byte(proxy.User.Username()+":"+password))
	}
	t.DialContext = p.DialContext
	return t
}

// ErrProxyRefused is wrapped by the error of a CONNECT the proxy did not
// answer with 2xx.
var ErrProxyRefused = errors.New("the egress proxy refused to connect")

// ErrProxyUnavailable is wrapped by the errors that say the egress proxy
// itself failed, whatever the receiver: it could not be reached, broke off
// the CONNECT exchange, or refused Herald's credentials (407). A proxy
// that answers, refusing the destination (403) or failing to reach it
// (502, 504), or that is still connecting when the request's time runs
// out, speaks of the receiver.
var ErrProxyUnavailable = errors.New("the egress proxy is unavailable")

type proxyDialer struct {
	guard         *Guard
	proxy         *url.URL
	dialer        *net.Dialer
	resolver      *net.Resolver // nil: net.DefaultResolver
	authorization string        // Proxy-Authorization, "" for none
}

// DialContext checks address's host, then opens a CONNECT tunnel to it
// through the proxy.
func (p *proxyDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("SSRF guard: cannot check dial address %q: %w", address, err)
	}
	if err := p.check(ctx, host); err != nil {
		return nil, err
	}
	conn, err := p.dialer.DialContext(ctx, "tcp", p.proxy.Host)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrProxyUnavailable, p.proxy.Redacted(), err)
	}
	if err := p.connect(ctx, conn, address); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// check refuses host when it is, or resolves to, a blocked address: every
// address, since the proxy chooses which one it connects to.
func (p *proxyDialer) check(ctx context.Context, host string) error {
	if addr, err := netip.ParseAddr(host); err == nil {
		return p.guard.Check(addr)
	}
	resolver := p.resolver
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	addrs, err := resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return err
	}
	for _, addr := range addrs {
		if err := p.guard.Check(addr); err != nil {
			return err
		}
	}
	return nil
}

// connect asks the proxy, on conn, for a tunnel to address.
func (p *proxyDialer) connect(ctx context.Context, conn net.Conn, address string) error {
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
		defer conn.SetDeadline(time.Time{})
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	req := &http.Request{Method: http.MethodConnect, URL: &url.URL{Opaque: address}, Host: address, Header: http.Header{}}
	if p.authorization != "" {
		req.Header.Set("Proxy-Authorization", p.authorization)
	}
	if err := req.Write(conn); err != nil {
		return fmt.Errorf("%w: %s: CONNECT %s: %w", ErrProxyUnavailable, p.proxy.Redacted(), address, err)
	}
	// A proxy sends nothing after its answer until Herald speaks (the TLS
	// client hello or the request), so the reader holds no byte of the
	// tunnel once the answer is read; net/http reads its own CONNECT
	// answers the same way.
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	var netErr net.Error
	if err != nil && (ctx.Err() != nil || errors.As(err, &netErr) && netErr.Timeout()) {
		return fmt.Errorf("egress proxy %s: CONNECT %s: no answer in time: %w", p.proxy.Redacted(), address, cmp.Or(ctx.Err(), err))
	}
	if err != nil {
		return fmt.Errorf("%w: %s: CONNECT %s: %w", ErrProxyUnavailable, p.proxy.Redacted(), address, err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusProxyAuthRequired {
		return fmt.Errorf("%w: CONNECT %s answered %s: check the credentials in --egress-proxy (proxy %s)", ErrProxyUnavailable, address, resp.Status, p.proxy.Redacted())
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%w: CONNECT %s answered %s (proxy %s)", ErrProxyRefused, address, resp.Status, p.proxy.Redacted())
	}
	return nil
}
