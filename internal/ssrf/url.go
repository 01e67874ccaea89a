package ssrf

import (
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// URLError explains why an endpoint URL cannot be used. It wraps a
// *BlockedError when the URL names a blocked address, so
// errors.Is(err, ErrBlocked) tells the two kinds of problem apart.
type URLError struct {
	// URL is the URL as given.
	URL string
	// Reason is a sentence saying what is wrong and how to fix it.
	Reason string
	// Err is the *BlockedError behind Reason, if any.
	Err error
}

func (e *URLError) Error() string {
	return fmt.Sprintf("endpoint URL %q: %s", e.URL, e.Reason)
}

func (e *URLError) Unwrap() error { return e.Err }

// CheckURL says whether raw can be an endpoint URL: it must be an absolute
// http or https URL with a host, and a host written as an IP address (or
// "localhost") must not be a blocked address. A host with non-ASCII
// characters is judged as net/http reads it when it connects, after IDNA
// mapping (UTS #46, [idna.Lookup]): "①②⑦.⓪.⓪.①" is 127.0.0.1 and a
// full-width "ｌｏｃａｌｈｏｓｔ" is localhost. Host names are not resolved
// here; their addresses are checked every time Herald connects (see
// [Guard.Control]). The error is a *URLError whose message says what to change.
func (g *Guard) CheckURL(raw string) error {
	fail := func(format string, args ...any) error {
		return &URLError{URL: raw, Reason: fmt.Sprintf(format, args...)}
	}
	if strings.TrimSpace(raw) == "" {
		return fail("the URL is empty; give an absolute URL such as https://example.com/webhooks")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fail("not a valid URL (%s); give an absolute URL such as https://example.com/webhooks", parseReason(err))
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	case "":
		return fail("the URL has no scheme; start it with https:// or http://")
	default:
		return fail("scheme %q is not supported; use https or http", u.Scheme)
	}
	host := u.Hostname()
	if host == "" {
		return fail("the URL has no host; write it like https://example.com/webhooks")
	}
	if port := u.Port(); port != "" && !validPort(port) {
		return fail("port %q is not a number between 1 and 65535", port)
	}
	name, err := lookupName(host)
	if err != nil {
		return fail("host %q is not a valid internationalised domain name (%v); write the host in ASCII, or in its xn-- (punycode) form", host, err)
	}
	shown, quoted := host, fmt.Sprintf("%q", host)
	if name != host {
		shown += " (read as " + name + ")"
		quoted += fmt.Sprintf(" (read as %q)", name)
	}
	if addrs := literalAddrs(name); addrs != nil {
		// localhost stands for two addresses; the dialer tries both, so
		// one allowed address makes the URL usable.
		var first error
		for _, addr := range addrs {
			err := g.Check(addr)
			if err == nil {
				return nil
			}
			if first == nil {
				first = err
			}
		}
		return &URLError{URL: raw, Reason: fmt.Sprintf("host %s: %v", shown, first), Err: first}
	}
	if looksLikeShorthandIPv4(name) {
		return fail("host %s looks like an IPv4 address in a shortened, octal or hexadecimal form; write it as four decimal numbers (a.b.c.d)", quoted)
	}
	return nil
}

// lookupName returns host as net/http connects to it: an ASCII host as it
// is, any other through IDNA's lookup mapping, which turns full-width
// letters, circled digits and ideographic full stops into their ASCII
// forms (and so can turn a host into an IP address or localhost).
func lookupName(host string) (string, error) {
	for i := 0; i < len(host); i++ {
		if host[i] >= utf8.RuneSelf {
			return idna.Lookup.ToASCII(host)
		}
	}
	return host, nil
}

// literalAddrs returns the addresses a host stands for without DNS: an IP
// literal, or loopback for localhost names (RFC 6761 reserves them).
func literalAddrs(host string) []netip.Addr {
	if addr, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{addr}
	}
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()}
	}
	return nil
}

// looksLikeShorthandIPv4 reports hosts like "2130706433", "127.1" or
// "0x7f.0.0.1": no DNS name has a purely numeric last label, but some
// resolvers read these as IPv4 addresses, so they are refused outright rather
// than left to luck.
func looksLikeShorthandIPv4(host string) bool {
	labels := strings.Split(strings.TrimSuffix(host, "."), ".")
	last := strings.ToLower(labels[len(labels)-1])
	if strings.HasPrefix(last, "0x") {
		last = last[2:]
		return strings.Trim(last, "0123456789abcdef") == ""
	}
	return last != "" && strings.Trim(last, "0123456789") == ""
}

func validPort(port string) bool {
	n := 0
	for _, c := range port {
		if c < '0' || c > '9' {
			return false
		}
		n = n*10 + int(c-'0')
		if n > 65535 {
			return false
		}
	}
	return n >= 1
}

// parseReason drops the URL that url.Parse repeats in its error, keeping the
// part that says what is wrong.
func parseReason(err error) string {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err.Error()
	}
	return err.Error()
}
