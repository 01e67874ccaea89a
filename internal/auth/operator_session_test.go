package auth_test

import (
	"crypto/sha256"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/auth"
)

// An operator session is opened with an operator key only, stores only its
// token's hash, and ends when it expires, when it is ended, or when its
// key, or the key that made its key, is revoked.
func TestOperatorSessionLivesWithItsKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ops, opsKey, err := auth.CreateAPIKey(b.ctx, b.pool, "", "ops")
	require.NoError(t, err)
	opsPrincipal, err := auth.Authenticate(b.ctx, b.pool, opsKey)
	require.NoError(t, err)
	_, tenantKey, err := auth.CreateAPIKey(b.ctx, b.pool, "acme", "acme")
	require.NoError(t, err)
	tenantPrincipal, err := auth.Authenticate(b.ctx, b.pool, tenantKey)
	require.NoError(t, err)

	_, err = auth.OpenOperatorSession(b.ctx, b.pool, tenantPrincipal, 0)
	require.ErrorIs(t, err, auth.ErrUnauthenticated, "a tenant's key opens no operator session")

	s, err := auth.OpenOperatorSession(b.ctx, b.pool, opsPrincipal, 0)
	require.NoError(t, err)
	require.NotContains(t, s.Token, opsKey)
	require.WithinDuration(t, time.Now().Add(auth.DefaultOperatorSessionTTL), s.ExpiresAt, time.Minute)
	sum := sha256.Sum256([]byte(s.Token))
	var stored int
	require.NoError(t, b.pool.QueryRow(b.ctx, "SELECT count(*) FROM herald.operator_sessions WHERE token_hash = $1 AND api_key_id = $2", sum[:], ops.ID).Scan(&stored))
	require.Equal(t, 1, stored, "the token's hash is stored, with its key")
	p, err := auth.AuthenticateOperatorSession(b.ctx, b.pool, s.Token)
	require.NoError(t, err)
	require.Equal(t, auth.KindOperatorSession, p.Kind)
	require.True(t, p.Operator())
	_, err = auth.AuthenticateOperatorSession(b.ctx, b.pool, opsKey)
	require.ErrorIs(t, err, auth.ErrUnauthenticated, "the key itself is no session")

	require.NoError(t, auth.EndOperatorSession(b.ctx, b.pool, s.Token))
	_, err = auth.AuthenticateOperatorSession(b.ctx, b.pool, s.Token)
	require.ErrorIs(t, err, auth.ErrUnauthenticated, "an ended session")

	s, err = auth.OpenOperatorSession(b.ctx, b.pool, opsPrincipal, 0)
	require.NoError(t, err)
	_, err = b.pool.Exec(b.ctx, "UPDATE herald.operator_sessions SET expires_at = now() - interval '1 second'")
	require.NoError(t, err)
	_, err = auth.AuthenticateOperatorSession(b.ctx, b.pool, s.Token)
	require.ErrorIs(t, err, auth.ErrUnauthenticated, "an expired session")
	_, err = auth.OpenOperatorSession(b.ctx, b.pool, opsPrincipal, 0)
	require.NoError(t, err)
	require.NoError(t, b.pool.QueryRow(b.ctx, "SELECT count(*) FROM herald.operator_sessions WHERE expires_at < now()").Scan(&stored))
	require.Zero(t, stored, "signing in prunes expired sessions")

	// A key made by ops signs in; revoking ops ends that session too.
	_, madeKey, err := auth.CreateAPIKeyBy(b.ctx, b.pool, opsPrincipal, "", "made by ops")
	require.NoError(t, err)
	made, err := auth.Authenticate(b.ctx, b.pool, madeKey)
	require.NoError(t, err)
	s, err = auth.OpenOperatorSession(b.ctx, b.pool, made, time.Hour)
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(time.Hour), s.ExpiresAt, time.Minute)
	_, err = auth.RevokeAPIKey(b.ctx, b.pool, "", ops.ID)
	require.NoError(t, err)
	_, err = auth.AuthenticateOperatorSession(b.ctx, b.pool, s.Token)
	require.ErrorIs(t, err, auth.ErrUnauthenticated, "revoking the maker of its key ends the session")
	require.NoError(t, b.pool.QueryRow(b.ctx, "SELECT count(*) FROM herald.operator_sessions").Scan(&stored))
	require.Zero(t, stored, "the revocation deleted the sessions of every key it revoked")
}
