package limits

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"golang.org/x/time/rate"
)

// DB is what a Limiter needs of Postgres; a *pgxpool.Pool is one.
type DB interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Config configures a [Limiter]. The zero value gives every default.
type Config struct {
	// Rates are the limits of tenants without an override of their own,
	// by action. An action missing from the map, and a zero PerSecond or
	// Burst, get [DefaultRate]'s; a negative PerSecond means no limit.
	Rates map[Action]Rate
	// CredentialShare is the fraction of its tenant's limit (rate and
	// burst, at least one request) that one API key, per tenant it acts
	// on, or one portal session may use, in each api process. Defaults to
	// DefaultCredentialShare (0.5). Zero means the default; negative means
	// no per-credential limit; at most 1.
	CredentialShare float64
	// Now is the clock. Nil, the default, means the database's clock for
	// tenants' limits, which every replica shares, and time.Now for
	// credentials'; tests set it to step time by hand.
	Now func() time.Time
}

// Limiter judges rate-limited requests by their credential and their
// tenant; see the package documentation. It is safe for concurrent use.
type Limiter struct {
	db          DB
	rates       map[Action]Rate // PerSecond < 0: no limit
	share       float64         // ≤ 0: no per-credential limit
	now         func() time.Time
	credentials *credentialBuckets
}

// New returns a Limiter that keeps tenants' limits in db, or an error
// naming a setting of cfg that is out of range.
func New(db DB, cfg Config) (*Limiter, error) {
	l := &Limiter{db: db, rates: map[Action]Rate{}, share: cfg.CredentialShare, now: cfg.Now}
	for _, a := range Actions() {
		r, def := cfg.Rates[a], DefaultRate(a)
		if r.PerSecond == 0 {
			r.PerSecond = def.PerSecond
		}
		if r.Burst == 0 {
			r.Burst = def.Burst
		}
		if r.PerSecond >= 0 {
			if err := r.Check(); err != nil {
				return nil, fmt.Errorf("limits: the default %s limit's %w", a, err)
			}
		}
		l.rates[a] = r
	}
	switch {
	case math.IsNaN(l.share) || l.share > 1:
		return nil, fmt.Errorf("limits: CredentialShare is %v; give a fraction of the tenant's limit between 0 and 1, or a negative number for no per-credential limit", l.share)
	case l.share == 0:
		l.share = DefaultCredentialShare
	}
	clock := l.now
	if clock == nil {
		clock = time.Now
	}
	l.credentials = newCredentialBuckets(clock)
	return l, nil
}

// Default returns the limit of action for tenants without an override;
// false means none.
func (l *Limiter) Default(a Action) (Rate, bool) {
	r := l.rates[a]
	return r, r.PerSecond >= 0
}

// Scope says whose limit turned a request away.
type Scope string

const (
	// ScopeTenant is the tenant's limit, shared by every api replica.
	ScopeTenant Scope = "tenant"
	// ScopeCredential is the limit of the API key or portal session that
	// made the request, in this api process.
	ScopeCredential Scope = "credential"
)

// Refusal says which limit turned a request away and how long to wait.
type Refusal struct {
	Action Action
	Scope  Scope
	// Rate is the limit that refused the request: the tenant's, or the
	// credential's share of it.
	Rate Rate
	// Wait is how long until the request would be let through.
	Wait time.Duration
}

// RetryAfter is Wait as a Retry-After header gives it: whole seconds,
// rounded up, at least 1.
func (r *Refusal) RetryAfter() int {
	return max(1, int(math.Ceil(r.Wait.Seconds())))
}

func (r *Refusal) Error() string {
	return fmt.Sprintf("%s limit of %s (%s) reached; wait %s", r.Scope, r.Action.Requests(), r.Rate, r.Wait)
}

// Take judges one request for action on tenantID made by credential (an
// API key's or a portal session's id; uuid.Nil judges by the tenant only).
// It returns nil to go ahead, or the Refusal that turned it away. An error
// means the tenant's limit could not be asked; the request was not let
// through.
func (l *Limiter) Take(ctx context.Context, tenantID string, credential uuid.UUID, a Action) (*Refusal, error) {
	def, ok := l.rates[a]
	if !ok {
		return nil, fmt.Errorf("limits: %q is not a rate-limited action", a)
	}
	var held *heldToken
	if l.share > 0 && credential != uuid.Nil {
		var refusal *Refusal
		if held, refusal = l.credentials.take(credentialKey{credential: credential, tenant: tenantID, action: a}, l.shareOf(def)); refusal != nil {
			return refusal, nil
		}
	}
	wait, tenantRate, limited, err := l.askTenant(ctx, tenantID, a, def)
	if err != nil {
		held.giveBack()
		return nil, err
	}
	if wait > 0 {
		held.giveBack()
		held.adjust(l.shareOf(tenantRate), limited, false)
		return &Refusal{Action: a, Scope: ScopeTenant, Rate: tenantRate, Wait: wait}, nil
	}
	held.adjust(l.shareOf(tenantRate), limited, true)
	return nil, nil
}

// shareOf is a credential's share of a tenant's limit r; a negative
// PerSecond (no limit) stays so.
func (l *Limiter) shareOf(r Rate) Rate {
	if r.PerSecond < 0 {
		return r
	}
	return Rate{PerSecond: r.PerSecond * l.share, Burst: max(1, int(float64(r.Burst)*l.share))}
}

// askTenant asks tenantID's shared row for one request of action a, with
// def as the limit unless the tenant has its own. limited is false when
// the tenant has no limit for a (or does not exist).
func (l *Limiter) askTenant(ctx context.Context, tenantID string, a Action, def Rate) (wait time.Duration, r Rate, limited bool, err error) {
	var defPerSecond *float64
	if def.PerSecond >= 0 {
		defPerSecond = &def.PerSecond
	}
	var now *time.Time
	if l.now != nil {
		t := l.now()
		now = &t
	}
	var waited *time.Duration
	err = l.db.QueryRow(ctx, takeQuery, tenantID, string(a), defPerSecond, def.Burst, now).Scan(&waited, &r.PerSecond, &r.Burst)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, Rate{PerSecond: -1}, false, nil
	}
	if err != nil {
		return 0, Rate{}, false, fmt.Errorf("rate limit of tenant %q for %s: %w", tenantID, a.Requests(), err)
	}
	if waited != nil {
		wait = max(*waited, time.Microsecond)
	}
	return wait, r, true, nil
}

// asLimit is r as golang.org/x/time/rate's limit.
func asLimit(r Rate) (rate.Limit, int) {
	if r.PerSecond < 0 {
		return rate.Inf, 1
	}
	return rate.Limit(r.PerSecond), r.Burst
}
