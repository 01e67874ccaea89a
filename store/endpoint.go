package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/enabling"
	"github.com/heraldhq/herald/signing"
)

// Endpoint is one URL a tenant receives webhooks at. It never carries a
// secret.
type Endpoint struct {
	// ID is a UUIDv7, so ids sort by creation time.
	ID       uuid.UUID
	TenantID string
	// URL is where deliveries are POSTed.
	URL         string
	Description string
	// EventTypes are the types the endpoint receives. Empty (never nil)
	// means every type.
	EventTypes []string
	// RateLimit is the most messages per second the endpoint receives. Zero
	// means no limit.
	RateLimit float64
	// Channels are the channels the endpoint subscribes to: it receives
	// only messages carrying one of them. Empty (never nil) means every
	// message, with or without channels.
	Channels []string
	// Filter is the endpoint's filter on message bodies (package filter),
	// as its owner wrote it; empty means none.
	Filter string
	// Headers are sent on every attempt; a secret one's value is
	// MaskedHeaderValue. Empty (never nil) means none.
	Headers []EndpointHeader
	// Timeout is the endpoint's own request timeout; zero means the
	// dispatcher's.
	Timeout time.Duration
	// RetryPolicy is the endpoint's own retry policy; a zero field means
	// the dispatcher's.
	RetryPolicy RetryPolicy
	// Ordering says whether deliveries of one object are sent one at a
	// time in version order (OrderingObject) or independently
	// (OrderingNone).
	Ordering Ordering
	// Enabled is false once the endpoint was disabled, by its owner, by a
	// 410 Gone or for failing too long; DisabledReason and DisabledAt say
	// why and when.
	Enabled        bool
	DisabledReason string
	DisabledAt     *time.Time
	// FailingSince is the start of the current run of failed attempts, nil
	// while the endpoint is healthy.
	FailingSince *time.Time
	// LastSuccessAt is the time of the last successful attempt, if any.
	LastSuccessAt *time.Time
	// UnreachableStreak counts the latest attempts in a row that got no
	// answer (timed out or could not connect), up to
	// health.BreakerThreshold.
	UnreachableStreak int
	// BreakerOpenedAt is when the endpoint's breaker opened, nil while it
	// is closed: the dispatchers send it one probe at a time until an
	// attempt is answered (health.BreakerThreshold).
	BreakerOpenedAt *time.Time
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

// Subscribes reports whether the endpoint receives events of eventType.
func (e Endpoint) Subscribes(eventType string) bool {
	if len(e.EventTypes) == 0 {
		return true
	}
	for _, t := range e.EventTypes {
		if t == eventType {
			return true
		}
	}
	return false
}

// NewEndpoint is what CreateEndpoint needs.
type NewEndpoint struct {
	// TenantID is the tenant the endpoint belongs to. Required; the tenant
	// must exist.
	TenantID string
	// URL is an absolute http or https URL with a host, at most 2048
	// characters, and passes the store's URL policy. Required.
	URL string
	// Description is a label for people, at most 1024 characters. Optional.
	Description string
	// EventTypes are the event types to receive (see outbox.ValidateType);
	// repeats are dropped. Empty means every type.
	EventTypes []string
	// RateLimit caps messages per second. Zero means no limit.
	RateLimit float64
	// Channels are the channels to receive (at most MaxEndpointChannels,
	// each as outbox.ValidateChannel accepts); repeats are dropped. Empty
	// means every message, with or without channels.
	Channels []string
	// Filter is a filter on message bodies (package filter); a message it
	// does not match creates no delivery. Empty means none.
	Filter string
	// Headers are sent on every attempt: at most MaxEndpointHeaders,
	// MaxEndpointHeaderBytes together, none that Herald sets itself (see
	// checkHeaders). A secret one is stored encrypted.
	Headers []EndpointHeader
	// Timeout is the endpoint's request timeout, from
	// schedule.MinEndpointTimeout to the bounds' MaxTimeout. Zero means
	// the dispatcher's.
	Timeout time.Duration
	// RetryPolicy is the endpoint's retry policy, within the bounds
	// (Config.PolicyBounds). A zero field means the dispatcher's.
	RetryPolicy RetryPolicy
	// Ordering is OrderingNone (the default; empty means it) or
	// OrderingObject. It cannot be changed once the endpoint exists.
	Ordering Ordering
	// Secret is the endpoint's signing secret: a whsec_ secret or, for
	// ed25519 signatures, a whsk_ private key. The zero Secret means a new
	// whsec_ secret is generated.
	Secret signing.Secret
}

// EndpointUpdate lists the changes UpdateEndpoint makes. A nil field is left
// as it is.
type EndpointUpdate struct {
	URL         *string
	Description *string
	// EventTypes replaces the subscription; a pointer to an empty slice
	// subscribes to every type.
	EventTypes *[]string
	// RateLimit replaces the limit; a pointer to 0 removes it.
	RateLimit *float64
	// Channels replaces the channels; a pointer to an empty slice receives
	// every message.
	Channels *[]string
	// Filter replaces the filter; a pointer to "" removes it.
	Filter *string
	// Headers replaces the headers; a pointer to an empty slice removes
	// them. A secret header without a value keeps the value stored under
	// its name.
	Headers *[]EndpointHeader
	// Timeout replaces the timeout; a pointer to 0 goes back to the
	// dispatcher's.
	Timeout *time.Duration
	// RetryPolicy replaces the retry policy; a pointer to the zero
	// RetryPolicy goes back to the dispatcher's.
	RetryPolicy *RetryPolicy
}

func scanEndpoint(row pgx.Row) (Endpoint, error) {
	var (
		e       Endpoint
		headers []byte
		options storedOptions
	)
	err := row.Scan(&e.ID, &e.TenantID, &e.URL, &e.Description, &e.EventTypes, &e.RateLimit, &e.Ordering, &e.Enabled,
		&e.DisabledReason, &e.DisabledAt, &e.FailingSince, &e.LastSuccessAt, &e.UnreachableStreak, &e.BreakerOpenedAt,
		&e.CreatedAt, &e.UpdatedAt, &e.Channels, &e.Filter,
		&headers, &options.timeoutMS, &options.windowMS, &options.baseMS, &options.capMS)
	if err != nil {
		return e, err
	}
	if e.Headers, err = shownHeaders(headers); err != nil {
		return e, fmt.Errorf("endpoint %s: %w", e.ID, err)
	}
	e.Timeout, e.RetryPolicy = options.policy()
	return e, nil
}

// CreateEndpoint creates an endpoint with its first signing secret; read
// the secret with RevealSecret. A tenant that does not exist is an error
// wrapping ErrNotFound; one that has as many endpoints as its cap allows
// (its own, or Config.MaxEndpointsPerTenant) an *EndpointLimitError. The
// cap holds however many processes create endpoints at once.
func (s *Store) CreateEndpoint(ctx context.Context, n NewEndpoint) (Endpoint, error) {
	return s.createEndpoint(ctx, s.pool, n)
}

// CreateEndpointTx is CreateEndpoint in the caller's transaction. Bad input
// and an unknown tenant leave tx usable.
func (s *Store) CreateEndpointTx(ctx context.Context, tx pgx.Tx, n NewEndpoint) (Endpoint, error) {
	return s.createEndpoint(ctx, tx, n)
}

func (s *Store) createEndpoint(ctx context.Context, db dbtx, n NewEndpoint) (Endpoint, error) {
	fail := func(err error) (Endpoint, error) {
		return Endpoint{}, fmt.Errorf("create endpoint for tenant %q: %w", n.TenantID, err)
	}
	if err := checkTenantID("tenant_id", n.TenantID); err != nil {
		return fail(err)
	}
	if err := s.checkURL(n.URL); err != nil {
		return fail(err)
	}
	if err := checkText("description", n.Description, maxDescriptionLength); err != nil {
		return fail(err)
	}
	eventTypes, err := normalizeEventTypes(n.EventTypes)
	if err != nil {
		return fail(err)
	}
	if err := checkRateLimit(n.RateLimit); err != nil {
		return fail(err)
	}
	channels, err := normalizeChannels(n.Channels)
	if err != nil {
		return fail(err)
	}
	if err := checkFilter(n.Filter); err != nil {
		return fail(err)
	}
	if err := checkHeaders(n.Headers, nil); err != nil {
		return fail(err)
	}
	if err := s.checkPolicy(n.Timeout, n.RetryPolicy); err != nil {
		return fail(err)
	}
	ordering := cmp.Or(n.Ordering, OrderingNone)
	if !ordering.Valid() {
		return fail(invalid("ordering", "is %q; give %q (deliveries independent, the default) or %q (one object's deliveries one at a time, in version order)",
			ordering, OrderingNone, OrderingObject))
	}
	secret := n.Secret
	if secret.Algorithm() == 0 {
		if secret, err = signing.GenerateHMACSecret(); err != nil {
			return fail(err)
		}
	}
	algorithm, err := algorithmColumn(secret)
	if err != nil {
		return fail(err)
	}
	id, secretID := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	headers, err := s.sealHeaders(id, n.Headers, nil)
	if err != nil {
		return fail(err)
	}
	options := newStoredOptions(n.Timeout, n.RetryPolicy)
	e, err := scanEndpoint(db.QueryRow(ctx, insertEndpoint, id, n.TenantID, n.URL, n.Description, eventTypes, n.RateLimit,
		secretID, algorithm, s.sealSecret(id, secret), s.defaultCap(), string(ordering), channels, n.Filter,
		headers, options.timeoutMS, options.windowMS, options.baseMS, options.capMS))
	if errors.Is(err, pgx.ErrNoRows) {
		return fail(s.refusal(ctx, db, n.TenantID))
	}
	if err != nil {
		return fail(err)
	}
	return e, nil
}

// defaultCap is the default endpoint cap as insertEndpoint takes it: nil
// for none.
func (s *Store) defaultCap() *int {
	if s.maxEndpoints < 0 {
		return nil
	}
	return &s.maxEndpoints
}

// refusal says why insertEndpoint created nothing for tenantID.
func (s *Store) refusal(ctx context.Context, db dbtx, tenantID string) error {
	limit := &EndpointLimitError{TenantID: tenantID}
	err := db.QueryRow(ctx, selectEndpointCap, tenantID, s.defaultCap()).Scan(&limit.Count, &limit.Max, &limit.Own)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("tenant %q: %w", tenantID, ErrNotFound)
	}
	if err != nil {
		return err
	}
	return limit
}

// GetEndpoint returns an endpoint, or an error wrapping ErrNotFound.
func (s *Store) GetEndpoint(ctx context.Context, id uuid.UUID) (Endpoint, error) {
	e, err := scanEndpoint(s.pool.QueryRow(ctx, selectEndpoint, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return Endpoint{}, fmt.Errorf("endpoint %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Endpoint{}, fmt.Errorf("get endpoint %s: %w", id, err)
	}
	return e, nil
}

// ListEndpoints returns a page of a tenant's endpoints in creation (id)
// order. A tenant that does not exist is an error wrapping ErrNotFound.
func (s *Store) ListEndpoints(ctx context.Context, tenantID string, p ListParams[uuid.UUID]) (Page[Endpoint], error) {
	fail := func(err error) (Page[Endpoint], error) {
		return Page[Endpoint]{}, fmt.Errorf("list endpoints of tenant %q: %w", tenantID, err)
	}
	n, err := limit(p.Limit)
	if err != nil {
		return fail(err)
	}
	if !validTenantID(tenantID) {
		return fail(ErrNotFound)
	}
	rows, err := s.pool.Query(ctx, listEndpoints, tenantID, p.After, n+1)
	if err != nil {
		return fail(err)
	}
	endpoints, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Endpoint, error) { return scanEndpoint(row) })
	if err != nil {
		return fail(err)
	}
	if len(endpoints) == 0 {
		var exists bool
		if err := s.pool.QueryRow(ctx, tenantExists, tenantID).Scan(&exists); err != nil {
			return fail(err)
		}
		if !exists {
			return fail(ErrNotFound)
		}
	}
	return page(endpoints, n), nil
}

// UpdateEndpoint changes an endpoint and returns it as it now is.
func (s *Store) UpdateEndpoint(ctx context.Context, id uuid.UUID, u EndpointUpdate) (Endpoint, error) {
	return s.updateEndpoint(ctx, s.pool, id, u)
}

// UpdateEndpointTx is UpdateEndpoint in the caller's transaction. Bad input
// leaves tx usable.
func (s *Store) UpdateEndpointTx(ctx context.Context, tx pgx.Tx, id uuid.UUID, u EndpointUpdate) (Endpoint, error) {
	return s.updateEndpoint(ctx, tx, id, u)
}

func (s *Store) updateEndpoint(ctx context.Context, db dbtx, id uuid.UUID, u EndpointUpdate) (Endpoint, error) {
	fail := func(err error) (Endpoint, error) {
		return Endpoint{}, fmt.Errorf("update endpoint %s: %w", id, err)
	}
	if u.URL != nil {
		if err := s.checkURL(*u.URL); err != nil {
			return fail(err)
		}
	}
	if u.Description != nil {
		if err := checkText("description", *u.Description, maxDescriptionLength); err != nil {
			return fail(err)
		}
	}
	var eventTypes []string
	if u.EventTypes != nil {
		var err error
		if eventTypes, err = normalizeEventTypes(*u.EventTypes); err != nil {
			return fail(err)
		}
	}
	if u.RateLimit != nil {
		if err := checkRateLimit(*u.RateLimit); err != nil {
			return fail(err)
		}
	}
	var channels []string
	if u.Channels != nil {
		var err error
		if channels, err = normalizeChannels(*u.Channels); err != nil {
			return fail(err)
		}
	}
	if u.Filter != nil {
		if err := checkFilter(*u.Filter); err != nil {
			return fail(err)
		}
	}
	var headers []byte
	if u.Headers != nil {
		var err error
		if headers, err = s.updatedHeaders(ctx, db, id, *u.Headers); err != nil {
			return fail(err)
		}
	}
	options, err := s.updatedOptions(u)
	if err != nil {
		return fail(err)
	}
	e, err := scanEndpoint(db.QueryRow(ctx, updateEndpoint, id, u.URL, u.Description, eventTypes, u.RateLimit, channels, u.Filter,
		headers, u.Timeout != nil, options.timeoutMS, u.RetryPolicy != nil, options.windowMS, options.baseMS, options.capMS))
	if errors.Is(err, pgx.ErrNoRows) {
		return fail(ErrNotFound)
	}
	if err != nil {
		return fail(err)
	}
	return e, nil
}

// DisableEndpoint stops deliveries to an endpoint, recording why and when
// (the store's clock). reason is required, at most 1024 characters.
// Disabling a disabled endpoint changes nothing and keeps the first reason.
func (s *Store) DisableEndpoint(ctx context.Context, id uuid.UUID, reason string) (Endpoint, error) {
	return s.disableEndpoint(ctx, s.pool, id, reason)
}

// DisableEndpointTx is DisableEndpoint in the caller's transaction, for
// example together with cancelling the endpoint's pending deliveries.
func (s *Store) DisableEndpointTx(ctx context.Context, tx pgx.Tx, id uuid.UUID, reason string) (Endpoint, error) {
	return s.disableEndpoint(ctx, tx, id, reason)
}

func (s *Store) disableEndpoint(ctx context.Context, db dbtx, id uuid.UUID, reason string) (Endpoint, error) {
	fail := func(err error) (Endpoint, error) {
		return Endpoint{}, fmt.Errorf("disable endpoint %s: %w", id, err)
	}
	if reason == "" {
		return fail(invalid("reason", "is empty; say why the endpoint is disabled, for example \"disabled by its owner\""))
	}
	if err := checkText("reason", reason, maxReasonLength); err != nil {
		return fail(err)
	}
	e, err := scanEndpoint(db.QueryRow(ctx, disableEndpoint, id, reason, s.now()))
	if errors.Is(err, pgx.ErrNoRows) {
		return fail(ErrNotFound)
	}
	if err != nil {
		return fail(err)
	}
	return e, nil
}

// EnableEndpoint resumes deliveries to an endpoint. It clears the disable
// reason and time and the failing spell, so the health clock starts afresh.
func (s *Store) EnableEndpoint(ctx context.Context, id uuid.UUID) (e Endpoint, err error) {
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		e, err = s.enableEndpoint(ctx, tx, id)
		return err
	})
	return e, err
}

// EnableEndpointTx is EnableEndpoint in the caller's transaction.
func (s *Store) EnableEndpointTx(ctx context.Context, tx pgx.Tx, id uuid.UUID) (Endpoint, error) {
	return s.enableEndpoint(ctx, tx, id)
}

// enableEndpoint takes the enabling barrier (package enabling) first, so
// that the fan-outs that read the endpoint as disabled have committed their
// skipped deliveries before it is enabled. It must be the first lock of
// its transaction (EnableEndpointTx's callers call it first), and it holds
// until the transaction ends.
func (s *Store) enableEndpoint(ctx context.Context, tx pgx.Tx, id uuid.UUID) (Endpoint, error) {
	if _, err := tx.Exec(ctx, enabling.Enable); err != nil {
		return Endpoint{}, fmt.Errorf("enable endpoint %s: wait for the fan-outs in flight: %w", id, err)
	}
	e, err := scanEndpoint(tx.QueryRow(ctx, enableEndpoint, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return Endpoint{}, fmt.Errorf("enable endpoint %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Endpoint{}, fmt.Errorf("enable endpoint %s: %w", id, err)
	}
	return e, nil
}
