package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/auth"
)

type createdKey struct {
	ID  string `json:"id"`
	Key string `json:"key"`
}

func (b *testBundle) createKey(t *testing.T, key, path string) createdKey {
	t.Helper()
	resp := b.do(t, key, "POST", path, map[string]string{"name": "child"})
	require.Equal(t, http.StatusCreated, resp.Status, "%s", resp.Body)
	var k createdKey
	resp.Decode(t, &k)
	return k
}

// mintLink mints a portal link with key and returns its token.
func (b *testBundle) mintLink(t *testing.T, key, tenant string) string {
	t.Helper()
	resp := b.do(t, key, "POST", "/v1/tenants/"+tenant+"/portal-links", nil)
	require.Equal(t, http.StatusCreated, resp.Status, "%s", resp.Body)
	_, token, ok := strings.Cut(resp.JSON(t)["url"].(string), "token=")
	require.True(t, ok)
	return token
}

// Revoking a key revokes what it made, and what that made: keys, portal
// links not yet opened, and portal sessions opened with its links. Other
// keys' credentials keep working.
func TestRevokingAKeyRevokesWhatItCreated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	child := b.createKey(t, b.acme, "/v1/tenants/acme/api-keys")
	grandchild := b.createKey(t, child.Key, "/v1/tenants/acme/api-keys")
	sibling := b.createKey(t, b.acme, "/v1/tenants/acme/api-keys")
	session, err := auth.RedeemPortalLink(b.ctx, b.pool, b.mintLink(t, child.Key, "acme"), 0)
	require.NoError(t, err)
	grandchildSession, err := auth.RedeemPortalLink(b.ctx, b.pool, b.mintLink(t, grandchild.Key, "acme"), 0)
	require.NoError(t, err)
	unopened := b.mintLink(t, child.Key, "acme")
	siblingSession, err := auth.RedeemPortalLink(b.ctx, b.pool, b.mintLink(t, sibling.Key, "acme"), 0)
	require.NoError(t, err)

	operatorChild := b.createKey(t, b.operator, "/v1/api-keys")
	tenantKeyOfOperatorChild := b.createKey(t, operatorChild.Key, "/v1/tenants/globex/api-keys")

	require.Equal(t, http.StatusOK, b.do(t, b.acme, "DELETE", "/v1/tenants/acme/api-keys/"+child.ID, nil).Status)
	for what, token := range map[string]string{
		"the key":                        child.Key,
		"a key it created":               grandchild.Key,
		"a session opened with its link": session.Token,
		"a session of a key it created":  grandchildSession.Token,
	} {
		require.Equal(t, http.StatusUnauthorized, b.do(t, token, "GET", "/v1/tenants/acme/endpoints", nil).Status, "%s still works", what)
	}
	_, err = auth.RedeemPortalLink(b.ctx, b.pool, unopened, 0)
	require.Error(t, err, "a link it minted no longer opens")
	for what, token := range map[string]string{"the revoking key": b.acme, "a sibling key": sibling.Key, "the sibling's session": siblingSession.Token} {
		require.Equal(t, http.StatusOK, b.do(t, token, "GET", "/v1/tenants/acme/endpoints", nil).Status, what)
	}

	require.Equal(t, http.StatusOK, b.do(t, b.operator, "DELETE", "/v1/api-keys/"+operatorChild.ID, nil).Status)
	b.do(t, tenantKeyOfOperatorChild.Key, "GET", "/v1/tenants/globex/endpoints", nil).Problem(t, http.StatusUnauthorized)
	require.Equal(t, http.StatusOK, b.do(t, b.operator, "GET", "/v1/tenants", nil).Status)
}
