package client

import (
	"context"
	"time"
)

// Tenant is a customer of the SaaS team: the owner of endpoints and
// messages.
type Tenant struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ListTenants lists tenants in id order; a tenant key sees only its own.
func (c *Client) ListTenants(ctx context.Context, opts ListOptions) (Page[Tenant], error) {
	var p Page[Tenant]
	return p, c.do(ctx, "GET", "/tenants", opts.query(), nil, &p)
}

// CreateTenant creates a tenant (operator keys only).
func (c *Client) CreateTenant(ctx context.Context, id, name string) (Tenant, error) {
	var t Tenant
	return t, c.do(ctx, "POST", "/tenants", nil, map[string]string{"id": id, "name": name}, &t)
}

// GetTenant reads one tenant.
func (c *Client) GetTenant(ctx context.Context, id string) (Tenant, error) {
	var t Tenant
	return t, c.do(ctx, "GET", "/tenants/"+segment(id), nil, nil, &t)
}

// PortalLink opens the customer portal for one tenant, once, until it
// expires.
type PortalLink struct {
	URL       string    `json:"url"`
	TenantID  string    `json:"tenant_id"`
	ExpiresAt time.Time `json:"expires_at"`
}

// CreatePortalLink mints a portal link for tenantID (API keys only). A
// zero ttl means the API's default (15 minutes); at most a day.
func (c *Client) CreatePortalLink(ctx context.Context, tenantID string, ttl time.Duration) (PortalLink, error) {
	var body any
	if ttl > 0 {
		body = map[string]int64{"ttl_seconds": int64(ttl / time.Second)}
	}
	var l PortalLink
	return l, c.do(ctx, "POST", "/tenants/"+segment(tenantID)+"/portal-links", nil, body, &l)
}
