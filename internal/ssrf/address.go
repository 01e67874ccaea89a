package ssrf

import (
	"fmt"
	"net/netip"
)

// A blockedRange is a block of addresses Herald never connects to unless the
// operator allows it, and the words that explain why.
type blockedRange struct {
	prefix netip.Prefix
	class  string
}

// blockedRanges lists every range the guard refuses. Ranges that carry an
// IPv4 address inside an IPv6 one (mapped, translated, NAT64, 6to4) are not
// here: they are judged by the IPv4 address they carry, see embeddedIPv4.
// More specific ranges come first, so ::1 is "loopback" rather than
// "reserved".
var blockedRanges = mustRanges([]struct{ cidr, class string }{
	{"255.255.255.255/32", "broadcast"},
	{"0.0.0.0/8", "unspecified (this host)"},
	{"127.0.0.0/8", "loopback"},
	{"10.0.0.0/8", "private (RFC 1918)"},
	{"172.16.0.0/12", "private (RFC 1918)"},
	{"192.168.0.0/16", "private (RFC 1918)"},
	{"100.64.0.0/10", "carrier-grade NAT (RFC 6598)"},
	{"169.254.0.0/16", "link-local (includes the cloud metadata service 169.254.169.254)"},
	{"224.0.0.0/4", "multicast"},
	{"192.0.0.0/24", "reserved for IETF protocol assignments"},
	{"192.0.2.0/24", "reserved for documentation"},
	{"198.51.100.0/24", "reserved for documentation"},
	{"203.0.113.0/24", "reserved for documentation"},
	{"192.88.99.0/24", "reserved (former 6to4 relay anycast)"},
	{"198.18.0.0/15", "reserved for benchmarking"},
	{"240.0.0.0/4", "reserved"},

	{"::/128", "unspecified"},
	{"::1/128", "loopback"},
	{"::/96", "IPv4-compatible (deprecated)"},
	{"64:ff9b:1::/48", "local-use NAT64 (RFC 8215)"},
	{"100::/64", "reserved for discard"},
	{"2001::/32", "Teredo tunnelling"},
	{"2001:db8::/32", "reserved for documentation"},
	// Assigned after the list above was first written; none is routed on
	// the public internet, so a connection there reaches something local.
	{"2001:20::/28", "ORCHIDv2 overlay identifiers (RFC 7343)"},
	{"3fff::/20", "reserved for documentation (RFC 9637)"},
	{"5f00::/16", "reserved for segment routing (SRv6) SIDs (RFC 9602)"},
	{"fc00::/7", "private (unique local, fc00::/7)"},
	{"fe80::/10", "link-local"},
	{"fec0::/10", "site-local (deprecated)"},
	{"ff00::/8", "multicast"},
})

// embeddingRanges are IPv6 ranges whose addresses carry an IPv4 address; the
// guard judges such an address by the IPv4 address inside it, so that
// ::ffff:127.0.0.1 is refused as loopback while 64:ff9b::8.8.8.8 (a public
// address reached through NAT64) is allowed.
var embeddingRanges = []struct {
	prefix netip.Prefix
	form   string
	offset int // index of the first of the four IPv4 bytes
}{
	{netip.MustParsePrefix("::ffff:0:0/96"), "IPv4-mapped", 12},
	{netip.MustParsePrefix("::ffff:0:0:0/96"), "IPv4-translated", 12},
	{netip.MustParsePrefix("64:ff9b::/96"), "NAT64", 12},
	{netip.MustParsePrefix("2002::/16"), "6to4", 2},
}

func mustRanges(list []struct{ cidr, class string }) []blockedRange {
	ranges := make([]blockedRange, len(list))
	for i, r := range list {
		ranges[i] = blockedRange{prefix: netip.MustParsePrefix(r.cidr), class: r.class}
	}
	return ranges
}

// embeddedIPv4 returns the IPv4 address carried inside an IPv6 address of one
// of the embedding ranges, and the name of that form.
func embeddedIPv4(addr netip.Addr) (v4 netip.Addr, form string, ok bool) {
	if !addr.Is6() {
		return netip.Addr{}, "", false
	}
	b := addr.As16()
	for _, r := range embeddingRanges {
		if r.prefix.Contains(addr) {
			return netip.AddrFrom4([4]byte(b[r.offset : r.offset+4])), r.form, true
		}
	}
	return netip.Addr{}, "", false
}

// classify returns why addr is blocked, or "" when it is a public address.
func classify(addr netip.Addr) string {
	addr = addr.WithZone("")
	if v4, form, ok := embeddedIPv4(addr); ok {
		if class := classify(v4); class != "" {
			return fmt.Sprintf("%s form of %s, which is %s", form, v4, class)
		}
		return ""
	}
	for _, r := range blockedRanges {
		if r.prefix.Contains(addr) {
			return r.class
		}
	}
	return ""
}
