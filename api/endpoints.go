package api

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/endpointauth"
	"github.com/heraldhq/herald/erasure"
	"github.com/heraldhq/herald/internal/page"
	"github.com/heraldhq/herald/replay"
	"github.com/heraldhq/herald/signing"
	"github.com/heraldhq/herald/store"
)

// Endpoint is an endpoint as the API shows it; it never holds a secret.
type Endpoint struct {
	ID          uuid.UUID `json:"id"`
	TenantID    string    `json:"tenant_id"`
	URL         string    `json:"url"`
	Description string    `json:"description"`
	// EventTypes are the subscribed types; empty means every type.
	EventTypes []string `json:"event_types"`
	// RateLimit is messages per second; 0 means unlimited.
	RateLimit float64 `json:"rate_limit"`
	// Channels are the subscribed channels; empty means every message,
	// with or without channels.
	Channels []string `json:"channels"`
	// Filter is the filter on message bodies; empty means none.
	Filter string `json:"filter"`
	// Headers are sent on every attempt; secret values are masked.
	Headers []EndpointHeader `json:"headers"`
	// TimeoutSeconds is the endpoint's request timeout; null means the
	// dispatcher's.
	TimeoutSeconds *int64 `json:"timeout_seconds"`
	// RetryPolicy is the endpoint's retry policy; null means the
	// dispatcher's.
	RetryPolicy *RetryPolicy `json:"retry_policy"`
	// Ordering is "none" or "object" (store.Ordering).
	Ordering       store.Ordering `json:"ordering"`
	Enabled        bool           `json:"enabled"`
	DisabledReason string         `json:"disabled_reason,omitempty"`
	DisabledAt     *time.Time     `json:"disabled_at,omitempty"`
	FailingSince   *time.Time     `json:"failing_since,omitempty"`
	LastSuccessAt  *time.Time     `json:"last_success_at,omitempty"`
	// Breaker is the endpoint's breaker (health.BreakerThreshold).
	Breaker   Breaker   `json:"breaker"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Authentication and TLS are shown masked, absent when not set (see
	// endpoint_auth.go).
	Authentication *endpointauth.Authentication `json:"authentication,omitempty"`
	TLS            *TLSView                     `json:"tls,omitempty"`
}

// Breaker shows an endpoint's breaker. State is "closed", or "open" once
// health.BreakerThreshold attempts in a row got no answer (timed out or
// could not connect): the dispatchers then send one probe at a time, and
// the endpoint's other deliveries wait, until an attempt is answered.
type Breaker struct {
	State string `json:"state"`
	// UnansweredInARow counts the latest attempts in a row that got no
	// answer, up to the threshold.
	UnansweredInARow int `json:"unanswered_in_a_row"`
	// OpenedAt is when it opened; absent while closed.
	OpenedAt *time.Time `json:"opened_at,omitempty"`
}

// The states of Breaker.
const (
	BreakerClosed = "closed"
	BreakerOpen   = "open"
)

func endpointView(e store.Endpoint) Endpoint {
	breaker := Breaker{State: BreakerClosed, UnansweredInARow: e.UnreachableStreak, OpenedAt: e.BreakerOpenedAt}
	if e.BreakerOpenedAt != nil {
		breaker.State = BreakerOpen
	}
	return Endpoint{
		ID: e.ID, TenantID: e.TenantID, URL: e.URL, Description: e.Description, EventTypes: e.EventTypes,
		RateLimit: e.RateLimit, Channels: e.Channels, Filter: e.Filter, Headers: headersView(e.Headers),
		TimeoutSeconds: timeoutView(e.Timeout), RetryPolicy: retryPolicyView(e.RetryPolicy), Ordering: e.Ordering, Enabled: e.Enabled, DisabledReason: e.DisabledReason, DisabledAt: e.DisabledAt,
		FailingSince: e.FailingSince, LastSuccessAt: e.LastSuccessAt, Breaker: breaker, CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt,
	}
}

type createEndpointRequest struct {
	URL         string   `json:"url"`
	Description string   `json:"description"`
	EventTypes  []string `json:"event_types"`
	RateLimit   float64  `json:"rate_limit"`
	Channels    []string `json:"channels"`
	Filter      string   `json:"filter"`
	// Headers are sent on every attempt (store.NewEndpoint.Headers).
	Headers []EndpointHeader `json:"headers"`
	// TimeoutSeconds is the request timeout; 0 or absent means the
	// dispatcher's.
	TimeoutSeconds int64 `json:"timeout_seconds"`
	// RetryPolicy is the retry policy; absent means the dispatcher's.
	RetryPolicy RetryPolicy `json:"retry_policy"`
	// Ordering is "none" (empty means it) or "object".
	Ordering store.Ordering `json:"ordering"`
	// Secret is optional: a whsec_ secret, or a whsk_ key for ed25519
	// signatures. Empty means Herald generates a whsec_ secret.
	Secret string `json:"secret"`
	credentialsRequest
}

type updateEndpointRequest struct {
	URL         *string   `json:"url"`
	Description *string   `json:"description"`
	EventTypes  *[]string `json:"event_types"`
	RateLimit   *float64  `json:"rate_limit"`
	// Channels replaces the channels; [] receives every message.
	Channels *[]string `json:"channels"`
	// Filter replaces the filter; "" removes it.
	Filter *string `json:"filter"`
	// Headers replaces the headers; [] removes them. A secret header sent
	// without a value keeps the value it had.
	Headers *[]EndpointHeader `json:"headers"`
	// TimeoutSeconds replaces the timeout; 0 goes back to the
	// dispatcher's.
	TimeoutSeconds *int64 `json:"timeout_seconds"`
	// RetryPolicy replaces the retry policy; {} goes back to the
	// dispatcher's.
	RetryPolicy *RetryPolicy `json:"retry_policy"`
	// Ordering may only repeat the endpoint's: it is chosen at creation.
	Ordering *store.Ordering `json:"ordering"`
	credentialsRequest
}

type disableEndpointRequest struct {
	Reason string `json:"reason"`
}

type rotateSecretRequest struct {
	// GraceSeconds is how long the previous secret keeps signing. Zero
	// means store.DefaultRotationGrace (24 h); at most 7 days.
	GraceSeconds int64 `json:"grace_seconds"`
}

// secretResponse is what an endpoint's owner configures their receiver
// with: the whsec_ secret, or for an ed25519 endpoint the whpk_ public key.
// The whsk_ private key signs inside Herald and is never shown after the
// endpoint is created, not even to an operator: whoever holds it could sign
// webhooks in Herald's name. An owner who needs the private key elsewhere
// generates it themselves and passes it when creating the endpoint.
type secretResponse struct {
	Secret string `json:"secret"`
}

func secretView(secret signing.Secret) secretResponse {
	return secretResponse{Secret: secret.ReceiverKey().String()}
}

// defaultDisableReason is recorded when an owner disables an endpoint
// without saying why.
const defaultDisableReason = "disabled through the API"

func (s *Server) listEndpoints(w http.ResponseWriter, r *http.Request) error {
	req, err := pageRequest(r)
	if err != nil {
		return err
	}
	params := store.ListParams[uuid.UUID]{Limit: req.Size()}
	if req.After != nil {
		if params.After, err = uuid.Parse(req.After.ID); err != nil {
			return page.ErrInvalidCursor
		}
	}
	endpoints, err := s.store.ListEndpoints(r.Context(), chi.URLParam(r, "tenantID"), params)
	if err != nil {
		return err
	}
	out := page.Page[Endpoint]{Items: make([]Endpoint, len(endpoints.Items))}
	views := make([]*Endpoint, len(endpoints.Items))
	for i, e := range endpoints.Items {
		out.Items[i] = endpointView(e)
		views[i] = &out.Items[i]
	}
	if err := s.withCredentials(r.Context(), views...); err != nil {
		return err
	}
	if endpoints.More {
		last := endpoints.Items[len(endpoints.Items)-1]
		out.Next = &page.Cursor{CreatedAt: last.CreatedAt, ID: last.ID.String()}
	}
	return writePage(w, out)
}

func (s *Server) createEndpoint(w http.ResponseWriter, r *http.Request) error {
	var req createEndpointRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	n := store.NewEndpoint{
		TenantID:    chi.URLParam(r, "tenantID"),
		URL:         req.URL,
		Description: req.Description,
		EventTypes:  req.EventTypes,
		RateLimit:   req.RateLimit,
		Channels:    req.Channels,
		Filter:      req.Filter,
		Headers:     storeHeaders(req.Headers),
		Ordering:    req.Ordering,
	}
	var err error
	if n.Timeout, err = policySeconds("timeout_seconds", req.TimeoutSeconds); err != nil {
		return err
	}
	if n.RetryPolicy, err = storeRetryPolicy(req.RetryPolicy); err != nil {
		return err
	}
	if req.Secret != "" {
		secret, err := signing.ParseSecret(req.Secret)
		if err != nil {
			return invalid("secret", "secret "+err.Error()+"; omit it to let Herald generate one")
		}
		n.Secret = secret
	}
	credentials, err := req.change()
	if err != nil {
		return err
	}
	var e store.Endpoint
	err = pgx.BeginFunc(r.Context(), s.pool, func(tx pgx.Tx) error {
		if e, err = s.store.CreateEndpointTx(r.Context(), tx, n); err != nil {
			return err
		}
		return s.store.SetCredentialsTx(r.Context(), tx, e.ID, credentials)
	})
	if err != nil {
		return err
	}
	w.Header().Set("Location", fmt.Sprintf("/v1/tenants/%s/endpoints/%s", e.TenantID, e.ID))
	return s.writeEndpoint(w, r, http.StatusCreated, e)
}

func (s *Server) getEndpoint(w http.ResponseWriter, r *http.Request) error {
	id, err := s.endpointID(r)
	if err != nil {
		return err
	}
	e, err := s.store.GetEndpoint(r.Context(), id)
	if err != nil {
		return err
	}
	return s.writeEndpoint(w, r, http.StatusOK, e)
}

func (s *Server) updateEndpoint(w http.ResponseWriter, r *http.Request) error {
	id, err := s.endpointID(r)
	if err != nil {
		return err
	}
	var req updateEndpointRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	if req.Ordering != nil {
		e, err := s.store.GetEndpoint(r.Context(), id)
		if err != nil {
			return err
		}
		if *req.Ordering != e.Ordering {
			return invalid("ordering", fmt.Sprintf("is %q, but this endpoint's ordering is %q and is chosen when an endpoint is created; create a new endpoint with ordering %q, or omit the field",
				*req.Ordering, e.Ordering, *req.Ordering))
		}
	}
	u := store.EndpointUpdate{
		URL: req.URL, Description: req.Description, EventTypes: req.EventTypes, RateLimit: req.RateLimit,
		Channels: req.Channels, Filter: req.Filter,
	}
	if req.Headers != nil {
		headers := storeHeaders(*req.Headers)
		u.Headers = &headers
	}
	if req.TimeoutSeconds != nil {
		timeout, err := policySeconds("timeout_seconds", *req.TimeoutSeconds)
		if err != nil {
			return err
		}
		u.Timeout = &timeout
	}
	if req.RetryPolicy != nil {
		p, err := storeRetryPolicy(*req.RetryPolicy)
		if err != nil {
			return err
		}
		u.RetryPolicy = &p
	}
	credentials, err := req.change()
	if err != nil {
		return err
	}
	var e store.Endpoint
	err = pgx.BeginFunc(r.Context(), s.pool, func(tx pgx.Tx) error {
		if e, err = s.store.UpdateEndpointTx(r.Context(), tx, id, u); err != nil {
			return err
		}
		return s.store.SetCredentialsTx(r.Context(), tx, id, credentials)
	})
	if err != nil {
		return err
	}
	return s.writeEndpoint(w, r, http.StatusOK, e)
}

// deleteEndpoint starts the endpoint's erasure and answers with it (see
// writeErasure); a repeated DELETE answers with the same erasure.
func (s *Server) deleteEndpoint(w http.ResponseWriter, r *http.Request) error {
	id, err := uuidParam(r, "endpointID", "endpoint")
	if err != nil {
		return err
	}
	e, err := erasure.StartEndpoint(r.Context(), s.pool, s.jobs, chi.URLParam(r, "tenantID"), id)
	if errors.Is(err, erasure.ErrNotFound) {
		return notFound("endpoint " + id.String())
	}
	if err != nil {
		return err
	}
	return writeErasure(w, e)
}

func (s *Server) enableEndpoint(w http.ResponseWriter, r *http.Request) error {
	id, err := s.endpointID(r)
	if err != nil {
		return err
	}
	var e store.Endpoint
	err = pgx.BeginFunc(r.Context(), s.pool, func(tx pgx.Tx) error {
		if e, err = s.store.EnableEndpointTx(r.Context(), tx, id); err != nil {
			return err
		}
		_, err = replay.ResumeTx(r.Context(), tx, s.jobs, id)
		return err
	})
	if err != nil {
		return err
	}
	return s.writeEndpoint(w, r, http.StatusOK, e)
}

func (s *Server) disableEndpoint(w http.ResponseWriter, r *http.Request) error {
	id, err := s.endpointID(r)
	if err != nil {
		return err
	}
	var req disableEndpointRequest
	if err := s.decodeOptional(w, r, &req); err != nil {
		return err
	}
	if req.Reason == "" {
		req.Reason = defaultDisableReason
	}
	e, err := s.store.DisableEndpoint(r.Context(), id, req.Reason)
	if err != nil {
		return err
	}
	return s.writeEndpoint(w, r, http.StatusOK, e)
}

func (s *Server) revealSecret(w http.ResponseWriter, r *http.Request) error {
	id, err := s.endpointID(r)
	if err != nil {
		return err
	}
	secret, err := s.store.RevealSecret(r.Context(), id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, secretView(secret))
}

func (s *Server) rotateSecret(w http.ResponseWriter, r *http.Request) error {
	id, err := s.endpointID(r)
	if err != nil {
		return err
	}
	var req rotateSecretRequest
	if err := s.decodeOptional(w, r, &req); err != nil {
		return err
	}
	maxSeconds := int64(store.MaxRotationGrace / time.Second)
	if req.GraceSeconds < 0 || req.GraceSeconds > maxSeconds {
		return invalid("grace_seconds", fmt.Sprintf("grace_seconds must be between 1 and %d (7 days); omit it for the default of %d (24 hours)", maxSeconds, int64(store.DefaultRotationGrace/time.Second)))
	}
	secret, err := s.store.RotateSecret(r.Context(), id, time.Duration(req.GraceSeconds)*time.Second)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, secretView(secret))
}
