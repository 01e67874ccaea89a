package main

import (
	"net/netip"
	"net/url"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/heraldhq/herald/internal/ssrf"
)

// composeFile is the part of docker-compose.yml this test reads.
type composeFile struct {
	Services map[string]struct {
		Environment map[string]string `yaml:"environment"`
		Networks    yaml.Node         `yaml:"networks"`
	} `yaml:"services"`
	Networks map[string]struct {
		IPAM struct {
			Config []struct {
				Subnet string `yaml:"subnet"`
			} `yaml:"config"`
		} `yaml:"ipam"`
	} `yaml:"networks"`
}

// The compose network holds Postgres, which trusts every connection, and
// the api, beside the demo's receiver. The allow-list each Herald container
// is given must open the demo receiver's fixed address and nothing else:
// an endpoint on any other address of that network (or on a container's
// own loopback) would make the dispatcher a way into them.
func TestComposeAllowListOpensOnlyTheDemoReceiver(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../docker-compose.yml")
	require.NoError(t, err)
	var compose composeFile
	require.NoError(t, yaml.Unmarshal(raw, &compose))

	subnet, err := netip.ParsePrefix(compose.Networks["herald"].IPAM.Config[0].Subnet)
	require.NoError(t, err)
	demo, ok := compose.Services["demo"]
	require.True(t, ok, "docker-compose.yml has a demo service")
	var networks map[string]struct {
		IPv4Address string `yaml:"ipv4_address"`
	}
	require.NoError(t, demo.Networks.Decode(&networks), "the demo service names its networks as a map, with its address")
	receiver, err := netip.ParseAddr(networks["herald"].IPv4Address)
	require.NoError(t, err, "the demo service has a fixed ipv4_address on the herald network")
	require.True(t, subnet.Contains(receiver), "%s is on the compose network %s", receiver, subnet)

	receiverURL, err := url.Parse(demo.Environment["HERALD_DEMO_RECEIVER_URL"])
	require.NoError(t, err)
	require.Equal(t, "demo", receiverURL.Hostname(), "the demo's endpoint names the demo container, which resolves to %s", receiver)

	for _, name := range []string{"api", "dispatcher", "demo"} {
		allow, err := ssrf.ParseAllowList(compose.Services[name].Environment[ssrf.EnvAllowCIDRs])
		require.NoError(t, err, name)
		require.Equal(t, []netip.Prefix{netip.PrefixFrom(receiver, 32)}, allow,
			"the %s service's %s must allow the demo receiver's address only", name, ssrf.EnvAllowCIDRs)
	}
}
