package flagenv

import "github.com/heraldhq/herald/internal/ssrf"

// SSRFVar defines --allow-cidrs, the SSRF guard's allow-list, in c.
// Defaults to empty: every blocked range stays blocked.
func (f *FlagSet) SSRFVar(c *ssrf.Config) {
	f.StringVar(&c.AllowCIDRs, "allow-cidrs", "",
		"comma-separated CIDR ranges that endpoints may reach although the SSRF guard blocks them, e.g. 127.0.0.0/8 for local receivers")
	f.Env("allow-cidrs", ssrf.EnvAllowCIDRs)
}
