package ssrf_test

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/ssrf"
)

func TestCheckRefusesEveryBlockedClass(t *testing.T) {
	t.Parallel()
	guard := ssrf.New()
	cases := []struct{ addr, class string }{
		{"127.0.0.1", "loopback"},
		{"127.255.255.254", "loopback"},
		{"::1", "loopback"},
		{"10.1.2.3", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.1", "private"},
		{"fc00::1", "unique local"},
		{"fd12:3456::1", "unique local"},
		{"169.254.169.254", "link-local"},
		{"169.254.0.1", "link-local"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"100.64.0.1", "carrier-grade NAT"},
		{"100.127.255.255", "carrier-grade NAT"},
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"ff02::1", "multicast"},
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "unspecified"},
		{"::", "unspecified"},
		{"255.255.255.255", "broadcast"},
		{"240.0.0.1", "reserved"},
		{"192.0.2.1", "documentation"},
		{"2001:db8::1", "documentation"},
		{"3fff::1", "documentation"},
		{"3fff:fff:ffff::1", "documentation"},
		{"5f00::1", "segment routing"},
		{"5f00:ffff::1", "segment routing"},
		{"2001:20::1", "ORCHIDv2"},
		{"2001:2f:ffff::1", "ORCHIDv2"},
		{"::ffff:127.0.0.1", "IPv4-mapped form of 127.0.0.1, which is loopback"},
		{"::ffff:10.0.0.1", "IPv4-mapped form of 10.0.0.1, which is private"},
		{"::ffff:169.254.169.254", "IPv4-mapped form of 169.254.169.254, which is link-local"},
		{"::ffff:0:127.0.0.1", "IPv4-translated form of 127.0.0.1"},
		{"64:ff9b::10.0.0.1", "NAT64 form of 10.0.0.1, which is private"},
		{"64:ff9b::127.0.0.1", "NAT64 form of 127.0.0.1, which is loopback"},
		{"64:ff9b:1::1", "local-use NAT64"},
		{"2002:7f00:1::", "6to4 form of 127.0.0.1, which is loopback"},
		{"::127.0.0.1", "IPv4-compatible"},
	}
	for _, tc := range cases {
		err := guard.Check(netip.MustParseAddr(tc.addr))
		require.ErrorIs(t, err, ssrf.ErrBlocked, "%s must be refused", tc.addr)
		var blocked *ssrf.BlockedError
		require.ErrorAs(t, err, &blocked)
		require.Contains(t, blocked.Class, tc.class, "class of %s", tc.addr)
		require.Contains(t, err.Error(), ssrf.EnvAllowCIDRs, "the error says how to allow %s", tc.addr)
	}
}

func TestCheckLetsPublicAddressesThrough(t *testing.T) {
	t.Parallel()
	guard := ssrf.New()
	for _, addr := range []string{
		"8.8.8.8", "1.1.1.1", "93.184.216.34", "172.32.0.1", "100.128.0.1",
		"2606:4700:4700::1111", "::ffff:8.8.8.8", "64:ff9b::8.8.8.8", "2002:808:808::",
		"3fff:1000::1", "5f01::1", "2001:30::1",
	} {
		require.NoError(t, guard.Check(netip.MustParseAddr(addr)), "%s is public", addr)
	}
}

func TestAllowListLiftsOnlyItsRanges(t *testing.T) {
	t.Parallel()
	allow, err := ssrf.ParseAllowList("127.0.0.0/8, 10.1.0.0/16 fd00::5")
	require.NoError(t, err)
	guard := ssrf.New(allow...)

	for _, addr := range []string{"127.0.0.1", "::ffff:127.0.0.1", "10.1.200.3", "fd00::5"} {
		require.NoError(t, guard.Check(netip.MustParseAddr(addr)), "%s is allowed", addr)
	}
	for _, addr := range []string{"::1", "10.2.0.1", "fd00::6", "169.254.169.254"} {
		require.ErrorIs(t, guard.Check(netip.MustParseAddr(addr)), ssrf.ErrBlocked, "%s stays blocked", addr)
	}
}

func TestParseAllowListNamesTheBadEntry(t *testing.T) {
	t.Parallel()
	_, err := ssrf.ParseAllowList("127.0.0.0/8,10.0.0.0/33")
	require.ErrorContains(t, err, `"10.0.0.0/33"`)
	require.ErrorContains(t, err, "127.0.0.0/8")

	_, err = ssrf.Config{AllowCIDRs: "localhost"}.Guard()
	require.ErrorContains(t, err, ssrf.EnvAllowCIDRs)
	require.ErrorContains(t, err, `"localhost"`)

	prefixes, err := ssrf.ParseAllowList("")
	require.NoError(t, err)
	require.Empty(t, prefixes)
}
