package ssrf

import (
	"flag"
	"fmt"

	"github.com/heraldhq/herald/internal/config"
)

// EnvAllowCIDRs is the environment variable holding the allow-list.
const EnvAllowCIDRs = "HERALD_ALLOW_CIDRS"

// Config is the guard's part of a program's configuration.
type Config struct {
	// AllowCIDRs is a comma-separated list of ranges the guard lets through,
	// e.g. "127.0.0.0/8,::1/128" for receivers on the same machine. Defaults
	// to empty (every blocked range stays blocked); the HERALD_ALLOW_CIDRS
	// environment variable sets the default and --allow-cidrs overrides it.
	AllowCIDRs string
}

// Register adds --allow-cidrs to fs.
func (c *Config) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.AllowCIDRs, "allow-cidrs", config.Env(EnvAllowCIDRs, ""),
		"comma-separated CIDR ranges that endpoints may reach although the SSRF guard blocks them, e.g. 127.0.0.0/8 for local receivers (env "+EnvAllowCIDRs+")")
}

// Guard builds the guard, or says which allow-list entry is malformed.
func (c Config) Guard() (*Guard, error) {
	allow, err := ParseAllowList(c.AllowCIDRs)
	if err != nil {
		return nil, fmt.Errorf("--allow-cidrs / %s: %w", EnvAllowCIDRs, err)
	}
	return New(allow...), nil
}
