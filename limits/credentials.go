package limits

import (
	"sync"
	"time"

	"github.com/google/uuid"
	"golang.org/x/time/rate"
)

// maxCredentialBuckets bounds the credentials tracked at once (a few
// hundred bytes each). Beyond it, new ones go unlimited by credential
// until the next sweep forgets idle ones; their tenants' limits still
// hold.
const maxCredentialBuckets = 100_000

// sweepEvery is how often idle credential buckets are forgotten.
const sweepEvery = time.Minute

// credentialKey is one bucket: a credential acting on one tenant for one
// action. An operator key has one per tenant it acts on.
type credentialKey struct {
	credential uuid.UUID
	tenant     string
	action     Action
}

// credentialBuckets are the in-process token buckets of credentials.
type credentialBuckets struct {
	now       func() time.Time
	mu        sync.Mutex
	buckets   map[credentialKey]*rate.Limiter
	lastSweep time.Time
}

func newCredentialBuckets(now func() time.Time) *credentialBuckets {
	return &credentialBuckets{now: now, buckets: map[credentialKey]*rate.Limiter{}}
}

// heldToken is a credential's token taken for a request still being
// judged by its tenant.
type heldToken struct {
	buckets     *credentialBuckets
	key         credentialKey
	bucket      *rate.Limiter
	reservation *rate.Reservation
	at          time.Time
}

// take takes one token of key's bucket, made at limit r if it is new. It
// returns the token, nil when the credential goes untracked, or the
// Refusal of a bucket that is empty.
func (c *credentialBuckets) take(key credentialKey, r Rate) (*heldToken, *Refusal) {
	now := c.now()
	c.mu.Lock()
	c.sweep(now)
	bucket, ok := c.buckets[key]
	if !ok {
		if len(c.buckets) >= maxCredentialBuckets {
			c.mu.Unlock()
			return nil, nil
		}
		bucket = rate.NewLimiter(asLimit(r))
		c.buckets[key] = bucket
	}
	c.mu.Unlock()
	res := bucket.ReserveN(now, 1)
	if delay := res.DelayFrom(now); !res.OK() || delay > 0 {
		res.CancelAt(now)
		// The bucket counts in floating point; whole milliseconds keep
		// 2 s from reading 1.999999999 s.
		return nil, &Refusal{Action: key.action, Scope: ScopeCredential, Rate: current(bucket), Wait: max(delay.Round(time.Millisecond), time.Millisecond)}
	}
	return &heldToken{buckets: c, key: key, bucket: bucket, reservation: res, at: now}, nil
}

// current is a bucket's limit as a Rate.
func current(b *rate.Limiter) Rate {
	return Rate{PerSecond: float64(b.Limit()), Burst: b.Burst()}
}

// giveBack returns the token of a request that was turned away after all.
func (h *heldToken) giveBack() {
	if h != nil {
		h.reservation.CancelAt(h.at)
	}
}

// adjust moves the bucket to r, the credential's share of its tenant's
// limit as the tenant's row just reported it, so that an operator's
// change reaches credentials with the next request. A lowered limit keeps
// the tokens left, up to the new burst; a raised one starts a full bucket
// of the new size, less this request's token if it was let through, as
// the tenant's own row gives the tenant its larger burst at once.
func (h *heldToken) adjust(r Rate, limited, through bool) {
	if h == nil {
		return
	}
	if !limited {
		r = Rate{PerSecond: -1}
	}
	limit, burst := asLimit(r)
	switch {
	case limit == h.bucket.Limit() && burst == h.bucket.Burst():
	case limit > h.bucket.Limit() || burst > h.bucket.Burst():
		raised := rate.NewLimiter(limit, burst)
		if through {
			raised.AllowN(h.at, 1)
		}
		h.buckets.mu.Lock()
		h.buckets.buckets[h.key] = raised
		h.buckets.mu.Unlock()
	default:
		h.bucket.SetLimitAt(h.at, limit)
		h.bucket.SetBurstAt(h.at, burst)
	}
}

// sweep forgets, at most every sweepEvery, the buckets that have refilled
// or have no limit: they are as good as new. Called with c.mu held.
func (c *credentialBuckets) sweep(now time.Time) {
	if now.Sub(c.lastSweep) < sweepEvery {
		return
	}
	c.lastSweep = now
	for key, bucket := range c.buckets {
		if bucket.Limit() == rate.Inf || bucket.TokensAt(now) >= float64(bucket.Burst()) {
			delete(c.buckets, key)
		}
	}
}
