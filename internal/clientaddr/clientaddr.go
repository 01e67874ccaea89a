// Package clientaddr finds the address of the client that sent a request:
// the connection's peer, or, behind a proxy that Herald is told to trust,
// the address that proxy wrote into a header. Request logs and the
// throttling of failed authentication use it.
package clientaddr

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"strings"
)

// Resolver finds a request's client address. The zero Resolver uses the
// connection's address (http.Request.RemoteAddr), which is right when
// clients connect to Herald directly.
type Resolver struct {
	// Header names a header that a proxy in front of Herald sets to the
	// client's address, such as X-Forwarded-For or X-Real-IP. The last
	// address in it is used: a proxy appends the address of the peer it
	// saw, while earlier entries came from the client and may be forged.
	// A request whose header holds no valid address falls back to
	// RemoteAddr. Empty (the default) means RemoteAddr always.
	//
	// Set it only when every request reaches Herald through that proxy:
	// a client that connects directly can write any address into it.
	Header string
}

var validHeader = regexp.MustCompile(`^[A-Za-z0-9!#$%&'*+.^_|~-]+$`)

// CheckHeader reports whether name can be a Resolver's Header: empty, or
// an HTTP header name (letters, digits and !#$%&'*+-.^_|~).
func CheckHeader(name string) error {
	if name != "" && !validHeader.MatchString(name) {
		return fmt.Errorf("%q is not an HTTP header name; give one such as X-Forwarded-For, or nothing to use the connection's address", name)
	}
	return nil
}

// Addr returns the client address of r, or the zero Addr when neither the
// header nor RemoteAddr holds one (as for a request a test made by hand).
func (res Resolver) Addr(r *http.Request) netip.Addr {
	if res.Header != "" {
		if values := r.Header.Values(res.Header); len(values) > 0 {
			last := values[len(values)-1]
			if i := strings.LastIndexByte(last, ','); i >= 0 {
				last = last[i+1:]
			}
			if addr, ok := parse(strings.TrimSpace(last)); ok {
				return addr
			}
		}
	}
	addr, _ := parse(r.RemoteAddr)
	return addr
}

// Middleware stores every request's client address in its context, where
// From finds it.
func (res Resolver) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := context.WithValue(r.Context(), addrKey{}, res.Addr(r))
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

type addrKey struct{}

// From returns the client address Middleware stored for r, or, for a
// request that did not pass through it, the address in RemoteAddr.
func From(r *http.Request) netip.Addr {
	if addr, ok := r.Context().Value(addrKey{}).(netip.Addr); ok {
		return addr
	}
	return Resolver{}.Addr(r)
}

// String is addr as a log line shows it: "" for the zero Addr.
func String(addr netip.Addr) string {
	if !addr.IsValid() {
		return ""
	}
	return addr.String()
}

// parse reads "192.0.2.1", "2001:db8::1", "192.0.2.1:1234" or
// "[2001:db8::1]:1234". IPv4 addresses written as IPv6 are unmapped and
// zones dropped, so one client always has one form.
func parse(s string) (netip.Addr, bool) {
	addr, err := netip.ParseAddr(s)
	if err != nil {
		host, _, splitErr := net.SplitHostPort(s)
		if splitErr != nil {
			return netip.Addr{}, false
		}
		if addr, err = netip.ParseAddr(host); err != nil {
			return netip.Addr{}, false
		}
	}
	return addr.Unmap().WithZone(""), true
}
