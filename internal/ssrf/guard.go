// Package ssrf keeps Herald from being used to reach places its customers
// must not reach: the machine it runs on, the private network around it, the
// cloud metadata service. Customers choose endpoint URLs, so without a guard
// an endpoint pointed at http://169.254.169.254/ or http://10.0.0.5:6379/
// would make Herald's dispatcher a proxy into its own network.
//
// The decisive check happens at dial time, on the address the connection is
// actually made to, after DNS resolution ([Guard.Control]): a host name whose
// DNS answer changes between the endpoint's creation and the delivery (DNS
// rebinding) cannot slip through. [Guard.CheckURL] additionally rejects, when
// an endpoint is created, URLs that can never work (wrong scheme, no host, a
// literal blocked address), so the customer hears about it at once.
//
// Refused: loopback, private (RFC 1918, unique local fc00::/7), link-local
// (169.254.0.0/16 with the metadata service, fe80::/10), carrier-grade NAT
// (100.64.0.0/10), multicast, unspecified, broadcast, reserved and
// documentation ranges (2001:db8::/32 and 3fff::/20 among them), the IPv6
// segment routing (5f00::/16) and ORCHIDv2 (2001:20::/28) blocks, and the
// IPv6 forms that carry one of those IPv4 addresses (::ffff:127.0.0.1,
// 64:ff9b::a00:1, 2002:7f00:1::). An operator allow-list of CIDRs
// ([Config], flag --allow-cidrs, env HERALD_ALLOW_CIDRS) lifts the guard for
// chosen ranges, for example 127.0.0.0/8 for local development and tests.
package ssrf

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// ErrBlocked is matched (with errors.Is) by every error that reports an
// address the guard refused, at dial time or in an endpoint URL.
var ErrBlocked = errors.New("address blocked by the SSRF guard")

// BlockedError reports an address the guard refused and why.
type BlockedError struct {
	// Addr is the refused address.
	Addr netip.Addr
	// Class says what kind of address it is, e.g. "loopback".
	Class string
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("address %s is %s; Herald does not connect to such addresses (SSRF guard); an operator can allow them by adding a range such as %s to --allow-cidrs (env %s)",
		e.Addr, e.Class, suggestedPrefix(e.Addr), EnvAllowCIDRs)
}

// Is makes errors.Is(err, ErrBlocked) true.
func (e *BlockedError) Is(target error) bool { return target == ErrBlocked }

// suggestedPrefix is the narrowest sensible range to name in an error: the
// address itself, so that following the hint never opens more than asked.
func suggestedPrefix(addr netip.Addr) netip.Prefix {
	addr = addr.WithZone("")
	return netip.PrefixFrom(addr, addr.BitLen())
}

// Guard decides which addresses Herald may connect to. The zero Guard blocks
// every range listed in the package documentation and allows nothing extra.
// A Guard is immutable and safe for concurrent use.
type Guard struct {
	allow []netip.Prefix
}

// New returns a Guard that lets through the addresses inside allow, on top of
// every public address.
func New(allow ...netip.Prefix) *Guard {
	masked := make([]netip.Prefix, len(allow))
	for i, p := range allow {
		masked[i] = p.Masked()
	}
	return &Guard{allow: masked}
}

// Allowed returns the allow-list, for logging at start-up.
func (g *Guard) Allowed() []netip.Prefix {
	return append([]netip.Prefix(nil), g.allow...)
}

// Check returns nil when Herald may connect to addr, and a *BlockedError
// otherwise. An IPv6 address that carries an IPv4 address (::ffff:10.0.0.1)
// is allowed when either form is inside the allow-list.
func (g *Guard) Check(addr netip.Addr) error {
	addr = addr.WithZone("")
	if g.allowed(addr) {
		return nil
	}
	if class := classify(addr); class != "" {
		return &BlockedError{Addr: addr, Class: class}
	}
	return nil
}

func (g *Guard) allowed(addr netip.Addr) bool {
	v4, _, embedded := embeddedIPv4(addr)
	for _, p := range g.allow {
		if p.Contains(addr) || (embedded && p.Contains(v4)) {
			return true
		}
	}
	return false
}

// Control is a [net.Dialer] Control function: the dialer calls it after DNS
// resolution, just before connecting, with the address it is about to
// connect to. Returning an error aborts that connection, so every address a
// host name resolves to is checked, each time it is dialled.
func (g *Guard) Control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("SSRF guard: cannot check dial address %q: %w", address, err)
	}
	return g.Check(ap.Addr())
}

// Dial defaults of [Guard.Dialer] and [Guard.Transport].
const (
	// DefaultDialTimeout bounds establishing a TCP connection.
	DefaultDialTimeout = 10 * time.Second
	// DefaultTLSHandshakeTimeout bounds the TLS handshake.
	DefaultTLSHandshakeTimeout = 10 * time.Second
	// MaxResponseHeaderBytes bounds the status line and headers of one
	// response: 64 KiB, far more than any receiver needs to say "200 OK".
	// Go's default, 10 MiB, let an endpoint answering with huge headers
	// hold that much memory for every worker it kept busy. An endpoint
	// answering with more gets a failed attempt: "server response headers
	// exceeded 65536 bytes" over HTTP/1.1; over HTTP/2, where the limit is
	// the header list size Herald advertises, the connection fails with a
	// COMPRESSION_ERROR or PROTOCOL_ERROR.
	MaxResponseHeaderBytes = 64 << 10
)

// Dialer returns a dialer that refuses blocked addresses at connect time,
// with a 10 s connect timeout.
func (g *Guard) Dialer() *net.Dialer {
	return &net.Dialer{
		Timeout:   DefaultDialTimeout,
		KeepAlive: 30 * time.Second,
		Control:   g.Control,
	}
}

// Transport returns an HTTP transport for delivering webhooks. It dials
// through [Guard.Dialer], so every connection (including each new one of a
// keep-alive pool) is checked, and it ignores the HTTP_PROXY family of
// environment variables: a proxy would make the dialled address the proxy's,
// hiding the real destination from the guard. Response headers are limited
// to [MaxResponseHeaderBytes]. The caller sets the request timeout on the
// http.Client and its redirect policy (Herald follows none).
func (g *Guard) Transport() *http.Transport {
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            g.Dialer().DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           1000,
		MaxIdleConnsPerHost:    16,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    DefaultTLSHandshakeTimeout,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: MaxResponseHeaderBytes,
	}
}

// ParseAllowList reads a comma- or space-separated list of CIDRs ("10.0.0.0/8,
// fd00::/8"); a bare address counts as a single-address range. An empty
// string is an empty list.
func ParseAllowList(s string) ([]netip.Prefix, error) {
	var prefixes []netip.Prefix
	for _, field := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
		if addr, err := netip.ParseAddr(field); err == nil {
			prefixes = append(prefixes, netip.PrefixFrom(addr.WithZone(""), addr.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(field)
		if err != nil {
			return nil, fmt.Errorf("allow-list entry %q is not a CIDR range (write it like 127.0.0.0/8 or fd00::/8)", field)
		}
		prefixes = append(prefixes, p.Masked())
	}
	return prefixes, nil
}
