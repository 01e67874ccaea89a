package health

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/heraldhq/herald/internal/config"
)

// Defaults of [Config].
const (
	// DefaultDisableAfter is how long an endpoint may fail without a single
	// success before it is disabled: 5 days.
	DefaultDisableAfter = 5 * 24 * time.Hour
	// DefaultWarnAfter is how long an endpoint fails before its owner is
	// warned with endpoint.failing: 24 hours.
	DefaultWarnAfter = 24 * time.Hour
	// DefaultOpsTenant is the tenant whose endpoints receive operational
	// events.
	DefaultOpsTenant = "herald-ops"
)

// Config tunes a [Tracker]. The zero value is ready to use.
type Config struct {
	// DisableAfter is how long an endpoint may keep failing, with no
	// successful attempt, before it is disabled. Defaults to 5 days. Zero
	// means the default; negative means endpoints are never disabled for
	// failing (a 410 Gone still disables one).
	DisableAfter time.Duration
	// WarnAfter is how long an endpoint fails before endpoint.failing is
	// published, once per failing spell. Defaults to 24 h. Zero means the
	// default; negative means no warning is sent.
	WarnAfter time.Duration
	// OpsTenant is the tenant operational events are published to; the
	// operator subscribes endpoints of this tenant to them. It is created
	// when the first event is published. Defaults to "herald-ops". Events
	// about the ops tenant's own endpoints and deliveries are only logged,
	// so a broken ops endpoint cannot feed on itself.
	OpsTenant string
	// Logger receives a line for every state change. Defaults to
	// slog.Default().
	Logger *slog.Logger

	// envErr holds a malformed environment value found by Register; New
	// reports it.
	envErr error
}

// Register adds the endpoint-health flags to fs.
func (c *Config) Register(fs *flag.FlagSet) {
	fs.DurationVar(&c.DisableAfter, "disable-after", c.envDuration("HERALD_DISABLE_AFTER", DefaultDisableAfter),
		"disable an endpoint that has failed this long without a success; negative never disables (env HERALD_DISABLE_AFTER)")
	fs.DurationVar(&c.WarnAfter, "failing-warning-after", c.envDuration("HERALD_FAILING_WARNING_AFTER", DefaultWarnAfter),
		"publish endpoint.failing once an endpoint has failed this long; negative never warns (env HERALD_FAILING_WARNING_AFTER)")
	fs.StringVar(&c.OpsTenant, "ops-tenant", config.Env("HERALD_OPS_TENANT", DefaultOpsTenant),
		"tenant that receives operational events (endpoint.failing, endpoint.disabled, endpoint.recovered, delivery.exhausted) (env HERALD_OPS_TENANT)")
}

func (c *Config) envDuration(name string, def time.Duration) time.Duration {
	v := config.Env(name, "")
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		c.envErr = errors.Join(c.envErr, fmt.Errorf("%s=%q is not a duration; write it like 120h or 30m", name, v))
		return def
	}
	return d
}

func (c Config) withDefaults() Config {
	if c.DisableAfter == 0 {
		c.DisableAfter = DefaultDisableAfter
	}
	if c.WarnAfter == 0 {
		c.WarnAfter = DefaultWarnAfter
	}
	if c.OpsTenant == "" {
		c.OpsTenant = DefaultOpsTenant
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}
