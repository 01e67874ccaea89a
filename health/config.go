package health

import (
	"log/slog"
	"time"
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
	// DefaultCertificateWarning is how long before an endpoint's client
	// certificate lapses endpoint.certificate_expiring is published: 14
	// days.
	DefaultCertificateWarning = 14 * 24 * time.Hour
)

// BreakerThreshold is how many attempts in a row to one endpoint must get no
// answer (time out, or fail to connect) for its breaker to open: from then
// on each dispatcher process sends it one probe at a time, and its other
// deliveries wait without holding workers (package delivery) until an
// attempt is answered, which closes the breaker. Any answer counts, an
// error status too: the breaker guards the workers an endpoint holds, not
// its error rate, which the retry schedule and DisableAfter handle. An
// endpoint that has not answered yet is not suspect: only attempts that
// ended unanswered count.
const BreakerThreshold = 3

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
	// CertificateWarning is how long before an endpoint's client
	// certificate (mutual TLS) lapses endpoint.certificate_expiring is
	// published, once per certificate (see
	// Tracker.WarnExpiringCertificates). Defaults to 14 days. Zero means
	// the default; negative means no warning is sent.
	CertificateWarning time.Duration
	// Logger receives a line for every state change. Defaults to
	// slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.DisableAfter == 0 {
		c.DisableAfter = DefaultDisableAfter
	}
	if c.WarnAfter == 0 {
		c.WarnAfter = DefaultWarnAfter
	}
	if c.CertificateWarning == 0 {
		c.CertificateWarning = DefaultCertificateWarning
	}
	if c.OpsTenant == "" {
		c.OpsTenant = DefaultOpsTenant
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}
