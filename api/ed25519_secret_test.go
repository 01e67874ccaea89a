package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/signing"
)

// An ed25519 endpoint's private key signs inside Herald and never leaves it
// through the API: reveal and rotate show the whpk_ public key to operator
// keys, tenant keys and portal sessions alike.
func TestEd25519EndpointsRevealOnlyThePublicKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	private, err := signing.GenerateEd25519Secret()
	require.NoError(t, err)
	public, err := private.Public()
	require.NoError(t, err)
	e := b.createEndpoint(t, b.acme, "acme", map[string]any{"url": "https://example.com/hook", "secret": private.String()})
	path := "/v1/tenants/acme/endpoints/" + e.ID + "/secret"

	link, err := auth.MintPortalLink(b.ctx, b.pool, "acme", 0)
	require.NoError(t, err)
	session, err := auth.RedeemPortalLink(b.ctx, b.pool, link.Token, 0)
	require.NoError(t, err)
	callers := map[string]string{"operator key": b.operator, "tenant key": b.acme, "portal session": session.Token}

	for who, key := range callers {
		resp := b.do(t, key, "GET", path, nil)
		require.Equal(t, http.StatusOK, resp.Status, "%s: %s", who, resp.Body)
		require.NotContains(t, string(resp.Body), signing.Ed25519PrivateKeyPrefix, "%s reads the private key", who)
		require.Equal(t, public.String(), resp.JSON(t)["secret"], "%s gets the public key", who)
	}

	for who, key := range callers {
		resp := b.do(t, key, "POST", path+"/rotate", map[string]int{"grace_seconds": 60})
		require.Equal(t, http.StatusOK, resp.Status, "%s: %s", who, resp.Body)
		require.NotContains(t, string(resp.Body), signing.Ed25519PrivateKeyPrefix, "rotate by %s returns the private key", who)
		rotated := resp.JSON(t)["secret"].(string)
		require.True(t, strings.HasPrefix(rotated, signing.Ed25519PublicKeyPrefix), "rotate by %s returns %q", who, rotated)
		require.NotEqual(t, public.String(), rotated, "a new key pair")
		require.Equal(t, rotated, b.do(t, key, "GET", path, nil).JSON(t)["secret"], "reveal shows the rotated public key")
	}

	var algorithm string
	require.NoError(t, b.pool.QueryRow(b.ctx,
		`SELECT algorithm FROM herald.endpoint_secrets WHERE endpoint_id = $1 AND expires_at IS NULL`, e.ID).Scan(&algorithm))
	require.Equal(t, "ed25519", algorithm, "the endpoint still signs with ed25519")
}
