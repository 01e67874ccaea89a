package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/signing"
)

// DefaultRotationGrace is how long the previous secret keeps signing after
// RotateSecret when no grace is given: 24 hours.
const DefaultRotationGrace = 24 * time.Hour

// MaxRotationGrace is the longest grace RotateSecret accepts: 7 days.
const MaxRotationGrace = 7 * 24 * time.Hour

// Values of herald.endpoint_secrets.algorithm.
const (
	algorithmHMAC    = "hmac-sha256"
	algorithmEd25519 = "ed25519"
)

func algorithmColumn(secret signing.Secret) (string, error) {
	if !secret.CanSign() {
		return "", invalid("secret", "cannot sign; give a whsec_ secret or a whsk_ ed25519 private key (a whpk_ public key only verifies)")
	}
	if secret.Algorithm() == signing.Ed25519 {
		return algorithmEd25519, nil
	}
	return algorithmHMAC, nil
}

// secretAAD binds a sealed secret to its endpoint: copied to another
// endpoint's row, it does not open.
func secretAAD(endpointID uuid.UUID) []byte {
	return append([]byte("herald endpoint secret\x00"), endpointID[:]...)
}

func (s *Store) sealSecret(endpointID uuid.UUID, secret signing.Secret) []byte {
	return s.box.Seal([]byte(secret.String()), secretAAD(endpointID))
}

// openSecret decrypts a stored secret. Its errors never contain the secret.
func (s *Store) openSecret(endpointID uuid.UUID, sealed []byte) (signing.Secret, error) {
	plaintext, err := s.box.Open(sealed, secretAAD(endpointID))
	if err != nil {
		return signing.Secret{}, fmt.Errorf("decrypt secret of endpoint %s: %w", endpointID, err)
	}
	secret, err := signing.ParseSecret(string(plaintext))
	if err != nil {
		return signing.Secret{}, fmt.Errorf("stored secret of endpoint %s: %w", endpointID, err)
	}
	return secret, nil
}

// ActiveSecrets returns the secrets an endpoint signs with at now, newest
// first: the current one, and during a rotation's grace period the
// previous ones too. The delivery worker calls it for every attempt. It
// deletes the endpoint's secrets whose grace period has ended by the
// store's clock.
func (s *Store) ActiveSecrets(ctx context.Context, endpointID uuid.UUID, now time.Time) ([]signing.Secret, error) {
	rows, err := s.pool.Query(ctx, selectActiveSecrets, endpointID, now, s.now())
	if err != nil {
		return nil, fmt.Errorf("active secrets of endpoint %s: %w", endpointID, err)
	}
	sealed, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return nil, fmt.Errorf("active secrets of endpoint %s: %w", endpointID, err)
	}
	if len(sealed) == 0 {
		return nil, fmt.Errorf("active secrets of endpoint %s: %w", endpointID, ErrNotFound)
	}
	secrets := make([]signing.Secret, len(sealed))
	for i, value := range sealed {
		if secrets[i], err = s.openSecret(endpointID, value); err != nil {
			return nil, err
		}
	}
	return secrets, nil
}

// RevealSecret returns an endpoint's current secret (the newest one, which
// has no expiry). It is signing material: what an owner configures their
// receiver with is its ReceiverKey, which the API and the portal show.
func (s *Store) RevealSecret(ctx context.Context, endpointID uuid.UUID) (signing.Secret, error) {
	var sealed []byte
	err := s.pool.QueryRow(ctx, selectCurrentSecret, endpointID).Scan(&sealed)
	if errors.Is(err, pgx.ErrNoRows) {
		return signing.Secret{}, fmt.Errorf("secret of endpoint %s: %w", endpointID, ErrNotFound)
	}
	if err != nil {
		return signing.Secret{}, fmt.Errorf("secret of endpoint %s: %w", endpointID, err)
	}
	return s.openSecret(endpointID, sealed)
}

// RotateSecret gives an endpoint a new secret, of the same algorithm as its
// current one, and returns it. The new secret signs at once; the previous
// ones keep signing too until grace has passed (the store's clock), so
// receivers can switch without rejecting a delivery. Secrets whose grace
// already ended are deleted.
//
// grace defaults to DefaultRotationGrace (24 h) and may be at most
// MaxRotationGrace (7 days). Zero means the default.
func (s *Store) RotateSecret(ctx context.Context, endpointID uuid.UUID, grace time.Duration) (signing.Secret, error) {
	var secret signing.Secret
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		secret, err = s.RotateSecretTx(ctx, tx, endpointID, grace)
		return err
	})
	return secret, err
}

// RotateSecretTx is RotateSecret in the caller's transaction.
func (s *Store) RotateSecretTx(ctx context.Context, tx pgx.Tx, endpointID uuid.UUID, grace time.Duration) (signing.Secret, error) {
	fail := func(err error) (signing.Secret, error) {
		return signing.Secret{}, fmt.Errorf("rotate secret of endpoint %s: %w", endpointID, err)
	}
	switch {
	case grace == 0:
		grace = DefaultRotationGrace
	case grace < 0 || grace > MaxRotationGrace:
		return fail(invalid("grace", "is %v; give a positive period of at most %v (7 days), or 0 for the default of %v", grace, MaxRotationGrace, DefaultRotationGrace))
	}
	var algorithm string
	err := tx.QueryRow(ctx, lockEndpointForRotation, endpointID).Scan(&algorithm)
	if errors.Is(err, pgx.ErrNoRows) {
		return fail(ErrNotFound)
	}
	if err != nil {
		return fail(err)
	}
	generate := signing.GenerateHMACSecret
	if algorithm == algorithmEd25519 {
		generate = signing.GenerateEd25519Secret
	}
	secret, err := generate()
	if err != nil {
		return fail(err)
	}
	now := s.now()
	_, err = tx.Exec(ctx, rotateSecret, endpointID, now, now.Add(grace), uuid.Must(uuid.NewV7()), algorithm, s.sealSecret(endpointID, secret))
	if err != nil {
		return fail(err)
	}
	return secret, nil
}
