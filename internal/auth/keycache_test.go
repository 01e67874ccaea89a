package auth_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/auth"
)

// countingDB counts the lookups that reach the database.
type countingDB struct {
	auth.DB
	queries atomic.Int64
}

func (c *countingDB) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	c.queries.Add(1)
	return c.DB.QueryRow(ctx, sql, args...)
}

func TestKeyCacheAnswersFromMemoryWhileListening(t *testing.T) {
	t.Parallel()
	b := setup(t)
	k, key, err := auth.CreateAPIKey(b.ctx, b.pool, "acme", "producer")
	require.NoError(t, err)
	db := &countingDB{DB: b.pool}
	cache := auth.NewKeyCache(auth.KeyCacheConfig{})

	// Not listening: every request looks its key up.
	for range 2 {
		_, err := cache.Authenticate(b.ctx, db, key)
		require.NoError(t, err)
	}
	require.Equal(t, int64(2), db.queries.Load(), "a cache that is not listening holds nothing")

	ctx, cancel := context.WithCancel(b.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		cache.Listen(ctx, b.pool.Config().ConnConfig, slog.New(slog.DiscardHandler))
	}()
	defer func() { cancel(); <-done }()
	require.Eventually(t, cache.Listening, 10*time.Second, 5*time.Millisecond)

	for range 3 {
		p, err := cache.Authenticate(b.ctx, db, key)
		require.NoError(t, err)
		require.Equal(t, auth.Principal{Kind: auth.KindAPIKey, ID: k.ID, TenantID: "acme"}, p)
	}
	require.Equal(t, int64(3), db.queries.Load(), "one lookup, then memory")

	_, err = auth.RevokeAPIKey(b.ctx, b.pool, "acme", k.ID)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := cache.Authenticate(b.ctx, db, key)
		return err != nil
	}, 2*time.Second, time.Millisecond, "the revocation's notification empties the cache")
	_, err = cache.Authenticate(b.ctx, db, "hk_unknown")
	require.ErrorIs(t, err, auth.ErrUnauthenticated)
}

func TestKeyCacheEntriesExpire(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, key, err := auth.CreateAPIKey(b.ctx, b.pool, "acme", "producer")
	require.NoError(t, err)
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	cache := auth.NewKeyCache(auth.KeyCacheConfig{TTL: time.Minute, Now: func() time.Time { return now }})
	ctx, cancel := context.WithCancel(b.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		cache.Listen(ctx, b.pool.Config().ConnConfig, slog.New(slog.DiscardHandler))
	}()
	defer func() { cancel(); <-done }()
	require.Eventually(t, cache.Listening, 10*time.Second, 5*time.Millisecond)

	db := &countingDB{DB: b.pool}
	_, err = cache.Authenticate(b.ctx, db, key)
	require.NoError(t, err)
	now = now.Add(59 * time.Second)
	_, err = cache.Authenticate(b.ctx, db, key)
	require.NoError(t, err)
	require.Equal(t, int64(1), db.queries.Load())
	now = now.Add(time.Second)
	_, err = cache.Authenticate(b.ctx, db, key)
	require.NoError(t, err)
	require.Equal(t, int64(2), db.queries.Load(), "after the TTL the key is looked up again")
}
