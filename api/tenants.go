package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/heraldhq/herald/erasure"
	"github.com/heraldhq/herald/internal/page"
	"github.com/heraldhq/herald/limits"
	"github.com/heraldhq/herald/retention"
	"github.com/heraldhq/herald/store"
)

// Tenant is a tenant as the API shows it.
type Tenant struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Limits are the limits that hold for the tenant: its own where an
	// operator set one, the defaults elsewhere.
	Limits TenantLimits `json:"limits"`
	// LimitOverrides are the limits an operator set for this tenant; what
	// is absent follows the defaults.
	LimitOverrides TenantLimitOverrides `json:"limit_overrides"`
	// EndpointCount is how many endpoints the tenant has.
	EndpointCount int       `json:"endpoint_count"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// TenantLimits are the limits in force for a tenant; null means none.
type TenantLimits struct {
	MaxEndpoints *int         `json:"max_endpoints"`
	Publish      *limits.Rate `json:"publish"`
	Resend       *limits.Rate `json:"resend"`
	Replay       *limits.Rate `json:"replay"`
	TestEvent    *limits.Rate `json:"test_event"`
	// RetentionSeconds is how long the tenant's history is kept: its own
	// retention, or the dispatchers' --retention (retention.Settings).
	// Never null.
	RetentionSeconds *int64 `json:"retention_seconds"`
	// MaxInflight is the tenant's own cap on its attempts running at once
	// in each dispatcher; null means the dispatchers' default (half their
	// --workers), which the api does not know.
	MaxInflight *int `json:"max_inflight"`
}

// TenantLimitOverrides are the limits an operator set for a tenant.
type TenantLimitOverrides struct {
	MaxEndpoints     *int         `json:"max_endpoints,omitempty"`
	Publish          *limits.Rate `json:"publish,omitempty"`
	Resend           *limits.Rate `json:"resend,omitempty"`
	Replay           *limits.Rate `json:"replay,omitempty"`
	TestEvent        *limits.Rate `json:"test_event,omitempty"`
	RetentionSeconds *int64       `json:"retention_seconds,omitempty"`
	MaxInflight      *int         `json:"max_inflight,omitempty"`
}

// seconds returns d in whole seconds, nil for nil.
func seconds(d *time.Duration) *int64 {
	if d == nil {
		return nil
	}
	n := int64(*d / time.Second)
	return &n
}

// rateField returns which of the four fields holds action a's rate.
func rateField(a limits.Action, publish, resend, replay, testEvent **limits.Rate) **limits.Rate {
	switch a {
	case limits.Publish:
		return publish
	case limits.Resend:
		return resend
	case limits.Replay:
		return replay
	}
	return testEvent
}

// tenantView shows t with the retention settings kept.
func (s *Server) tenantView(t store.Tenant, kept retention.Settings) Tenant {
	v := Tenant{ID: t.ID, Name: t.Name, EndpointCount: t.EndpointCount, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
	if max, ok := s.store.MaxEndpoints(t); ok {
		v.Limits.MaxEndpoints = &max
	}
	v.LimitOverrides.MaxEndpoints = t.Limits.MaxEndpoints
	v.Limits.MaxInflight = t.Limits.MaxInflight
	v.LimitOverrides.MaxInflight = t.Limits.MaxInflight
	effective := kept.Effective(t.Limits.Retention)
	v.Limits.RetentionSeconds = seconds(&effective)
	v.LimitOverrides.RetentionSeconds = seconds(t.Limits.Retention)
	in, own := &v.Limits, &v.LimitOverrides
	for _, a := range limits.Actions() {
		if r, ok := t.Limits.Rates[a]; ok {
			*rateField(a, &in.Publish, &in.Resend, &in.Replay, &in.TestEvent) = &r
			*rateField(a, &own.Publish, &own.Resend, &own.Replay, &own.TestEvent) = &r
		} else if def, ok := s.limits.Default(a); ok {
			*rateField(a, &in.Publish, &in.Resend, &in.Replay, &in.TestEvent) = &def
		}
	}
	return v
}

type createTenantRequest struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// updateTenantRequest is a PATCH: an absent field is left as it is. In
// limits, null removes the tenant's own limit, so the default applies.
// limits.retention_seconds is judged against the dispatchers' settings
// (retention.Settings.CheckTenant).
type updateTenantRequest struct {
	Name   *string                    `json:"name"`
	Limits map[string]json.RawMessage `json:"limits"`
}

// storeUpdate reads the request's limits into a store.TenantUpdate.
func (req updateTenantRequest) storeUpdate() (store.TenantUpdate, error) {
	u := store.TenantUpdate{Name: req.Name}
	for name, raw := range req.Limits {
		field := "limits." + name
		null := bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
		if name == "retention_seconds" {
			d := time.Duration(-1)
			if !null {
				var n int64
				if err := json.Unmarshal(raw, &n); err != nil || n <= 0 || n > maxRetentionSeconds {
					return u, invalid(field, fmt.Sprintf("%s must be a whole number of seconds, more than 0, or null for the global retention (got %s)", field, quoteRaw(raw)))
				}
				d = time.Duration(n) * time.Second
			}
			u.Retention = &d
			continue
		}
		if name == "max_inflight" {
			max := -1
			if !null {
				if err := json.Unmarshal(raw, &max); err != nil || max < 1 {
					return u, invalid(field, fmt.Sprintf("%s must be a whole number of attempts, 1 or more, or null for the dispatchers' default (got %s)", field, quoteRaw(raw)))
				}
			}
			u.MaxInflight = &max
			continue
		}
		if name == "max_endpoints" {
			max := -1
			if !null {
				if err := json.Unmarshal(raw, &max); err != nil || max < 0 {
					return u, invalid(field, fmt.Sprintf("%s must be a whole number of endpoints, 0 or more, or null for the default (got %s)", field, quoteRaw(raw)))
				}
			}
			u.MaxEndpoints = &max
			continue
		}
		a, err := limits.ParseAction(name)
		if err != nil {
			return u, invalid(field, fmt.Sprintf("limits has no field %q; it holds max_endpoints, max_inflight, publish, resend, replay, test_event and retention_seconds", name))
		}
		if u.Rates == nil {
			u.Rates = map[limits.Action]*limits.Rate{}
		}
		if null {
			u.Rates[a] = nil
			continue
		}
		var r limits.Rate
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			return u, invalid(field, fmt.Sprintf(`%s must be {"per_second": <number>, "burst": <whole number>}, or null for the default (got %s)`, field, quoteRaw(raw)))
		}
		u.Rates[a] = &r
	}
	return u, nil
}

// maxRetentionSeconds keeps a retention in seconds within a
// time.Duration; any valid one is far shorter (CheckTenant).
const maxRetentionSeconds = int64(math.MaxInt64 / time.Second)

// quoteRaw shows a client's JSON value in a message, shortened.
func quoteRaw(raw json.RawMessage) string {
	s := string(bytes.TrimSpace(raw))
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return s
}

// endpointLimitProblem explains a creation refused by the tenant's
// endpoint cap and how to get past it.
func endpointLimitProblem(e *store.EndpointLimitError) *Problem {
	which := "the default cap (--max-endpoints-per-tenant)"
	if e.Own {
		which = "the cap an operator set for it"
	}
	return problem(http.StatusConflict, "endpoint-limit-reached", fmt.Sprintf(
		`tenant %q has %d endpoints and %s is %d; delete an endpoint it no longer needs, or have an operator raise the cap with PATCH /v1/tenants/%s {"limits": {"max_endpoints": …}}`,
		e.TenantID, e.Count, which, e.Max, e.TenantID))
}

// listTenants lists every tenant for an operator key, oldest first; a
// tenant-scoped caller sees only its own tenant.
func (s *Server) listTenants(w http.ResponseWriter, r *http.Request) error {
	req, err := pageRequest(r)
	if err != nil {
		return err
	}
	kept, err := retention.ReadSettings(r.Context(), s.pool)
	if err != nil {
		return err
	}
	if p := principal(r); !p.Operator() {
		t, err := s.store.GetTenant(r.Context(), p.TenantID)
		if err != nil {
			return err
		}
		return writePage(w, page.Page[Tenant]{Items: []Tenant{s.tenantView(t, kept)}})
	}
	params := store.ListParams[string]{Limit: req.Size()}
	if req.After != nil {
		params.After = req.After.ID
	}
	tenants, err := s.store.ListTenants(r.Context(), params)
	if err != nil {
		return err
	}
	out := page.Page[Tenant]{Items: make([]Tenant, len(tenants.Items))}
	for i, t := range tenants.Items {
		out.Items[i] = s.tenantView(t, kept)
	}
	if tenants.More {
		last := tenants.Items[len(tenants.Items)-1]
		out.Next = &page.Cursor{CreatedAt: last.CreatedAt, ID: last.ID}
	}
	return writePage(w, out)
}

func (s *Server) createTenant(w http.ResponseWriter, r *http.Request) error {
	var req createTenantRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	t, err := s.store.CreateTenant(r.Context(), store.NewTenant{ID: req.ID, Name: req.Name})
	if err != nil {
		return err
	}
	kept, err := retention.ReadSettings(r.Context(), s.pool)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, s.tenantView(t, kept))
}

func (s *Server) getTenant(w http.ResponseWriter, r *http.Request) error {
	t, err := s.store.GetTenant(r.Context(), chi.URLParam(r, "tenantID"))
	if err != nil {
		return err
	}
	kept, err := retention.ReadSettings(r.Context(), s.pool)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, s.tenantView(t, kept))
}

func (s *Server) updateTenant(w http.ResponseWriter, r *http.Request) error {
	var req updateTenantRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	u, err := req.storeUpdate()
	if err != nil {
		return err
	}
	kept, err := retention.ReadSettings(r.Context(), s.pool)
	if err != nil {
		return err
	}
	if u.Retention != nil && *u.Retention > 0 {
		var refused *retention.TenantRetentionError
		if err := kept.CheckTenant(*u.Retention); errors.As(err, &refused) {
			return invalid("limits.retention_seconds", fmt.Sprintf("limits.retention_seconds %d %s", int64(*u.Retention/time.Second), refused.Problem))
		}
	}
	t, err := s.store.UpdateTenant(r.Context(), chi.URLParam(r, "tenantID"), u)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, s.tenantView(t, kept))
}

// deleteTenant starts the tenant's erasure and answers with it (see
// writeErasure); a repeated DELETE answers with the same erasure, and
// after it completed with the latest erasure of a tenant of that id.
func (s *Server) deleteTenant(w http.ResponseWriter, r *http.Request) error {
	tenantID := chi.URLParam(r, "tenantID")
	if !validTenantID.MatchString(tenantID) {
		return notFound("tenant " + quote(tenantID))
	}
	e, err := erasure.StartTenant(r.Context(), s.pool, s.jobs, tenantID)
	// The tenant's keys are deleted when its erasure starts.
	s.keys.Forget()
	if errors.Is(err, erasure.ErrNotFound) {
		return notFound("tenant " + quote(tenantID))
	}
	if err != nil {
		return err
	}
	return writeErasure(w, e)
}
