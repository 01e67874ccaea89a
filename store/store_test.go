package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/internal/testfactory"
	"github.com/heraldhq/herald/store"
)

// t0 is the store's clock in tests.
var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

type testBundle struct {
	pool  *pgxpool.Pool
	box   *secretbox.Box
	store *store.Store
}

func setup(t *testing.T) (*testBundle, context.Context) {
	t.Helper()
	pool := pgtest.NewPool(t)
	box, err := secretbox.Parse(secretbox.Generate())
	require.NoError(t, err)
	s, err := store.New(pool, store.Config{
		Box:      box,
		CheckURL: ssrf.New().CheckURL,
		Now:      func() time.Time { return t0 },
	})
	require.NoError(t, err)
	return &testBundle{pool: pool, box: box, store: s}, context.Background()
}

// setupEndpoint is setup with tenant acme and an endpoint of it.
func setupEndpoint(t *testing.T) (*testBundle, context.Context, store.Endpoint) {
	t.Helper()
	b, ctx := setup(t)
	b.tenant(t, "acme")
	return b, ctx, b.endpoint(t, ctx, "acme")
}

// tenant inserts a tenant with SQL, so that tests of endpoints do not
// depend on CreateTenant.
func (b *testBundle) tenant(t *testing.T, id string) {
	t.Helper()
	testfactory.Tenant(t, b.pool, &testfactory.TenantOpts{ID: id, Name: "Tenant " + id})
}

func (b *testBundle) endpoint(t *testing.T, ctx context.Context, tenantID string) store.Endpoint {
	t.Helper()
	e, err := b.store.CreateEndpoint(ctx, store.NewEndpoint{TenantID: tenantID, URL: "https://example.com/webhooks"})
	require.NoError(t, err)
	return e
}

func requireInvalid(t *testing.T, err error, field, problem string) {
	t.Helper()
	var invalid *store.ValidationError
	require.ErrorAs(t, err, &invalid)
	require.Equal(t, field, invalid.Field, "field of %v", err)
	require.Contains(t, invalid.Problem, problem)
}

func TestNewNeedsPoolAndBox(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)

	_, err := store.New(nil, store.Config{})
	require.ErrorContains(t, err, "pool is nil")
	_, err = store.New(pool, store.Config{})
	require.ErrorContains(t, err, secretbox.EnvKey)
}
