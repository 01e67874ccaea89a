package ssrf

import "fmt"

// EnvAllowCIDRs is the environment variable Herald's programs read the
// allow-list from (with the --allow-cidrs flag); errors name it.
const EnvAllowCIDRs = "HERALD_ALLOW_CIDRS"

// Config is the guard's part of a program's configuration.
type Config struct {
	// AllowCIDRs is a comma-separated list of ranges the guard lets through,
	// e.g. "127.0.0.0/8,::1/128" for receivers on the same machine. Defaults
	// to empty: every blocked range stays blocked.
	AllowCIDRs string
}

// Guard builds the guard, or says which allow-list entry is malformed.
func (c Config) Guard() (*Guard, error) {
	allow, err := ParseAllowList(c.AllowCIDRs)
	if err != nil {
		return nil, fmt.Errorf("--allow-cidrs / %s: %w", EnvAllowCIDRs, err)
	}
	return New(allow...), nil
}
