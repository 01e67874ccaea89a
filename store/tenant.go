package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/limits"
)

// Tenant is one customer of the SaaS team running Herald.
type Tenant struct {
	// ID is chosen by the producer, usually its own customer id: 1 to 128
	// letters, digits, "_", ":" and "-", starting with a letter or digit.
	ID   string
	Name string
	// Limits are the limits an operator set for this tenant; the rest
	// follow the defaults.
	Limits TenantLimits
	// EndpointCount is how many endpoints the tenant has.
	EndpointCount int
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// TenantLimits are a tenant's own limits, set by an operator. What is not
// set follows the defaults: the store's for the endpoint cap, the api's
// (limits.Config) for rates.
type TenantLimits struct {
	// MaxEndpoints is the tenant's own cap on its endpoints; nil means
	// Config.MaxEndpointsPerTenant.
	MaxEndpoints *int
	// Rates are the tenant's own rate limits, by action. Never nil.
	Rates map[limits.Action]limits.Rate
	// Retention is how long the tenant's history is kept, when shorter
	// than the dispatchers' --retention; nil means theirs (package
	// retention, Settings.Effective).
	Retention *time.Duration
	// MaxInflight is the tenant's own cap on its attempts running at once
	// in each dispatcher process; nil means the dispatchers' default
	// (delivery.Config.MaxInflightPerTenant: half their workers).
	MaxInflight *int
}

// NewTenant is what CreateTenant needs.
type NewTenant struct {
	// ID is the tenant's id. Required; see Tenant.ID for its form.
	ID string
	// Name is a label for people, at most 256 characters. Optional.
	Name string
}

// TenantUpdate lists the changes UpdateTenant makes. A nil field is left as
// it is.
type TenantUpdate struct {
	Name *string
	// MaxEndpoints sets the tenant's own endpoint cap, 0 to
	// MaxEndpointsLimit; a pointer to a negative number removes it, so the
	// default applies again. A cap below the tenant's endpoint count
	// deletes nothing: it refuses new endpoints until enough are deleted.
	MaxEndpoints *int
	// Rates sets the tenant's own limit of each action in the map
	// (limits.Rate.Check says which are allowed); a nil value removes it,
	// so the default applies again. Actions not in the map keep theirs.
	Rates map[limits.Action]*limits.Rate
	// Retention sets the tenant's own retention, a positive number of
	// whole seconds; a pointer to a negative duration removes it, so the
	// global retention applies again. The store checks only its form: the
	// caller judges it against the dispatchers' settings
	// (retention.Settings.CheckTenant).
	Retention *time.Duration
	// MaxInflight sets the tenant's own in-flight cap, 1 to
	// MaxInflightLimit; a pointer to a negative number removes it, so the
	// dispatchers' default applies again. A dispatcher applies it to the
	// next delivery of the tenant it loads.
	MaxInflight *int
}

// MaxEndpointsLimit is the largest endpoint cap a tenant can be given.
const MaxEndpointsLimit = 1_000_000

// MaxInflightLimit is the largest in-flight cap a tenant can be given:
// more than any dispatcher's workers.
const MaxInflightLimit = 1_000_000

func scanTenant(row pgx.Row) (Tenant, error) {
	var t Tenant
	err := row.Scan(&t.ID, &t.Name, &t.Limits.MaxEndpoints, &t.Limits.Rates, &t.Limits.Retention, &t.Limits.MaxInflight, &t.EndpointCount, &t.CreatedAt, &t.UpdatedAt)
	if t.Limits.Rates == nil {
		t.Limits.Rates = map[limits.Action]limits.Rate{}
	}
	return t, err
}

// MaxEndpoints returns the cap on t's endpoints: its own, or else the
// default. false means no cap.
func (s *Store) MaxEndpoints(t Tenant) (int, bool) {
	if t.Limits.MaxEndpoints != nil {
		return *t.Limits.MaxEndpoints, true
	}
	return s.maxEndpoints, s.maxEndpoints >= 0
}

// CreateTenant creates a tenant. An id already in use is an error wrapping
// ErrAlreadyExists, or ErrBeingErased while the tenant that had it is being
// erased.
func (s *Store) CreateTenant(ctx context.Context, t NewTenant) (Tenant, error) {
	return s.createTenant(ctx, s.pool, t)
}

// CreateTenantTx is CreateTenant in the caller's transaction. Bad input and
// a taken id leave tx usable.
func (s *Store) CreateTenantTx(ctx context.Context, tx pgx.Tx, t NewTenant) (Tenant, error) {
	return s.createTenant(ctx, tx, t)
}

func (s *Store) createTenant(ctx context.Context, db dbtx, t NewTenant) (Tenant, error) {
	if err := checkTenantID("id", t.ID); err != nil {
		return Tenant{}, fmt.Errorf("create tenant: %w", err)
	}
	if err := checkText("name", t.Name, maxTenantNameLength); err != nil {
		return Tenant{}, fmt.Errorf("create tenant %q: %w", t.ID, err)
	}
	created, err := scanTenant(db.QueryRow(ctx, insertTenant, t.ID, t.Name))
	if errors.Is(err, pgx.ErrNoRows) {
		var deleted bool
		if err := db.QueryRow(ctx, tenantDeleted, t.ID).Scan(&deleted); err == nil && deleted {
			return Tenant{}, fmt.Errorf("create tenant %q: %w", t.ID, ErrBeingErased)
		}
		return Tenant{}, fmt.Errorf("create tenant %q: %w", t.ID, ErrAlreadyExists)
	}
	if err != nil {
		return Tenant{}, fmt.Errorf("create tenant %q: %w", t.ID, err)
	}
	return created, nil
}

// GetTenant returns a tenant, or an error wrapping ErrNotFound.
func (s *Store) GetTenant(ctx context.Context, id string) (Tenant, error) {
	if !validTenantID(id) {
		return Tenant{}, fmt.Errorf("tenant %q: %w", id, ErrNotFound)
	}
	t, err := scanTenant(s.pool.QueryRow(ctx, selectTenant, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return Tenant{}, fmt.Errorf("tenant %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return Tenant{}, fmt.Errorf("get tenant %q: %w", id, err)
	}
	return t, nil
}

// ListTenants returns a page of tenants in id order.
func (s *Store) ListTenants(ctx context.Context, p ListParams[string]) (Page[Tenant], error) {
	n, err := limit(p.Limit)
	if err != nil {
		return Page[Tenant]{}, fmt.Errorf("list tenants: %w", err)
	}
	if err := checkText("after", p.After, 128); err != nil {
		return Page[Tenant]{}, fmt.Errorf("list tenants: %w", err)
	}
	rows, err := s.pool.Query(ctx, listTenants, p.After, n+1)
	if err != nil {
		return Page[Tenant]{}, fmt.Errorf("list tenants: %w", err)
	}
	tenants, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Tenant, error) { return scanTenant(row) })
	if err != nil {
		return Page[Tenant]{}, fmt.Errorf("list tenants: %w", err)
	}
	return page(tenants, n), nil
}

// UpdateTenant changes a tenant and returns it as it now is.
func (s *Store) UpdateTenant(ctx context.Context, id string, u TenantUpdate) (Tenant, error) {
	return s.updateTenant(ctx, s.pool, id, u)
}

// UpdateTenantTx is UpdateTenant in the caller's transaction.
func (s *Store) UpdateTenantTx(ctx context.Context, tx pgx.Tx, id string, u TenantUpdate) (Tenant, error) {
	return s.updateTenant(ctx, tx, id, u)
}

func (s *Store) updateTenant(ctx context.Context, db dbtx, id string, u TenantUpdate) (Tenant, error) {
	if !validTenantID(id) {
		return Tenant{}, fmt.Errorf("update tenant %q: %w", id, ErrNotFound)
	}
	if u.Name != nil {
		if err := checkText("name", *u.Name, maxTenantNameLength); err != nil {
			return Tenant{}, fmt.Errorf("update tenant %q: %w", id, err)
		}
	}
	if u.MaxEndpoints != nil && *u.MaxEndpoints > MaxEndpointsLimit {
		return Tenant{}, fmt.Errorf("update tenant %q: %w", id, invalid("limits.max_endpoints",
			"is %d; give a cap from 0 to %d, or null for the default", *u.MaxEndpoints, MaxEndpointsLimit))
	}
	if u.MaxInflight != nil && (*u.MaxInflight == 0 || *u.MaxInflight > MaxInflightLimit) {
		return Tenant{}, fmt.Errorf("update tenant %q: %w", id, invalid("limits.max_inflight",
			"is %d; give a cap from 1 to %d attempts, or null for the dispatchers' default", *u.MaxInflight, MaxInflightLimit))
	}
	if u.Retention != nil && *u.Retention >= 0 && (*u.Retention == 0 || *u.Retention%time.Second != 0) {
		return Tenant{}, fmt.Errorf("update tenant %q: %w", id, invalid("limits.retention_seconds",
			"is %s; give a whole number of seconds, or null for the global retention", *u.Retention))
	}
	removed, set := []string{}, map[limits.Action]limits.Rate{}
	for a, r := range u.Rates {
		if _, err := limits.ParseAction(string(a)); err != nil {
			return Tenant{}, fmt.Errorf("update tenant %q: %w", id, invalid("limits", "%v", err))
		}
		if r == nil {
			removed = append(removed, string(a))
			continue
		}
		if err := r.Check(); err != nil {
			return Tenant{}, fmt.Errorf("update tenant %q: %w", id, invalid("limits."+string(a), "%v; or null for the default", err))
		}
		set[a] = *r
	}
	t, err := scanTenant(db.QueryRow(ctx, updateTenant, id, u.Name, u.MaxEndpoints, removed, set, u.Retention, u.MaxInflight))
	if errors.Is(err, pgx.ErrNoRows) {
		return Tenant{}, fmt.Errorf("update tenant %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return Tenant{}, fmt.Errorf("update tenant %q: %w", id, err)
	}
	return t, nil
}
