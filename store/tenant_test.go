package store_test

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/store"
)

func TestTenantLifecycle(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)

	created, err := b.store.CreateTenant(ctx, store.NewTenant{ID: "cus_123", Name: "Acme"})
	require.NoError(t, err)
	require.Equal(t, "cus_123", created.ID)
	require.Equal(t, "Acme", created.Name)
	require.False(t, created.CreatedAt.IsZero())

	got, err := b.store.GetTenant(ctx, "cus_123")
	require.NoError(t, err)
	require.Equal(t, created, got)

	name := "Acme Inc."
	updated, err := b.store.UpdateTenant(ctx, "cus_123", store.TenantUpdate{Name: &name})
	require.NoError(t, err)
	require.Equal(t, "Acme Inc.", updated.Name)
	unchanged, err := b.store.UpdateTenant(ctx, "cus_123", store.TenantUpdate{})
	require.NoError(t, err)
	require.Equal(t, "Acme Inc.", unchanged.Name, "a nil field is left as it is")

	e := b.endpoint(t, ctx, "cus_123")
	b.eraseTenant(t, ctx, "cus_123")
	_, err = b.store.GetTenant(ctx, "cus_123")
	require.ErrorIs(t, err, store.ErrNotFound, "a tenant being erased is gone for the store")
	_, err = b.store.UpdateTenant(ctx, "cus_123", store.TenantUpdate{Name: &name})
	require.ErrorIs(t, err, store.ErrNotFound)
	list, err := b.store.ListTenants(ctx, store.ListParams[string]{})
	require.NoError(t, err)
	require.Empty(t, list.Items)
	_, err = b.store.GetEndpoint(ctx, e.ID)
	require.ErrorIs(t, err, store.ErrNotFound, "and so are its endpoints")
	_, err = b.store.ListEndpoints(ctx, "cus_123", store.ListParams[uuid.UUID]{})
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = b.store.CreateEndpoint(ctx, store.NewEndpoint{TenantID: "cus_123", URL: "https://example.com/webhooks"})
	require.ErrorIs(t, err, store.ErrNotFound, "it takes no new endpoints")
	_, err = b.store.CreateTenant(ctx, store.NewTenant{ID: "cus_123"})
	require.ErrorIs(t, err, store.ErrBeingErased, "its id is not free until the erasure completes")
}

func TestCreateTenantRejects(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	b.tenant(t, "acme")

	_, err := b.store.CreateTenant(ctx, store.NewTenant{ID: "acme"})
	require.ErrorIs(t, err, store.ErrAlreadyExists)

	for _, tt := range []struct {
		name, field, problem string
		tenant               store.NewTenant
	}{
		{"empty id", "id", "is empty", store.NewTenant{}},
		{"id with a space", "id", "is malformed", store.NewTenant{ID: "acme corp"}},
		{"id with a slash", "id", "is malformed", store.NewTenant{ID: "acme/1"}},
		{"id too long", "id", "is malformed", store.NewTenant{ID: strings.Repeat("a", 129)}},
		{"name too long", "name", "at most 256", store.NewTenant{ID: "globex", Name: strings.Repeat("n", 257)}},
		{"name with NUL", "name", "NUL byte", store.NewTenant{ID: "globex", Name: "a\x00b"}},
		{"name not UTF-8", "name", "not valid UTF-8", store.NewTenant{ID: "globex", Name: "\xff"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := b.store.CreateTenant(ctx, tt.tenant)
			requireInvalid(t, err, tt.field, tt.problem)
		})
	}
}

// A producer creates tenants in its own transaction; a refused create
// leaves the transaction usable.
func TestCreateTenantTx(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	b.tenant(t, "acme")

	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	_, err = b.store.CreateTenantTx(ctx, tx, store.NewTenant{ID: "acme"})
	require.ErrorIs(t, err, store.ErrAlreadyExists)
	_, err = b.store.CreateTenantTx(ctx, tx, store.NewTenant{ID: "globex"})
	require.NoError(t, err)
	_, err = b.store.GetTenant(ctx, "globex")
	require.ErrorIs(t, err, store.ErrNotFound, "not visible before commit")
	require.NoError(t, tx.Commit(ctx))
	_, err = b.store.GetTenant(ctx, "globex")
	require.NoError(t, err)
}

func TestTenantNotFound(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)

	for _, id := range []string{"nobody", "", "bad id", "nul\x00"} {
		_, err := b.store.GetTenant(ctx, id)
		require.ErrorIs(t, err, store.ErrNotFound, "get %q", id)
		_, err = b.store.UpdateTenant(ctx, id, store.TenantUpdate{})
		require.ErrorIs(t, err, store.ErrNotFound, "update %q", id)
	}
}

func TestListTenants(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	for _, id := range []string{"c", "a", "e", "b", "d"} {
		b.tenant(t, id)
	}

	first, err := b.store.ListTenants(ctx, store.ListParams[string]{Limit: 2})
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, tenantIDs(first.Items))
	require.True(t, first.More)
	second, err := b.store.ListTenants(ctx, store.ListParams[string]{Limit: 2, After: "b"})
	require.NoError(t, err)
	require.Equal(t, []string{"c", "d"}, tenantIDs(second.Items))
	require.True(t, second.More)
	last, err := b.store.ListTenants(ctx, store.ListParams[string]{Limit: 2, After: "d"})
	require.NoError(t, err)
	require.Equal(t, []string{"e"}, tenantIDs(last.Items))
	require.False(t, last.More)

	all, err := b.store.ListTenants(ctx, store.ListParams[string]{})
	require.NoError(t, err)
	require.Len(t, all.Items, 5)

	for _, n := range []int{-1, store.MaxListLimit + 1} {
		_, err := b.store.ListTenants(ctx, store.ListParams[string]{Limit: n})
		requireInvalid(t, err, "limit", "give 1 to 200")
	}
}

func tenantIDs(tenants []store.Tenant) []string {
	ids := make([]string, len(tenants))
	for i, t := range tenants {
		ids[i] = t.ID
	}
	return ids
}
