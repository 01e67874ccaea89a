package auth_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/page"
	"github.com/heraldhq/herald/internal/pgtest"
)

type testBundle struct {
	ctx  context.Context
	pool *pgxpool.Pool
}

func setup(t *testing.T) testBundle {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	_, err := pool.Exec(ctx, "INSERT INTO herald.tenants (id) VALUES ('acme'), ('globex')")
	require.NoError(t, err)
	return testBundle{ctx: ctx, pool: pool}
}

func TestAPIKeysAuthenticateWithTheirScope(t *testing.T) {
	t.Parallel()
	b := setup(t)

	op, opKey, err := auth.CreateAPIKey(b.ctx, b.pool, "", "ops")
	require.NoError(t, err)
	require.Empty(t, op.TenantID)
	tk, tenantKey, err := auth.CreateAPIKey(b.ctx, b.pool, "acme", "acme backend")
	require.NoError(t, err)
	require.Equal(t, "acme", tk.TenantID)
	require.Contains(t, tenantKey, tk.Prefix, "the prefix is the start of the key")

	p, err := auth.Authenticate(b.ctx, b.pool, opKey)
	require.NoError(t, err)
	require.True(t, p.Operator())
	require.True(t, p.CanAccess("globex"))

	p, err = auth.Authenticate(b.ctx, b.pool, tenantKey)
	require.NoError(t, err)
	require.Equal(t, auth.Principal{Kind: auth.KindAPIKey, ID: tk.ID, TenantID: "acme"}, p)
	require.False(t, p.Operator())
	require.True(t, p.CanAccess("acme"))
	require.False(t, p.CanAccess("globex"))

	var stored int
	require.NoError(t, b.pool.QueryRow(b.ctx, "SELECT count(*) FROM herald.api_keys WHERE key_hash::text LIKE '%' || $1 || '%'", tenantKey).Scan(&stored))
	require.Zero(t, stored, "the key itself is never stored")

	_, err = auth.RevokeAPIKey(b.ctx, b.pool, "globex", tk.ID)
	require.ErrorIs(t, err, auth.ErrKeyNotFound, "a key of another tenant cannot be revoked")
	_, err = auth.RevokeAPIKey(b.ctx, b.pool, "acme", tk.ID)
	require.NoError(t, err)
	_, err = auth.Authenticate(b.ctx, b.pool, tenantKey)
	require.ErrorIs(t, err, auth.ErrUnauthenticated)

	for _, bad := range []string{"", "hk_nope", "whsec_abc", opKey + "x"} {
		_, err = auth.Authenticate(b.ctx, b.pool, bad)
		require.ErrorIs(t, err, auth.ErrUnauthenticated, "token %q", bad)
	}

	_, _, err = auth.CreateAPIKey(b.ctx, b.pool, "nobody", "")
	require.ErrorIs(t, err, auth.ErrTenantNotFound)
}

func TestEnsureAPIKeyIsIdempotent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	key := "hk_development_key_0123456789abcdefghijklmnop"
	require.NoError(t, auth.EnsureAPIKey(b.ctx, b.pool, key, "dev"))
	require.NoError(t, auth.EnsureAPIKey(b.ctx, b.pool, key, "dev"))
	p, err := auth.Authenticate(b.ctx, b.pool, key)
	require.NoError(t, err)
	require.True(t, p.Operator())
	require.ErrorIs(t, auth.EnsureAPIKey(b.ctx, b.pool, "short", "dev"), auth.ErrMalformedKey)

	keys, err := auth.ListAPIKeys(b.ctx, b.pool, "", page.Request{})
	require.NoError(t, err)
	require.Len(t, keys.Items, 1)
}

func TestListAPIKeysPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for range 5 {
		_, _, err := auth.CreateAPIKey(b.ctx, b.pool, "acme", "")
		require.NoError(t, err)
	}
	var seen []string
	req := page.Request{Limit: 2}
	for {
		p, err := auth.ListAPIKeys(b.ctx, b.pool, "acme", req)
		require.NoError(t, err)
		for _, k := range p.Items {
			seen = append(seen, k.ID.String())
		}
		if p.Next == nil {
			break
		}
		req.After = p.Next
	}
	require.Len(t, seen, 5)
}

func TestPortalLinkWorksOnceAndOpensATenantSession(t *testing.T) {
	t.Parallel()
	b := setup(t)

	link, err := auth.MintPortalLink(b.ctx, b.pool, "acme", 0)
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(auth.DefaultLinkTTL), link.ExpiresAt, time.Minute)

	for range 2 {
		looked, err := auth.LookUpPortalLink(b.ctx, b.pool, link.Token)
		require.NoError(t, err, "looking does not spend the link")
		require.Equal(t, "acme", looked.TenantID)
		require.Empty(t, looked.Token)
	}
	s, err := auth.RedeemPortalLink(b.ctx, b.pool, link.Token, 0)
	require.NoError(t, err)
	require.Equal(t, "acme", s.TenantID)

	_, err = auth.RedeemPortalLink(b.ctx, b.pool, link.Token, 0)
	require.ErrorIs(t, err, auth.ErrLinkUsed)
	_, err = auth.LookUpPortalLink(b.ctx, b.pool, link.Token)
	require.ErrorIs(t, err, auth.ErrLinkUsed)
	_, err = auth.RedeemPortalLink(b.ctx, b.pool, "hpl_unknown", 0)
	require.ErrorIs(t, err, auth.ErrLinkUnknown)
	_, err = auth.LookUpPortalLink(b.ctx, b.pool, "hpl_unknown")
	require.ErrorIs(t, err, auth.ErrLinkUnknown)

	p, err := auth.Authenticate(b.ctx, b.pool, s.Token)
	require.NoError(t, err)
	require.Equal(t, auth.Principal{Kind: auth.KindPortalSession, ID: s.ID, TenantID: "acme"}, p)

	require.NoError(t, auth.EndPortalSession(b.ctx, b.pool, s.Token))
	_, err = auth.PortalSession(b.ctx, b.pool, s.Token)
	require.ErrorIs(t, err, auth.ErrUnauthenticated)
}

func TestPortalLinkExpires(t *testing.T) {
	t.Parallel()
	b := setup(t)
	link, err := auth.MintPortalLink(b.ctx, b.pool, "acme", time.Minute)
	require.NoError(t, err)
	_, err = b.pool.Exec(b.ctx, "UPDATE herald.portal_links SET expires_at = now() - interval '1 second'")
	require.NoError(t, err)
	_, err = auth.RedeemPortalLink(b.ctx, b.pool, link.Token, 0)
	require.ErrorIs(t, err, auth.ErrLinkExpired)
	_, err = auth.LookUpPortalLink(b.ctx, b.pool, link.Token)
	require.ErrorIs(t, err, auth.ErrLinkExpired)

	_, err = auth.MintPortalLink(b.ctx, b.pool, "nobody", 0)
	require.ErrorIs(t, err, auth.ErrTenantNotFound)
	_, err = auth.MintPortalLink(b.ctx, b.pool, "acme", 48*time.Hour)
	require.Error(t, err)
}

func TestRevokingAKeyRevokesWhatItMadeInOneTransaction(t *testing.T) {
	t.Parallel()
	b := setup(t)
	parent, parentKey, err := auth.CreateAPIKey(b.ctx, b.pool, "acme", "parent")
	require.NoError(t, err)
	asParent, err := auth.Authenticate(b.ctx, b.pool, parentKey)
	require.NoError(t, err)
	_, childKey, err := auth.CreateAPIKeyBy(b.ctx, b.pool, asParent, "acme", "child")
	require.NoError(t, err)
	asChild, err := auth.Authenticate(b.ctx, b.pool, childKey)
	require.NoError(t, err)
	opened, err := auth.MintPortalLinkBy(b.ctx, b.pool, asChild, "acme", 0)
	require.NoError(t, err)
	session, err := auth.RedeemPortalLink(b.ctx, b.pool, opened.Token, 0)
	require.NoError(t, err)
	unopened, err := auth.MintPortalLinkBy(b.ctx, b.pool, asParent, "acme", 0)
	require.NoError(t, err)
	usable := func() []bool {
		_, errChild := auth.Authenticate(b.ctx, b.pool, childKey)
		_, errSession := auth.Authenticate(b.ctx, b.pool, session.Token)
		_, errLink := auth.LookUpPortalLink(b.ctx, b.pool, unopened.Token)
		return []bool{errChild == nil, errSession == nil, errLink == nil}
	}

	tx, err := b.pool.Begin(b.ctx)
	require.NoError(t, err)
	_, err = auth.RevokeAPIKey(b.ctx, tx, "acme", parent.ID)
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(b.ctx))
	require.Equal(t, []bool{true, true, true}, usable(), "a rolled back revocation revokes nothing")

	revoked, err := auth.RevokeAPIKey(b.ctx, b.pool, "acme", parent.ID)
	require.NoError(t, err)
	require.NotNil(t, revoked.RevokedAt)
	require.Equal(t, []bool{false, false, false}, usable(), "child key, its link's session and the parent's unopened link")
	_, err = auth.RevokeAPIKey(b.ctx, b.pool, "acme", parent.ID)
	require.NoError(t, err, "revoking twice is fine")

	var sessions int
	require.NoError(t, b.pool.QueryRow(b.ctx, "SELECT count(*) FROM herald.portal_sessions").Scan(&sessions))
	require.Zero(t, sessions, "the session is deleted, not just refused")
}
