package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/erasure"
	"github.com/heraldhq/herald/internal/pgtest"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/internal/testfactory"
	"github.com/heraldhq/herald/migrations"
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

// jobs is an insert-only River client, for starting erasures.
func (b *testBundle) jobs(t *testing.T) *river.Client[pgx.Tx] {
	t.Helper()
	jobs, err := river.NewClient(riverpgxv5.New(b.pool), &river.Config{Schema: migrations.Schema})
	require.NoError(t, err)
	return jobs
}

// eraseEndpoint starts the erasure of an endpoint (package erasure), which
// marks it deleted at once.
func (b *testBundle) eraseEndpoint(t *testing.T, ctx context.Context, tenantID string, id uuid.UUID) {
	t.Helper()
	_, err := erasure.StartEndpoint(ctx, b.pool, b.jobs(t), tenantID, id)
	require.NoError(t, err)
}

// eraseTenant starts the erasure of a tenant.
func (b *testBundle) eraseTenant(t *testing.T, ctx context.Context, id string) {
	t.Helper()
	_, err := erasure.StartTenant(ctx, b.pool, b.jobs(t), id)
	require.NoError(t, err)
}
