package store_test

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/signing"
	"github.com/heraldhq/herald/store"
)

func secretStrings(secrets []signing.Secret) []string {
	out := make([]string, len(secrets))
	for i, s := range secrets {
		out[i] = s.String()
	}
	return out
}

func TestRotateSecret(t *testing.T) {
	t.Parallel()
	b, ctx, e := setupEndpoint(t)

	old, err := b.store.RevealSecret(ctx, e.ID)
	require.NoError(t, err)
	active, err := b.store.ActiveSecrets(ctx, e.ID, t0)
	require.NoError(t, err)
	require.Equal(t, []string{old.String()}, secretStrings(active))

	fresh, err := b.store.RotateSecret(ctx, e.ID, 0)
	require.NoError(t, err)
	require.NotEqual(t, old.String(), fresh.String())
	require.Equal(t, signing.HMACSHA256, fresh.Algorithm())

	revealed, err := b.store.RevealSecret(ctx, e.ID)
	require.NoError(t, err)
	require.Equal(t, fresh.String(), revealed.String(), "the new secret is current at once")

	during, err := b.store.ActiveSecrets(ctx, e.ID, t0.Add(store.DefaultRotationGrace-time.Second))
	require.NoError(t, err)
	require.Equal(t, []string{fresh.String(), old.String()}, secretStrings(during), "both sign during the grace period, newest first")
	after, err := b.store.ActiveSecrets(ctx, e.ID, t0.Add(store.DefaultRotationGrace))
	require.NoError(t, err)
	require.Equal(t, []string{fresh.String()}, secretStrings(after), "the old secret stops at the end of the grace period")
}

// During a rotation every attempt carries both signatures, so a receiver
// holding only the old or only the new secret verifies.
func TestRotationSignaturesVerifyWithEitherSecret(t *testing.T) {
	t.Parallel()
	b, ctx, e := setupEndpoint(t)
	old, err := b.store.RevealSecret(ctx, e.ID)
	require.NoError(t, err)
	fresh, err := b.store.RotateSecret(ctx, e.ID, time.Hour)
	require.NoError(t, err)

	now := t0.Add(30 * time.Minute)
	active, err := b.store.ActiveSecrets(ctx, e.ID, now)
	require.NoError(t, err)
	body := []byte(`{"type":"invoice.paid"}`)
	signature, err := signing.Sign("msg_1", now, body, active...)
	require.NoError(t, err)
	for _, held := range []signing.Secret{old, fresh} {
		v := signing.Verifier{Secrets: []signing.Secret{held}, Now: func() time.Time { return now }}
		require.NoError(t, v.VerifyValues("msg_1", fmt.Sprint(now.Unix()), signature, body))
	}
}

func TestRotateSecretGrace(t *testing.T) {
	t.Parallel()
	b, ctx, e := setupEndpoint(t)

	for _, grace := range []time.Duration{-time.Second, store.MaxRotationGrace + time.Second} {
		_, err := b.store.RotateSecret(ctx, e.ID, grace)
		requireInvalid(t, err, "grace", "at most 168h0m0s (7 days)")
	}
	first, err := b.store.RevealSecret(ctx, e.ID)
	require.NoError(t, err)

	second, err := b.store.RotateSecret(ctx, e.ID, store.MaxRotationGrace)
	require.NoError(t, err)
	third, err := b.store.RotateSecret(ctx, e.ID, time.Hour)
	require.NoError(t, err)
	active, err := b.store.ActiveSecrets(ctx, e.ID, t0.Add(2*time.Hour))
	require.NoError(t, err)
	require.Equal(t, []string{third.String()}, secretStrings(active),
		"a second rotation shortens the first secret's grace too")
	require.NotContains(t, secretStrings(active), first.String())
	require.NotContains(t, secretStrings(active), second.String())

	_, err = b.store.RotateSecret(ctx, uuid.Must(uuid.NewV7()), 0)
	require.ErrorIs(t, err, store.ErrNotFound)
}

func TestRotateSecretDeletesExpiredSecrets(t *testing.T) {
	t.Parallel()
	b, ctx, e := setupEndpoint(t)
	_, err := b.store.RotateSecret(ctx, e.ID, time.Hour)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, "UPDATE herald.endpoint_secrets SET expires_at = $2 WHERE endpoint_id = $1 AND expires_at IS NOT NULL",
		e.ID, t0.Add(-time.Minute))
	require.NoError(t, err)

	_, err = b.store.RotateSecret(ctx, e.ID, time.Hour)
	require.NoError(t, err)
	var stored int
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM herald.endpoint_secrets WHERE endpoint_id = $1", e.ID).Scan(&stored))
	require.Equal(t, 2, stored, "the secret whose grace ended is gone; the current and the retiring one remain")
}

func TestRotateSecretKeepsAlgorithm(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	b.tenant(t, "acme")
	ed, err := signing.GenerateEd25519Secret()
	require.NoError(t, err)
	e, err := b.store.CreateEndpoint(ctx, store.NewEndpoint{TenantID: "acme", URL: "https://example.com/", Secret: ed})
	require.NoError(t, err)

	fresh, err := b.store.RotateSecret(ctx, e.ID, 0)
	require.NoError(t, err)
	require.Equal(t, signing.Ed25519, fresh.Algorithm())
	require.True(t, strings.HasPrefix(fresh.String(), signing.Ed25519PrivateKeyPrefix))
}

func TestRotateSecretTxRollsBack(t *testing.T) {
	t.Parallel()
	b, ctx, e := setupEndpoint(t)
	before, err := b.store.RevealSecret(ctx, e.ID)
	require.NoError(t, err)

	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	_, err = b.store.RotateSecretTx(ctx, tx, e.ID, 0)
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(ctx))

	active, err := b.store.ActiveSecrets(ctx, e.ID, t0.Add(time.Hour))
	require.NoError(t, err)
	require.Equal(t, []string{before.String()}, secretStrings(active))
}

// A dump of the database does not reveal a secret: neither its whsec_ form
// nor its key bytes in any common encoding.
func TestSecretsAreEncryptedAtRest(t *testing.T) {
	t.Parallel()
	b, ctx, e := setupEndpoint(t)
	_, err := b.store.RotateSecret(ctx, e.ID, 0)
	require.NoError(t, err)
	secrets, err := b.store.ActiveSecrets(ctx, e.ID, t0)
	require.NoError(t, err)
	require.Len(t, secrets, 2)

	var dump string
	err = b.pool.QueryRow(ctx, `SELECT string_agg(s::text || ' ' || encode(s.ciphertext, 'escape') || ' ' || encode(s.ciphertext, 'base64'), E'\n')
		FROM herald.endpoint_secrets s`).Scan(&dump)
	require.NoError(t, err)
	var endpointsDump string
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT string_agg(e::text, E'\\n') FROM herald.endpoints e").Scan(&endpointsDump))
	dump += endpointsDump

	for _, secret := range secrets {
		text := secret.String()
		key := strings.TrimPrefix(text, signing.HMACSecretPrefix)
		raw, err := base64.StdEncoding.DecodeString(key)
		require.NoError(t, err)
		require.NotContains(t, dump, key, "the secret's base64 is in the dump")
		require.NotContains(t, dump, fmt.Sprintf("%x", raw), "the secret's key bytes are in the dump")
	}

	listed, err := b.store.ListEndpoints(ctx, "acme", store.ListParams[uuid.UUID]{})
	require.NoError(t, err)
	printed := fmt.Sprintf("%+v %#v", listed, listed)
	for _, secret := range secrets {
		require.NotContains(t, printed, strings.TrimPrefix(secret.String(), signing.HMACSecretPrefix), "an endpoint never carries its secret")
	}
}

// A store started with another operator key says so instead of signing
// with garbage.
func TestSecretsUnderAnotherKey(t *testing.T) {
	t.Parallel()
	b, ctx, e := setupEndpoint(t)
	secret, err := b.store.RevealSecret(ctx, e.ID)
	require.NoError(t, err)

	otherBox, err := secretbox.Parse(secretbox.Generate())
	require.NoError(t, err)
	other, err := store.New(b.pool, store.Config{Box: otherBox})
	require.NoError(t, err)
	_, err = other.ActiveSecrets(ctx, e.ID, t0)
	require.ErrorIs(t, err, secretbox.ErrWrongKey)
	require.ErrorContains(t, err, secretbox.EnvKey)
	require.ErrorContains(t, err, b.box.KeyID())
	_, err = other.RevealSecret(ctx, e.ID)
	require.ErrorIs(t, err, secretbox.ErrWrongKey)
	require.NotContains(t, err.Error(), strings.TrimPrefix(secret.String(), signing.HMACSecretPrefix))
}

// A ciphertext copied to another endpoint's row does not open there.
func TestSecretIsBoundToItsEndpoint(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)
	b.tenant(t, "acme")
	victim := b.endpoint(t, ctx, "acme")
	attacker := b.endpoint(t, ctx, "acme")

	_, err := b.pool.Exec(ctx, `UPDATE herald.endpoint_secrets SET ciphertext = (
		SELECT ciphertext FROM herald.endpoint_secrets WHERE endpoint_id = $1) WHERE endpoint_id = $2`, victim.ID, attacker.ID)
	require.NoError(t, err)
	_, err = b.store.RevealSecret(ctx, attacker.ID)
	require.ErrorIs(t, err, secretbox.ErrCorrupt)
}

func TestSecretsOfMissingEndpoint(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t)

	missing := uuid.Must(uuid.NewV7())
	_, err := b.store.ActiveSecrets(ctx, missing, t0)
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = b.store.RevealSecret(ctx, missing)
	require.ErrorIs(t, err, store.ErrNotFound)
}
