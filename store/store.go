package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/limits"
	"github.com/heraldhq/herald/schedule"
)

// Config configures a Store.
type Config struct {
	// Box encrypts endpoint secrets at rest. Required.
	Box *secretbox.Box
	// CheckURL is the operator's policy for endpoint URLs, applied after the
	// store's own checks (the URL parses, is http or https, has a host); a
	// non-nil error rejects the URL and its message becomes the problem.
	// Herald passes (*ssrf.Guard).CheckURL. Nil means no policy beyond the
	// store's checks.
	CheckURL func(rawURL string) error
	// Now is the clock for disable times and secret expiry. Defaults to
	// time.Now. Nil means the default.
	Now func() time.Time
	// MaxEndpointsPerTenant caps the endpoints of a tenant without a cap
	// of its own (TenantUpdate.MaxEndpoints): CreateEndpoint refuses more
	// with an *EndpointLimitError. Defaults to limits.DefaultMaxEndpoints
	// (50). Zero means the default; negative means no cap.
	MaxEndpointsPerTenant int
	// PolicyBounds bound the timeouts and retry policies endpoints may
	// choose (see schedule.Bounds for the defaults). Its zero value means
	// the defaults.
	PolicyBounds schedule.Bounds
}

// Store reads and writes tenants, endpoints and their secrets. It is safe
// for concurrent use.
type Store struct {
	pool      *pgxpool.Pool
	box       *secretbox.Box
	urlPolicy func(string) error
	now       func() time.Time
	// maxEndpoints is the default endpoint cap; negative: none.
	maxEndpoints int
	// bounds are Config.PolicyBounds with their defaults.
	bounds schedule.Bounds
}

// New returns a Store on pool.
func New(pool *pgxpool.Pool, cfg Config) (*Store, error) {
	if pool == nil {
		return nil, errors.New("store: the pool is nil")
	}
	if cfg.Box == nil {
		return nil, errors.New("store: Config.Box is nil; endpoint secrets need the operator key (" + secretbox.EnvKey + ")")
	}
	if err := cfg.PolicyBounds.Check(); err != nil {
		return nil, fmt.Errorf("store: Config.PolicyBounds: %w", err)
	}
	s := &Store{pool: pool, box: cfg.Box, urlPolicy: cfg.CheckURL, now: cfg.Now, maxEndpoints: cfg.MaxEndpointsPerTenant,
		bounds: cfg.PolicyBounds.WithDefaults()}
	if s.now == nil {
		s.now = time.Now
	}
	if s.maxEndpoints == 0 {
		s.maxEndpoints = limits.DefaultMaxEndpoints
	}
	return s, nil
}

// dbtx is what a single statement needs: a pool or a transaction.
type dbtx interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// inTx runs fn in a transaction of its own.
func (s *Store) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, fn)
}
