package auth

import (
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// KeyChangesChannel is the Postgres channel a trigger on herald.api_keys
// notifies when a statement updates or deletes keys: a revocation, or a
// tenant's deletion taking its keys with it (migrations/0019_publish_many.sql).
const KeyChangesChannel = "herald_api_keys"

// Defaults of KeyCacheConfig.
const (
	// DefaultKeyCacheTTL is how long a key that authenticated is trusted
	// without a lookup: 1 minute. A revocation ends that at once on every
	// replica; the TTL only bounds how long a cache that missed a
	// notification (below) can be wrong.
	DefaultKeyCacheTTL = time.Minute
	// DefaultKeyCacheEntries is how many keys a cache holds: 10,000. A
	// full cache starts again empty.
	DefaultKeyCacheEntries = 10_000
)

// How the cache's listening connection is watched: pinged after
// keyListenerPing of silence, each step bounded by keyListenerTimeout,
// and opened again keyListenerRetry after a failure. A connection that died
// without closing is noticed within keyListenerPing + keyListenerTimeout
// (15 s), the longest a revocation can go unheard.
const (
	keyListenerPing    = 5 * time.Second
	keyListenerTimeout = 10 * time.Second
	keyListenerRetry   = time.Second
)

// KeyCacheConfig configures a KeyCache.
type KeyCacheConfig struct {
	// TTL is how long a key is trusted without a lookup. Defaults to
	// DefaultKeyCacheTTL. Zero means the default.
	TTL time.Duration
	// MaxEntries bounds the keys held. Defaults to DefaultKeyCacheEntries.
	// Zero means the default.
	MaxEntries int
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
}

// KeyCache remembers the API keys that authenticated, so that most
// requests need no lookup, and forgets them all as soon as any key is
// revoked or deleted anywhere: it LISTENs on KeyChangesChannel (Listen),
// which a trigger notifies in the revoking transaction, so every replica
// hears of a revocation when it commits. A cache that is not listening
// (before Listen has subscribed, or while its connection is down) holds
// nothing, and every request looks its key up. Only API keys are cached;
// portal sessions are looked up every time. Use it from any number of
// goroutines.
type KeyCache struct {
	ttl        time.Duration
	maxEntries int
	now        func() time.Time

	mu        sync.Mutex
	listening bool
	// generation counts the times the cache was emptied, so a lookup that
	// raced with a revocation is not stored.
	generation uint64
	entries    map[[sha256.Size]byte]cachedKey
}

type cachedKey struct {
	principal Principal
	until     time.Time
}

// NewKeyCache returns an empty KeyCache configured by cfg; it caches
// nothing until Listen has subscribed.
func NewKeyCache(cfg KeyCacheConfig) *KeyCache {
	c := &KeyCache{ttl: cfg.TTL, maxEntries: cfg.MaxEntries, now: cfg.Now}
	if c.ttl <= 0 {
		c.ttl = DefaultKeyCacheTTL
	}
	if c.maxEntries <= 0 {
		c.maxEntries = DefaultKeyCacheEntries
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c
}

// Authenticate is the package's Authenticate with the cache in front of
// the API-key lookup. A nil cache looks up every token.
func (c *KeyCache) Authenticate(ctx context.Context, db DB, token string) (Principal, error) {
	if c == nil || !strings.HasPrefix(token, apiKeyPrefix) {
		return Authenticate(ctx, db, token)
	}
	sum := sha256.Sum256([]byte(token))
	c.mu.Lock()
	e, hit := c.entries[sum]
	generation, listening := c.generation, c.listening
	c.mu.Unlock()
	if hit && c.now().Before(e.until) {
		return e.principal, nil
	}
	p, err := Authenticate(ctx, db, token)
	if err != nil || !listening {
		return p, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.generation == generation && c.listening {
		if len(c.entries) >= c.maxEntries {
			clear(c.entries)
		}
		c.entries[sum] = cachedKey{principal: p, until: c.now().Add(c.ttl)}
	}
	return p, nil
}

// reset empties the cache and records whether it may hold keys now.
func (c *KeyCache) reset(listening bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.generation++
	c.listening = listening
	if c.entries == nil {
		c.entries = make(map[[sha256.Size]byte]cachedKey)
	}
	clear(c.entries)
}

// Listen keeps a connection of its own (opened with config) subscribed to
// KeyChangesChannel until ctx ends, emptying the cache at every
// notification and whenever the connection is lost, and opening it again
// after a failure, which it logs. Run it in a goroutine of its own, once
// per cache.
func (c *KeyCache) Listen(ctx context.Context, config *pgx.ConnConfig, logger *slog.Logger) {
	defer c.reset(false)
	for ctx.Err() == nil {
		err := c.listenOnce(ctx, config)
		c.reset(false)
		if ctx.Err() != nil {
			return
		}
		logger.WarnContext(ctx, "API key cache: listening for revocations failed; looking every key up until it listens again", "error", err)
		t := time.NewTimer(keyListenerRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

func (c *KeyCache) listenOnce(ctx context.Context, config *pgx.ConnConfig) error {
	connectCtx, cancel := context.WithTimeout(ctx, keyListenerTimeout)
	conn, err := pgx.ConnectConfig(connectCtx, config)
	if err == nil {
		_, err = conn.Exec(connectCtx, "LISTEN "+KeyChangesChannel)
	}
	cancel()
	if conn != nil {
		defer func() {
			closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), keyListenerTimeout)
			defer cancel()
			_ = conn.Close(closeCtx)
		}()
	}
	if err != nil {
		return err
	}
	c.reset(true)
	for {
		waitCtx, cancel := context.WithTimeout(ctx, keyListenerPing)
		_, err := conn.WaitForNotification(waitCtx)
		cancel()
		switch {
		case err == nil:
			c.reset(true)
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, context.DeadlineExceeded):
			pingCtx, cancel := context.WithTimeout(ctx, keyListenerTimeout)
			err = conn.Ping(pingCtx)
			cancel()
			if err != nil {
				return err
			}
		default:
			return err
		}
	}
}

// Listening reports whether the cache is subscribed to KeyChangesChannel,
// and so may hold keys.
func (c *KeyCache) Listening() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.listening
}

// Forget empties the cache now. The api calls it after a revocation it
// made, so that its own next request is refused without waiting for the
// notification to come back; other replicas empty theirs when it reaches
// them.
func (c *KeyCache) Forget() {
	if c == nil {
		return
	}
	c.mu.Lock()
	listening := c.listening
	c.mu.Unlock()
	c.reset(listening)
}
