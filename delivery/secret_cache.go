package delivery

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/signing"
)

// secretCache keeps the secrets the worker read (and decrypted) for each
// endpoint, so that a busy endpoint's secrets are read once rather than for
// every attempt. It is exact: every load of a delivery says which of its
// endpoint's secrets are active (their ids) and when the first of them
// expires, and an entry is used only while both still hold. A rotation
// adds a secret and so changes the set; the end of a grace period is the
// expiry. Either makes the next attempt read the secrets again.
type secretCache struct {
	source SecretSource

	mu      sync.Mutex
	entries map[uuid.UUID]cachedSecrets
	// added counts insertions since the last sweep.
	added int
}

type cachedSecrets struct {
	secrets []signing.Secret
	// active and expire are what the delivery's load said when the
	// secrets were read.
	active string
	expire time.Time
	used   time.Time
}

// Sweeps drop the entries of endpoints that had no attempt for a while,
// every sweepEvery insertions.
const (
	sweepEvery = 1024
	sweepIdle  = 10 * time.Minute
)

func newSecretCache(source SecretSource) *secretCache {
	return &secretCache{source: source, entries: make(map[uuid.UUID]cachedSecrets)}
}

// secretsFor returns the secrets d's attempt at now is signed with.
func (c *secretCache) secretsFor(ctx context.Context, d loaded, now time.Time) ([]signing.Secret, error) {
	c.mu.Lock()
	e, ok := c.entries[d.endpointID]
	if ok && e.active == d.secrets && e.expire.Equal(d.secretsExpire) && (e.expire.IsZero() || now.Before(e.expire)) {
		e.used = now
		c.entries[d.endpointID] = e
		c.mu.Unlock()
		return e.secrets, nil
	}
	c.mu.Unlock()

	secrets, err := c.source.ActiveSecrets(ctx, d.endpointID, now)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[d.endpointID] = cachedSecrets{secrets: secrets, active: d.secrets, expire: d.secretsExpire, used: now}
	if c.added++; c.added >= sweepEvery {
		c.added = 0
		for id, e := range c.entries {
			if now.Sub(e.used) > sweepIdle {
				delete(c.entries, id)
			}
		}
	}
	return secrets, nil
}
