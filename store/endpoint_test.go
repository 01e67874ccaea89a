package store_test

import (
	"context"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/signing"
	"github.com/heraldhq/herald/store"
)

func TestCreateEndpoint(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	b.tenant(t, "acme")

	e, err := b.store.CreateEndpoint(ctx, store.NewEndpoint{
		TenantID:    "acme",
		URL:         "https://example.com/webhooks",
		Description: "billing",
		EventTypes:  []string{"invoice.paid", "invoice.voided", "invoice.paid"},
		RateLimit:   5,
	})
	require.NoError(t, err)
	require.Equal(t, uuid.Version(7), e.ID.Version())
	require.Equal(t, "acme", e.TenantID)
	require.Equal(t, "https://example.com/webhooks", e.URL)
	require.Equal(t, "billing", e.Description)
	require.Equal(t, []string{"invoice.paid", "invoice.voided"}, e.EventTypes, "repeats are dropped, order kept")
	require.Equal(t, 5.0, e.RateLimit)
	require.True(t, e.Enabled)
	require.Equal(t, store.OrderingNone, e.Ordering, "the default")
	require.Empty(t, e.DisabledReason)
	require.Nil(t, e.DisabledAt)
	require.True(t, e.Subscribes("invoice.voided"))
	require.False(t, e.Subscribes("user.created"))

	got, err := b.store.GetEndpoint(ctx, e.ID)
	require.NoError(t, err)
	require.Equal(t, e, got)

	secret, err := b.store.RevealSecret(ctx, e.ID)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(secret.String(), signing.HMACSecretPrefix), "a whsec_ secret is generated")

	all := b.endpoint(t, ctx, "acme")
	require.Equal(t, []string{}, all.EventTypes, "no types means every type")
	require.Zero(t, all.RateLimit)
	require.True(t, all.Subscribes("anything.at.all"))
	require.Less(t, e.ID.String(), all.ID.String(), "ids sort by creation")
}

func TestCreateEndpointWithGivenSecret(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	b.tenant(t, "acme")

	ed, err := signing.GenerateEd25519Secret()
	require.NoError(t, err)
	e, err := b.store.CreateEndpoint(ctx, store.NewEndpoint{TenantID: "acme", URL: "https://example.com/", Secret: ed})
	require.NoError(t, err)
	got, err := b.store.RevealSecret(ctx, e.ID)
	require.NoError(t, err)
	require.Equal(t, ed.String(), got.String())
	require.Equal(t, signing.Ed25519, got.Algorithm())

	public, err := ed.Public()
	require.NoError(t, err)
	_, err = b.store.CreateEndpoint(ctx, store.NewEndpoint{TenantID: "acme", URL: "https://example.com/", Secret: public})
	requireInvalid(t, err, "secret", "cannot sign")
}

func TestCreateEndpointRejects(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	b.tenant(t, "acme")

	valid := func(change func(*store.NewEndpoint)) store.NewEndpoint {
		n := store.NewEndpoint{TenantID: "acme", URL: "https://example.com/webhooks"}
		change(&n)
		return n
	}
	for _, tt := range []struct {
		name, field, problem string
		endpoint             store.NewEndpoint
	}{
		{"no tenant", "tenant_id", "is empty", valid(func(n *store.NewEndpoint) { n.TenantID = "" })},
		{"malformed tenant", "tenant_id", "is malformed", valid(func(n *store.NewEndpoint) { n.TenantID = "a b" })},
		{"empty URL", "url", "is empty", valid(func(n *store.NewEndpoint) { n.URL = "" })},
		{"URL with spaces", "url", "white space", valid(func(n *store.NewEndpoint) { n.URL = " https://example.com/" })},
		{"unparsable URL", "url", "not a valid URL", valid(func(n *store.NewEndpoint) { n.URL = "https://exa mple.com/%zz" })},
		{"relative URL", "url", "has no scheme", valid(func(n *store.NewEndpoint) { n.URL = "/webhooks" })},
		{"ftp URL", "url", `scheme "ftp"`, valid(func(n *store.NewEndpoint) { n.URL = "ftp://example.com/" })},
		{"no host", "url", "has no host", valid(func(n *store.NewEndpoint) { n.URL = "https:///webhooks" })},
		{"URL too long", "url", "at most 2048", valid(func(n *store.NewEndpoint) { n.URL = "https://example.com/" + strings.Repeat("a", 2048) })},
		{"URL policy refuses loopback", "url", "loopback", valid(func(n *store.NewEndpoint) { n.URL = "http://127.0.0.1:8080/" })},
		{"URL policy refuses loopback in circled digits", "url", "read as 127.0.0.1", valid(func(n *store.NewEndpoint) { n.URL = "http://①②⑦.⓪.⓪.①:8080/" })},
		{"URL policy refuses full-width localhost", "url", "read as localhost", valid(func(n *store.NewEndpoint) { n.URL = "http://ｌｏｃａｌｈｏｓｔ:8080/" })},
		{"URL policy refuses full-width metadata address", "url", "169.254.169.254 is link-local", valid(func(n *store.NewEndpoint) { n.URL = "http://１６９.２５４.１６９.２５４/latest" })},
		{"description too long", "description", "at most 1024", valid(func(n *store.NewEndpoint) { n.Description = strings.Repeat("d", 1025) })},
		{"malformed event type", "event_types", `entry 1 "Invoice.Paid" is malformed`, valid(func(n *store.NewEndpoint) { n.EventTypes = []string{"invoice.paid", "Invoice.Paid"} })},
		{"empty event type", "event_types", "entry 0 is empty", valid(func(n *store.NewEndpoint) { n.EventTypes = []string{""} })},
		{"too many event types", "event_types", "at most 256", valid(func(n *store.NewEndpoint) { n.EventTypes = make([]string, 257) })},
		{"negative rate limit", "rate_limit", "above 0", valid(func(n *store.NewEndpoint) { n.RateLimit = -1 })},
		{"NaN rate limit", "rate_limit", "above 0", valid(func(n *store.NewEndpoint) { n.RateLimit = math.NaN() })},
		{"infinite rate limit", "rate_limit", "above 0", valid(func(n *store.NewEndpoint) { n.RateLimit = math.Inf(1) })},
		{"unknown ordering", "ordering", `give "none"`, valid(func(n *store.NewEndpoint) { n.Ordering = "fifo" })},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := b.store.CreateEndpoint(ctx, tt.endpoint)
			requireInvalid(t, err, tt.field, tt.problem)
		})
	}

	_, err := b.store.CreateEndpoint(ctx, valid(func(n *store.NewEndpoint) { n.URL = "http://169.254.169.254/latest" }))
	require.ErrorIs(t, err, ssrf.ErrBlocked, "the policy's error stays reachable")

	page, err := b.store.ListEndpoints(ctx, "acme", store.ListParams[uuid.UUID]{})
	require.NoError(t, err)
	require.Empty(t, page.Items, "nothing was created")
}

// An unknown tenant is ErrNotFound, and inside a transaction it leaves the
// transaction usable.
func TestCreateEndpointUnknownTenant(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)

	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	_, err = b.store.CreateEndpointTx(ctx, tx, store.NewEndpoint{TenantID: "nobody", URL: "https://example.com/"})
	require.ErrorIs(t, err, store.ErrNotFound)
	require.ErrorContains(t, err, `tenant "nobody"`)
	_, err = b.store.CreateTenantTx(ctx, tx, store.NewTenant{ID: "nobody"})
	require.NoError(t, err)
	e, err := b.store.CreateEndpointTx(ctx, tx, store.NewEndpoint{TenantID: "nobody", URL: "https://example.com/"})
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))

	_, err = b.store.RevealSecret(ctx, e.ID)
	require.NoError(t, err, "the endpoint and its secret committed together")
}

func TestUpdateEndpoint(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	b.tenant(t, "acme")
	e, err := b.store.CreateEndpoint(ctx, store.NewEndpoint{
		TenantID: "acme", URL: "https://example.com/a", Description: "first", EventTypes: []string{"invoice.paid"}, RateLimit: 2,
	})
	require.NoError(t, err)

	url, types, rate := "https://example.com/b", []string{"user.created", "user.deleted"}, 10.0
	updated, err := b.store.UpdateEndpoint(ctx, e.ID, store.EndpointUpdate{URL: &url, EventTypes: &types, RateLimit: &rate})
	require.NoError(t, err)
	require.Equal(t, url, updated.URL)
	require.Equal(t, "first", updated.Description, "a nil field is left as it is")
	require.Equal(t, types, updated.EventTypes)
	require.Equal(t, 10.0, updated.RateLimit)
	require.True(t, updated.UpdatedAt.After(e.UpdatedAt) || updated.UpdatedAt.Equal(e.UpdatedAt))

	none, unlimited := []string{}, 0.0
	updated, err = b.store.UpdateEndpoint(ctx, e.ID, store.EndpointUpdate{EventTypes: &none, RateLimit: &unlimited})
	require.NoError(t, err)
	require.Equal(t, []string{}, updated.EventTypes)
	require.Zero(t, updated.RateLimit)
	require.Equal(t, url, updated.URL)

	bad := "gopher://example.com/"
	_, err = b.store.UpdateEndpoint(ctx, e.ID, store.EndpointUpdate{URL: &bad})
	requireInvalid(t, err, "url", `scheme "gopher"`)
	negative := -3.0
	_, err = b.store.UpdateEndpoint(ctx, e.ID, store.EndpointUpdate{RateLimit: &negative})
	requireInvalid(t, err, "rate_limit", "above 0")

	_, err = b.store.UpdateEndpoint(ctx, uuid.Must(uuid.NewV7()), store.EndpointUpdate{})
	require.ErrorIs(t, err, store.ErrNotFound)
}

func TestDisableAndEnableEndpoint(t *testing.T) {
	t.Parallel()
	b, ctx, e := setupEndpoint(t)
	_, err := b.pool.Exec(ctx, "UPDATE herald.endpoints SET failing_since = $2, failing_notified_at = $2 WHERE id = $1", e.ID, t0.Add(-24*time.Hour))
	require.NoError(t, err)

	_, err = b.store.DisableEndpoint(ctx, e.ID, "")
	requireInvalid(t, err, "reason", "is empty")

	disabled, err := b.store.DisableEndpoint(ctx, e.ID, "the endpoint answered 410 Gone")
	require.NoError(t, err)
	require.False(t, disabled.Enabled)
	require.Equal(t, "the endpoint answered 410 Gone", disabled.DisabledReason)
	require.NotNil(t, disabled.DisabledAt)
	require.True(t, t0.Equal(*disabled.DisabledAt), "disabled at the store's clock")

	again, err := b.store.DisableEndpoint(ctx, e.ID, "disabled by its owner")
	require.NoError(t, err)
	require.Equal(t, "the endpoint answered 410 Gone", again.DisabledReason, "the first reason stays")

	enabled, err := b.store.EnableEndpoint(ctx, e.ID)
	require.NoError(t, err)
	require.True(t, enabled.Enabled)
	require.Empty(t, enabled.DisabledReason)
	require.Nil(t, enabled.DisabledAt)
	require.Nil(t, enabled.FailingSince, "enabling starts the health clock afresh")
	var notified *time.Time
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT failing_notified_at FROM herald.endpoints WHERE id = $1", e.ID).Scan(&notified))
	require.Nil(t, notified)

	missing := uuid.Must(uuid.NewV7())
	_, err = b.store.DisableEndpoint(ctx, missing, "gone")
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = b.store.EnableEndpoint(ctx, missing)
	require.ErrorIs(t, err, store.ErrNotFound)
}

// An endpoint being erased (package erasure) is gone for the store at
// once, though its row stays until its history is erased.
func TestDeletedEndpointIsNotFound(t *testing.T) {
	t.Parallel()
	b, ctx, e := setupEndpoint(t)
	kept := b.endpoint(t, ctx, "acme")

	b.eraseEndpoint(t, ctx, "acme", e.ID)
	_, err := b.store.GetEndpoint(ctx, e.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	desc := "changed"
	_, err = b.store.UpdateEndpoint(ctx, e.ID, store.EndpointUpdate{Description: &desc})
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = b.store.EnableEndpoint(ctx, e.ID)
	require.ErrorIs(t, err, store.ErrNotFound, "a deleted endpoint cannot be enabled again")
	_, err = b.store.DisableEndpoint(ctx, e.ID, "again")
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = b.store.RotateSecret(ctx, e.ID, 0)
	require.ErrorIs(t, err, store.ErrNotFound)

	list, err := b.store.ListEndpoints(ctx, "acme", store.ListParams[uuid.UUID]{})
	require.NoError(t, err)
	require.Len(t, list.Items, 1, "the deleted endpoint is not listed")
	require.Equal(t, kept.ID, list.Items[0].ID)
	tenant, err := b.store.GetTenant(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, 1, tenant.EndpointCount, "a deleted endpoint no longer counts towards the cap")
}

func TestListEndpoints(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	b.tenant(t, "acme")
	b.tenant(t, "globex")
	var want []uuid.UUID
	for range 5 {
		want = append(want, b.endpoint(t, ctx, "acme").ID)
	}
	b.endpoint(t, ctx, "globex")

	got := b.pageThrough(t, ctx, "acme", 2)
	require.Equal(t, want, got, "a tenant's endpoints in creation order, only its own")

	empty, err := b.store.ListEndpoints(ctx, "initech", store.ListParams[uuid.UUID]{})
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Empty(t, empty.Items)
	_, err = b.store.ListEndpoints(ctx, "acme", store.ListParams[uuid.UUID]{Limit: 1000})
	requireInvalid(t, err, "limit", "give 1 to 200")
}

// Paging while others create endpoints returns every endpoint that existed
// before paging began exactly once.
func TestListEndpointsStableUnderInserts(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	b.tenant(t, "acme")
	_, err := b.store.UpdateTenant(ctx, "acme", store.TenantUpdate{MaxEndpoints: new(60)})
	require.NoError(t, err)
	existing := map[uuid.UUID]bool{}
	for range 30 {
		existing[b.endpoint(t, ctx, "acme").ID] = true
	}

	var wg sync.WaitGroup
	wg.Go(func() {
		for range 30 {
			_, err := b.store.CreateEndpoint(ctx, store.NewEndpoint{TenantID: "acme", URL: "https://example.com/new"})
			if err != nil {
				t.Error(err)
				return
			}
		}
	})
	seen := b.pageThrough(t, ctx, "acme", 3)
	wg.Wait()

	counts := map[uuid.UUID]int{}
	for _, id := range seen {
		counts[id]++
	}
	for id, n := range counts {
		require.Equal(t, 1, n, "endpoint %s listed %d times", id, n)
	}
	for id := range existing {
		require.Equal(t, 1, counts[id], "endpoint %s that existed before paging was skipped", id)
	}
}

func (b *testBundle) pageThrough(t *testing.T, ctx context.Context, tenantID string, limit int) []uuid.UUID {
	t.Helper()
	var ids []uuid.UUID
	params := store.ListParams[uuid.UUID]{Limit: limit}
	for {
		page, err := b.store.ListEndpoints(ctx, tenantID, params)
		require.NoError(t, err)
		require.LessOrEqual(t, len(page.Items), limit)
		for _, e := range page.Items {
			ids = append(ids, e.ID)
		}
		if !page.More {
			return ids
		}
		params.After = page.Items[len(page.Items)-1].ID
	}
}
