package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/testfactory"
	"github.com/heraldhq/herald/limits"
	"github.com/heraldhq/herald/store"
)

// withCap is a store on b's database whose default endpoint cap is max.
func (b *testBundle) withCap(t *testing.T, max int) *store.Store {
	t.Helper()
	s, err := store.New(b.pool, store.Config{Box: b.box, MaxEndpointsPerTenant: max})
	require.NoError(t, err)
	return s
}

func create(ctx context.Context, s *store.Store, tenantID string) error {
	_, err := s.CreateEndpoint(ctx, store.NewEndpoint{TenantID: tenantID, URL: "https://example.com/webhooks"})
	return err
}

// The default cap holds; a tenant's own cap replaces it, and removing the
// own cap brings the default back. Deleting an endpoint makes room, and
// endpoints made with plain SQL count too (the count is kept by a
// trigger).
func TestCreateEndpointCap(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	b.tenant(t, "acme")
	s := b.withCap(t, 2)
	testfactory.Endpoint(t, b.pool, &testfactory.EndpointOpts{TenantID: "acme"})
	require.NoError(t, create(ctx, s, "acme"))

	err := create(ctx, s, "acme")
	require.ErrorIs(t, err, store.ErrEndpointLimit)
	var limit *store.EndpointLimitError
	require.ErrorAs(t, err, &limit)
	require.Equal(t, store.EndpointLimitError{TenantID: "acme", Count: 2, Max: 2, Own: false}, *limit)

	three := 3
	tenant, err := s.UpdateTenant(ctx, "acme", store.TenantUpdate{MaxEndpoints: &three})
	require.NoError(t, err)
	require.Equal(t, &three, tenant.Limits.MaxEndpoints)
	require.Equal(t, 2, tenant.EndpointCount)
	max, capped := s.MaxEndpoints(tenant)
	require.True(t, capped)
	require.Equal(t, 3, max)
	require.NoError(t, create(ctx, s, "acme"))
	require.ErrorAs(t, create(ctx, s, "acme"), &limit)
	require.True(t, limit.Own)
	require.Equal(t, 3, limit.Max)

	reset := -1
	tenant, err = s.UpdateTenant(ctx, "acme", store.TenantUpdate{MaxEndpoints: &reset})
	require.NoError(t, err)
	require.Nil(t, tenant.Limits.MaxEndpoints, "back to the default")
	require.ErrorAs(t, create(ctx, s, "acme"), &limit, "3 endpoints, default cap 2")
	require.Equal(t, store.EndpointLimitError{TenantID: "acme", Count: 3, Max: 2, Own: false}, *limit)

	list, err := s.ListEndpoints(ctx, "acme", store.ListParams[uuid.UUID]{})
	require.NoError(t, err)
	b.eraseEndpoint(t, ctx, "acme", list.Items[0].ID)
	b.eraseEndpoint(t, ctx, "acme", list.Items[1].ID)
	require.NoError(t, create(ctx, s, "acme"), "deleting made room")

	unlimited := b.withCap(t, -1)
	for range 3 {
		require.NoError(t, create(ctx, unlimited, "acme"), "a negative default means no cap")
	}
	tenant, err = s.GetTenant(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, 5, tenant.EndpointCount)
	_, err = s.CreateEndpoint(ctx, store.NewEndpoint{TenantID: "nobody", URL: "https://example.com/webhooks"})
	require.ErrorIs(t, err, store.ErrNotFound)
}

// Ten creations at once for a tenant with a cap of 3, from two stores (as
// two api replicas) on their own connections: exactly 3 are created.
// Counting the endpoints in the creating statement instead of locking the
// tenant's row created 4 in two runs of three.
func TestCreateEndpointCapHoldsUnderConcurrency(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	b.tenant(t, "acme")
	replicas := []*store.Store{b.withCap(t, 3), b.withCap(t, 3)}
	errs := make([]error, 10)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() {
			<-start
			errs[i] = create(ctx, replicas[i%2], "acme")
		})
	}
	close(start)
	wg.Wait()
	created := 0
	for _, err := range errs {
		if err == nil {
			created++
			continue
		}
		require.ErrorIs(t, err, store.ErrEndpointLimit)
	}
	require.Equal(t, 3, created)
	tenant, err := b.store.GetTenant(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, 3, tenant.EndpointCount)
}

// An operator's rate limits for a tenant are set, replaced and removed
// action by action; bad ones are refused naming the field.
func TestUpdateTenantRateLimits(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	b.tenant(t, "acme")
	fast := limits.Rate{PerSecond: 500, Burst: 1000}
	slow := limits.Rate{PerSecond: 0.01, Burst: 1}
	tenant, err := b.store.UpdateTenant(ctx, "acme", store.TenantUpdate{Rates: map[limits.Action]*limits.Rate{limits.Publish: &fast, limits.Replay: &slow}})
	require.NoError(t, err)
	require.Equal(t, map[limits.Action]limits.Rate{limits.Publish: fast, limits.Replay: slow}, tenant.Limits.Rates)

	tenant, err = b.store.UpdateTenant(ctx, "acme", store.TenantUpdate{Rates: map[limits.Action]*limits.Rate{limits.Publish: nil, limits.Resend: &slow}})
	require.NoError(t, err)
	require.Equal(t, map[limits.Action]limits.Rate{limits.Resend: slow, limits.Replay: slow}, tenant.Limits.Rates)
	got, err := b.store.GetTenant(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, tenant, got)

	for _, tt := range []struct {
		update         store.TenantUpdate
		field, problem string
	}{
		{store.TenantUpdate{Rates: map[limits.Action]*limits.Rate{limits.Publish: {PerSecond: 0, Burst: 1}}}, "limits.publish", "per_second is 0"},
		{store.TenantUpdate{Rates: map[limits.Action]*limits.Rate{limits.TestEvent: {PerSecond: 1, Burst: 0}}}, "limits.test_event", "burst is 0"},
		{store.TenantUpdate{Rates: map[limits.Action]*limits.Rate{"deliver": &fast}}, "limits", "not a rate-limited action"},
		{store.TenantUpdate{MaxEndpoints: new(store.MaxEndpointsLimit + 1)}, "limits.max_endpoints", "from 0 to 1000000"},
	} {
		_, err := b.store.UpdateTenant(ctx, "acme", tt.update)
		requireInvalid(t, err, tt.field, tt.problem)
	}
}

// A tenant's own retention is set, kept by other updates, and removed
// with a negative duration; its form is checked here, its length by the
// api against the dispatchers' settings.
func TestUpdateTenantRetention(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	b.tenant(t, "acme")
	week := 7 * 24 * time.Hour
	tenant, err := b.store.UpdateTenant(ctx, "acme", store.TenantUpdate{Retention: &week})
	require.NoError(t, err)
	require.Equal(t, &week, tenant.Limits.Retention)
	name := "Acme"
	tenant, err = b.store.UpdateTenant(ctx, "acme", store.TenantUpdate{Name: &name})
	require.NoError(t, err)
	require.Equal(t, &week, tenant.Limits.Retention, "an update that does not name it keeps it")
	got, err := b.store.GetTenant(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, &week, got.Limits.Retention)

	odd := week + time.Millisecond
	_, err = b.store.UpdateTenant(ctx, "acme", store.TenantUpdate{Retention: &odd})
	var invalid *store.ValidationError
	require.ErrorAs(t, err, &invalid)
	require.Equal(t, "limits.retention_seconds", invalid.Field)

	reset := time.Duration(-1)
	tenant, err = b.store.UpdateTenant(ctx, "acme", store.TenantUpdate{Retention: &reset})
	require.NoError(t, err)
	require.Nil(t, tenant.Limits.Retention)
}
