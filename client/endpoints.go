package client

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// Endpoint is a URL a tenant receives webhooks at.
type Endpoint struct {
	ID          uuid.UUID `json:"id"`
	TenantID    string    `json:"tenant_id"`
	URL         string    `json:"url"`
	Description string    `json:"description"`
	// EventTypes are the types it subscribes to; empty means every type.
	EventTypes []string `json:"event_types"`
	// RateLimit is in messages per second; 0 means unlimited.
	RateLimit      float64    `json:"rate_limit"`
	Enabled        bool       `json:"enabled"`
	DisabledReason string     `json:"disabled_reason,omitempty"`
	DisabledAt     *time.Time `json:"disabled_at,omitempty"`
	FailingSince   *time.Time `json:"failing_since,omitempty"`
	LastSuccessAt  *time.Time `json:"last_success_at,omitempty"`
	// Breaker is the endpoint's breaker: "open" after 3 attempts in a row
	// got no answer, when the dispatchers send one probe at a time.
	Breaker   Breaker   `json:"breaker"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Breaker is an endpoint's breaker.
type Breaker struct {
	// State is "closed" or "open".
	State string `json:"state"`
	// UnansweredInARow counts the latest attempts in a row that got no
	// answer, up to the threshold.
	UnansweredInARow int `json:"unanswered_in_a_row"`
	// OpenedAt is when it opened; nil while closed.
	OpenedAt *time.Time `json:"opened_at,omitempty"`
}

// NewEndpoint is what CreateEndpoint sends.
type NewEndpoint struct {
	URL         string   `json:"url"`
	Description string   `json:"description,omitempty"`
	EventTypes  []string `json:"event_types,omitempty"`
	RateLimit   float64  `json:"rate_limit,omitempty"`
	// Secret, when set, is the signing secret to use (whsec_… or whsk_…);
	// empty means Herald generates a whsec_ secret.
	Secret string `json:"secret,omitempty"`
}

func endpointPath(tenantID string, endpointID uuid.UUID) string {
	return "/tenants/" + segment(tenantID) + "/endpoints/" + endpointID.String()
}

// ListEndpoints lists a tenant's endpoints in creation order.
func (c *Client) ListEndpoints(ctx context.Context, tenantID string, opts ListOptions) (Page[Endpoint], error) {
	var p Page[Endpoint]
	return p, c.do(ctx, "GET", "/tenants/"+segment(tenantID)+"/endpoints", opts.query(), nil, &p)
}

// CreateEndpoint creates an endpoint; it signs with its secret at once.
func (c *Client) CreateEndpoint(ctx context.Context, tenantID string, e NewEndpoint) (Endpoint, error) {
	var out Endpoint
	return out, c.do(ctx, "POST", "/tenants/"+segment(tenantID)+"/endpoints", nil, e, &out)
}

// GetEndpoint reads one endpoint.
func (c *Client) GetEndpoint(ctx context.Context, tenantID string, id uuid.UUID) (Endpoint, error) {
	var out Endpoint
	return out, c.do(ctx, "GET", endpointPath(tenantID, id), nil, nil, &out)
}

// EnableEndpoint enables an endpoint, clearing its disabled reason and
// failing spell.
func (c *Client) EnableEndpoint(ctx context.Context, tenantID string, id uuid.UUID) (Endpoint, error) {
	var out Endpoint
	return out, c.do(ctx, "POST", endpointPath(tenantID, id)+"/enable", nil, nil, &out)
}

// DisableEndpoint disables an endpoint: its pending deliveries are
// cancelled and later messages skipped. The reason is shown to its owner.
func (c *Client) DisableEndpoint(ctx context.Context, tenantID string, id uuid.UUID, reason string) (Endpoint, error) {
	var out Endpoint
	return out, c.do(ctx, "POST", endpointPath(tenantID, id)+"/disable", nil, map[string]string{"reason": reason}, &out)
}

// RevealSecret returns what receivers verify with: the whsec_ secret, or
// the whpk_ public key of an ed25519 endpoint.
func (c *Client) RevealSecret(ctx context.Context, tenantID string, id uuid.UUID) (string, error) {
	var out struct{ Secret string }
	return out.Secret, c.do(ctx, "GET", endpointPath(tenantID, id)+"/secret", nil, nil, &out)
}

// RotateSecret makes a new secret, which signs at once; the old one keeps
// signing for grace. A zero grace means the API's default (24 hours); at
// most 7 days. It returns what receivers verify with from now on.
func (c *Client) RotateSecret(ctx context.Context, tenantID string, id uuid.UUID, grace time.Duration) (string, error) {
	var body any
	if grace > 0 {
		body = map[string]int64{"grace_seconds": int64(grace / time.Second)}
	}
	var out struct{ Secret string }
	return out.Secret, c.do(ctx, "POST", endpointPath(tenantID, id)+"/secret/rotate", nil, body, &out)
}

// SendTestEvent sends a herald.test event to this endpoint only and
// returns its message.
func (c *Client) SendTestEvent(ctx context.Context, tenantID string, id uuid.UUID) (Message, error) {
	var out Message
	return out, c.do(ctx, "POST", endpointPath(tenantID, id)+"/test", nil, nil, &out)
}
