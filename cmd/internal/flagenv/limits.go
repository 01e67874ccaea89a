package flagenv

import (
	"fmt"
	"math"
	"strings"

	"github.com/heraldhq/herald/limits"
)

// Limits are the api's multi-tenant limits for tenants without their own:
// the endpoint cap and the rate limits of every limits.Action, and the
// share of them each credential may use.
type Limits struct {
	// MaxEndpointsPerTenant is store.Config.MaxEndpointsPerTenant.
	MaxEndpointsPerTenant int
	// Rates are limits.Config.Rates, one per action.
	Rates map[limits.Action]*limits.Rate
	// CredentialShare is limits.Config.CredentialShare.
	CredentialShare float64
}

// LimitsVar defines, in l, --max-endpoints-per-tenant, --key-rate-share
// and for each rate-limited action (publish, resend, replay, test-event)
// --<action>-rate and --<action>-burst, with limits' defaults.
func (f *FlagSet) LimitsVar(l *Limits) {
	f.IntVar(&l.MaxEndpointsPerTenant, "max-endpoints-per-tenant", limits.DefaultMaxEndpoints,
		"endpoints a tenant may have unless an operator gives it its own cap (PATCH /v1/tenants/{id} limits.max_endpoints); negative means no cap")
	f.Env("max-endpoints-per-tenant", "HERALD_MAX_ENDPOINTS_PER_TENANT")
	l.Rates = map[limits.Action]*limits.Rate{}
	for _, a := range limits.Actions() {
		def := limits.DefaultRate(a)
		r := &def
		l.Rates[a] = r
		name := strings.ReplaceAll(string(a), "_", "-")
		env := "HERALD_" + strings.ToUpper(string(a))
		f.Float64Var(&r.PerSecond, name+"-rate", def.PerSecond,
			"per tenant, across every api replica: "+a.Requests()+" a second, unless an operator sets the tenant's own limits."+string(a)+"; negative means no limit")
		f.Env(name+"-rate", env+"_RATE")
		f.IntVar(&r.Burst, name+"-burst", def.Burst, "per tenant: "+a.Requests()+" that may be made at once, the burst --"+name+"-rate refills")
		f.Env(name+"-burst", env+"_BURST")
	}
	f.Float64Var(&l.CredentialShare, "key-rate-share", limits.DefaultCredentialShare,
		"fraction (at most 1) of its tenant's rate limits that one API key, per tenant, or one portal session may use in each api process; negative means no per-key limit")
	f.Env("key-rate-share", "HERALD_KEY_RATE_SHARE")
}

// Config is l as limits.Config, or an error naming the flag out of range.
// A zero rate, burst or share is one: in limits.Config it would mean the
// default, which a person who wrote 0 cannot have meant.
func (l *Limits) Config() (limits.Config, error) {
	cfg := limits.Config{Rates: map[limits.Action]limits.Rate{}, CredentialShare: l.CredentialShare}
	for _, a := range limits.Actions() {
		r, name := *l.Rates[a], strings.ReplaceAll(string(a), "_", "-")
		switch {
		case r.PerSecond < 0:
		case r.PerSecond < limits.MinPerSecond || r.PerSecond > limits.MaxPerSecond:
			return cfg, fmt.Errorf("--%s-rate is %v; give %s a second from %g to %g, or a negative number for no limit", name, r.PerSecond, a.Requests(), limits.MinPerSecond, float64(limits.MaxPerSecond))
		case r.Burst < 1 || r.Burst > limits.MaxBurst:
			return cfg, fmt.Errorf("--%s-burst is %d; give from 1 to %d", name, r.Burst, limits.MaxBurst)
		}
		cfg.Rates[a] = r
	}
	if cfg.CredentialShare == 0 || cfg.CredentialShare > 1 || math.IsNaN(cfg.CredentialShare) {
		return cfg, fmt.Errorf("--key-rate-share is %v; give a fraction of the tenant's limits above 0 and at most 1, or a negative number for no per-key limit", cfg.CredentialShare)
	}
	return cfg, nil
}
