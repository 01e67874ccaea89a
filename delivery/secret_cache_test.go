package delivery

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/signing"
)

// countingSecrets hands out a fresh secret per read and counts the reads.
type countingSecrets struct{ reads int }

func (c *countingSecrets) ActiveSecrets(context.Context, uuid.UUID, time.Time) ([]signing.Secret, error) {
	c.reads++
	s, err := signing.GenerateHMACSecret()
	return []signing.Secret{s}, err
}

func TestSecretCacheReadsAgainWhenTheSecretsChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	source := &countingSecrets{}
	cache := newSecretCache(source)
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	d := loaded{endpointID: uuid.New(), secrets: "a"}

	first, err := cache.secretsFor(ctx, d, t0)
	require.NoError(t, err)
	again, err := cache.secretsFor(ctx, d, t0.Add(time.Hour))
	require.NoError(t, err)
	require.Equal(t, first, again, "unchanged secrets are not read again")
	require.Equal(t, 1, source.reads)

	other := loaded{endpointID: uuid.New(), secrets: "b"}
	_, err = cache.secretsFor(ctx, other, t0)
	require.NoError(t, err)
	require.Equal(t, 2, source.reads, "each endpoint has its own entry")

	// A rotation adds a secret; the old one expires at the end of the grace.
	rotated := d
	rotated.secrets, rotated.secretsExpire = "a,c", t0.Add(2*time.Hour)
	during, err := cache.secretsFor(ctx, rotated, t0.Add(time.Hour))
	require.NoError(t, err)
	require.NotEqual(t, first, during, "a rotation is seen at the next attempt")
	require.Equal(t, 3, source.reads)
	_, err = cache.secretsFor(ctx, rotated, t0.Add(2*time.Hour-time.Nanosecond))
	require.NoError(t, err)
	require.Equal(t, 3, source.reads)
	_, err = cache.secretsFor(ctx, rotated, t0.Add(2*time.Hour))
	require.NoError(t, err)
	require.Equal(t, 4, source.reads, "the end of the grace period is seen at once")
}
