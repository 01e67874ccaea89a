package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/endpointauth"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/internal/webhooktest"
	"github.com/heraldhq/herald/store"
)

// Credentials are sealed at rest: no secret is in the row, a sealed value
// copied to another endpoint does not open, and every change grows the
// revision the dispatcher caches by.
func TestCredentialsAreSealedAndRevisioned(t *testing.T) {
	t.Parallel()
	b, ctx, e := setupEndpoint(t)
	other := b.endpoint(t, ctx, "acme")
	ca := webhooktest.NewCA(t)
	certPEM, keyPEM := ca.IssueClient(t, "herald", time.Now().Add(time.Hour))

	none, err := b.store.Credentials(ctx, e.ID)
	require.NoError(t, err)
	require.Equal(t, endpointauth.Credentials{}, none, "an endpoint without credentials has revision 0")

	auth := &endpointauth.Authentication{Type: endpointauth.Basic, Username: "herald", Password: "pa55word"}
	tlsConfig := &endpointauth.TLS{ClientCertificate: certPEM, ClientKey: keyPEM}
	require.NoError(t, b.store.SetCredentials(ctx, e.ID, store.CredentialsChange{Authentication: &auth, TLS: &tlsConfig}))
	got, err := b.store.Credentials(ctx, e.ID)
	require.NoError(t, err)
	require.Equal(t, int64(1), got.Revision)
	require.Equal(t, auth, got.Authentication)
	require.Equal(t, tlsConfig, got.TLS)

	var row string
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT c::text FROM herald.endpoint_credentials c WHERE endpoint_id = $1", e.ID).Scan(&row))
	require.NotContains(t, row, "pa55word")
	require.NotContains(t, row, "PRIVATE KEY")
	require.Contains(t, row, "herald", "the public part is stored in the clear")

	_, err = b.pool.Exec(ctx, `INSERT INTO herald.endpoint_credentials (endpoint_id, auth_type, auth_public, auth_sealed)
SELECT $2, auth_type, auth_public, auth_sealed FROM herald.endpoint_credentials WHERE endpoint_id = $1`, e.ID, other.ID)
	require.NoError(t, err)
	_, err = b.store.Credentials(ctx, other.ID)
	require.ErrorIs(t, err, secretbox.ErrCorrupt, "a sealed value moved to another endpoint does not open")
	require.NotContains(t, err.Error(), "pa55word")

	same := &endpointauth.Authentication{Type: endpointauth.Basic, Username: "herald"}
	require.NoError(t, b.store.SetCredentials(ctx, e.ID, store.CredentialsChange{Authentication: &same}))
	got, err = b.store.Credentials(ctx, e.ID)
	require.NoError(t, err)
	require.Equal(t, int64(1), got.Revision, "setting what is already set (the password kept) changes nothing")

	var removed *endpointauth.Authentication
	require.NoError(t, b.store.SetCredentials(ctx, e.ID, store.CredentialsChange{Authentication: &removed}))
	got, err = b.store.Credentials(ctx, e.ID)
	require.NoError(t, err)
	require.Equal(t, int64(2), got.Revision, "a removal is a change too")
	require.Nil(t, got.Authentication)
	require.Equal(t, tlsConfig, got.TLS, "the TLS settings were not part of the change")
}
