package auth

import (
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Defaults of a FailureThrottle: an address may fail 20 times in a row,
// then once a second.
const (
	DefaultFailureBurst    = 20
	DefaultFailureInterval = time.Second
)

// maxThrottled bounds the addresses a FailureThrottle tracks at once
// (about 100 bytes each). Beyond it, new addresses go untracked until the
// next sweep evicts idle ones: refusing them instead would let someone with
// many addresses lock everyone else out.
const maxThrottled = 100_000

// sweepEvery is how often a FailureThrottle evicts idle addresses.
const sweepEvery = time.Minute

// ThrottleConfig configures a FailureThrottle.
type ThrottleConfig struct {
	// Burst is how many failed authentications an address may make in a
	// row before it has to wait. Defaults to DefaultFailureBurst (20).
	// Zero means the default; negative disables throttling.
	Burst int
	// Interval is how long an address waits for each further try once
	// its burst is spent; the burst refills at the same pace. Defaults to
	// DefaultFailureInterval (1 s): one try a second. Zero or negative
	// means the default.
	Interval time.Duration
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
}

// FailureThrottle slows down guessing: it counts failed authentications
// per client address in a token bucket (golang.org/x/time/rate), and an
// address whose bucket is empty waits before any token of its, valid or
// not, is looked at again. Checking a valid key anyway would let a guesser
// tell a hit from a miss at full speed.
//
// IPv6 addresses are counted per /64, the block one subscriber gets, so
// hopping between the addresses of one network does not reset the count.
// An address whose bucket has refilled is forgotten. Counts are per
// process: N api replicas let an address try N times as often. Use it from
// any number of goroutines.
type FailureThrottle struct {
	burst     int
	limit     rate.Limit
	now       func() time.Time
	mu        sync.Mutex
	buckets   map[netip.Addr]*rate.Limiter
	lastSweep time.Time
}

// NewFailureThrottle returns a FailureThrottle configured by cfg.
func NewFailureThrottle(cfg ThrottleConfig) *FailureThrottle {
	if cfg.Burst == 0 {
		cfg.Burst = DefaultFailureBurst
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultFailureInterval
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &FailureThrottle{
		burst:   cfg.Burst,
		limit:   rate.Every(cfg.Interval),
		now:     cfg.Now,
		buckets: map[netip.Addr]*rate.Limiter{},
	}
}

// Wait returns how long addr must wait before its next authentication is
// looked at; zero means it may try now.
func (t *FailureThrottle) Wait(addr netip.Addr) time.Duration {
	if t.burst < 0 {
		return 0
	}
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	bucket, ok := t.buckets[throttleKey(addr)]
	if !ok {
		return 0
	}
	tokens := bucket.TokensAt(now)
	if tokens >= 1 {
		return 0
	}
	// The bucket counts in floating point; whole milliseconds keep 6 s
	// from reading 5.999999999 s.
	wait := time.Duration((1 - tokens) / float64(t.limit) * float64(time.Second)).Round(time.Millisecond)
	return max(wait, time.Millisecond)
}

// Fail records a failed authentication from addr.
func (t *FailureThrottle) Fail(addr netip.Addr) {
	if t.burst < 0 {
		return
	}
	now := t.now()
	key := throttleKey(addr)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sweep(now)
	bucket, ok := t.buckets[key]
	if !ok {
		if len(t.buckets) >= maxThrottled {
			return
		}
		bucket = rate.NewLimiter(t.limit, t.burst)
		t.buckets[key] = bucket
	}
	bucket.AllowN(now, 1)
}

// sweep forgets, at most every sweepEvery, the addresses whose bucket has
// refilled: they are as good as new. Called with t.mu held.
func (t *FailureThrottle) sweep(now time.Time) {
	if now.Sub(t.lastSweep) < sweepEvery {
		return
	}
	t.lastSweep = now
	for key, bucket := range t.buckets {
		if bucket.TokensAt(now) >= float64(t.burst) {
			delete(t.buckets, key)
		}
	}
}

// throttleKey is the bucket an address counts in: itself for IPv4, its /64
// for IPv6.
func throttleKey(addr netip.Addr) netip.Addr {
	addr = addr.Unmap()
	if addr.Is6() {
		return netip.PrefixFrom(addr.WithZone(""), 64).Masked().Addr()
	}
	return addr
}
