package api

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/heraldhq/herald/internal/page"
	"github.com/heraldhq/herald/store"
)

// Tenant is a tenant as the API shows it.
type Tenant struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

func tenantView(t store.Tenant) Tenant {
	return Tenant{ID: t.ID, Name: t.Name, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
}

type createTenantRequest struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type updateTenantRequest struct {
	Name *string `json:"name"`
}

// listTenants lists every tenant for an operator key, oldest first; a
// tenant-scoped caller sees only its own tenant.
func (s *Server) listTenants(w http.ResponseWriter, r *http.Request) error {
	req, err := pageRequest(r)
	if err != nil {
		return err
	}
	if p := principal(r); !p.Operator() {
		t, err := s.store.GetTenant(r.Context(), p.TenantID)
		if err != nil {
			return err
		}
		return writePage(w, page.Page[Tenant]{Items: []Tenant{tenantView(t)}})
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
		out.Items[i] = tenantView(t)
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
	return writeJSON(w, http.StatusCreated, tenantView(t))
}

func (s *Server) getTenant(w http.ResponseWriter, r *http.Request) error {
	t, err := s.store.GetTenant(r.Context(), chi.URLParam(r, "tenantID"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, tenantView(t))
}

func (s *Server) updateTenant(w http.ResponseWriter, r *http.Request) error {
	var req updateTenantRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	t, err := s.store.UpdateTenant(r.Context(), chi.URLParam(r, "tenantID"), store.TenantUpdate{Name: req.Name})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, tenantView(t))
}

func (s *Server) deleteTenant(w http.ResponseWriter, r *http.Request) error {
	if err := s.store.DeleteTenant(r.Context(), chi.URLParam(r, "tenantID")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
