// Package schedule decides when a failed webhook delivery is tried again.
//
// The production schedule is [Policy]: exponential backoff with full jitter,
// retrying until a time window since the first attempt is spent. Full jitter
// matters because deliveries that fail together (a receiver going down) would
// otherwise retry together, hitting the receiver with one synchronized spike
// at the moment it recovers.
//
// Attempt numbering is the same everywhere in this package: the first
// delivery attempt is not a retry; retry n (n ≥ 1) is the n-th attempt after
// it, the (n+1)-th delivery attempt overall. Retry n waits a random delay in
// [0, min(Cap, Base·2^(n−1))), so retry 1 waits up to Base, retry 2 up to
// 2·Base, and so on until Cap.
//
// [Fixed] is a second [Schedule] made of a fixed list of delays, for
// expressing published schedules (Svix, the Standard Webhooks example) and
// for comparisons without jitter.
package schedule

import (
	"math/rand/v2"
	"time"
)

// Defaults of [Policy]. A zero or negative field of a Policy means its default.
const (
	// DefaultBase is the upper bound of the first retry's delay.
	DefaultBase = 5 * time.Second
	// DefaultCap is the largest upper bound any retry's delay can have.
	DefaultCap = 10 * time.Hour
	// DefaultWindow is how long after the first attempt retries continue.
	DefaultWindow = 72 * time.Hour
	// DefaultMaxRetryAfter is the longest Retry-After a receiver can impose.
	DefaultMaxRetryAfter = time.Hour
)

// Schedule says when retry number attempt of a delivery should run, given
// when its first attempt happened and the current time. ok is false when the
// delivery should not be retried any more (it is exhausted). See the package
// documentation for attempt numbering.
type Schedule interface {
	Next(attempt int, firstAttempt, now time.Time) (at time.Time, ok bool)
}

// Policy is exponential backoff with full jitter bounded by a time window:
// retry n waits a uniformly random delay in [0, min(Cap, Base·2^(n−1))),
// and no retry is scheduled after FirstAttempt+Window.
//
// The zero Policy is ready to use and equals [Default]. A Policy is a plain
// value; copying it is cheap and safe.
type Policy struct {
	// Base is the upper bound of the first retry's delay; each later retry
	// doubles the bound until it reaches Cap. Defaults to 5 s. Zero or
	// negative means the default.
	Base time.Duration

	// Cap is the largest upper bound of any retry's delay. Defaults to
	// 10 h. Zero or negative means the default. A Cap below Base makes
	// every retry wait up to Cap.
	Cap time.Duration

	// Window is how long after the first attempt the delivery keeps being
	// retried. A drawn retry time past the window's end is moved to the
	// window's end, so the last retry happens when the window closes; once
	// now has reached the end, the delivery is exhausted. Defaults to 72 h
	// (3 days). Zero or negative means the default.
	Window time.Duration

	// MaxRetryAfter bounds how long a receiver's Retry-After can push a
	// retry back (see [Policy.NextAfter]). Defaults to 1 h. Zero means the
	// default; negative means Retry-After is ignored.
	MaxRetryAfter time.Duration

	// Rand is the source of the jitter. Nil means the global source of
	// math/rand/v2, which is safe for concurrent use. Set it to a seeded
	// generator (rand.New(rand.NewPCG(seed, 0))) to make a run
	// reproducible; a *rand.Rand is not safe for concurrent use, so a
	// seeded Policy must not be shared between goroutines.
	Rand *rand.Rand
}

// Default returns the production policy: base 5 s, cap 10 h, window 3 days,
// Retry-After clamped to 1 h, global random source. It equals the zero Policy
// with its defaults written out.
func Default() Policy {
	return Policy{
		Base:          DefaultBase,
		Cap:           DefaultCap,
		Window:        DefaultWindow,
		MaxRetryAfter: DefaultMaxRetryAfter,
	}
}

// Next returns when retry number attempt should run: now plus a delay drawn
// uniformly from [0, min(Cap, Base·2^(attempt−1))), moved back to
// firstAttempt+Window if it would fall after it. ok is false, and at is the
// zero time, when now is at or past firstAttempt+Window: the delivery is
// exhausted.
//
// attempt 1 is the first retry, after the first attempt failed. An attempt
// below 1 is treated as 1. Next never panics.
func (p Policy) Next(attempt int, firstAttempt, now time.Time) (at time.Time, ok bool) {
	return p.NextAfter(attempt, firstAttempt, now, 0)
}

// NextAfter is [Policy.Next] for a response that carried a Retry-After
// (parse it with [ParseRetryAfter]). The retry runs at the later of the
// schedule's own draw and now+retryAfter, so Retry-After can only postpone a
// retry, never bring it forward. retryAfter is first clamped to
// MaxRetryAfter (default 1 h); zero or negative retryAfter means the
// response had none, and a negative MaxRetryAfter ignores it.
//
// If honouring Retry-After would put the retry after the window's end, ok is
// false: retrying earlier than the receiver asked is not an option, so the
// delivery is exhausted. A draw of the schedule itself past the window's end
// is moved to the window's end, as in Next.
func (p Policy) NextAfter(attempt int, firstAttempt, now time.Time, retryAfter time.Duration) (at time.Time, ok bool) {
	end := firstAttempt.Add(p.window())
	if !now.Before(end) {
		return time.Time{}, false
	}

	at = now.Add(p.draw(attempt))
	if at.After(end) {
		at = end
	}

	retryAfter = p.clampRetryAfter(retryAfter)
	if retryAfter <= 0 {
		return at, true
	}
	asked := now.Add(retryAfter)
	if asked.After(end) {
		return time.Time{}, false
	}
	if asked.After(at) {
		at = asked
	}
	return at, true
}

// Ceiling returns the upper bound of retry attempt's delay,
// min(Cap, Base·2^(attempt−1)), without drawing. An attempt below 1 is
// treated as 1. It does not overflow for any attempt.
func (p Policy) Ceiling(attempt int) time.Duration {
	base, limit := positiveOr(p.Base, DefaultBase), positiveOr(p.Cap, DefaultCap)
	if base >= limit {
		return limit
	}
	shift := max(attempt, 1) - 1
	// base·2^shift > limit exactly when base > limit>>shift, which can be
	// checked without computing the product that might overflow.
	if shift >= 63 || base > limit>>shift {
		return limit
	}
	return base << shift
}

// draw returns a delay uniformly distributed in [0, Ceiling(attempt)).
func (p Policy) draw(attempt int) time.Duration {
	ceiling := int64(p.Ceiling(attempt))
	if p.Rand == nil {
		return time.Duration(rand.Int64N(ceiling))
	}
	return time.Duration(p.Rand.Int64N(ceiling))
}

func (p Policy) window() time.Duration {
	return positiveOr(p.Window, DefaultWindow)
}

func (p Policy) clampRetryAfter(retryAfter time.Duration) time.Duration {
	if p.MaxRetryAfter < 0 || retryAfter <= 0 {
		return 0
	}
	return min(retryAfter, positiveOr(p.MaxRetryAfter, DefaultMaxRetryAfter))
}

func positiveOr(d, fallback time.Duration) time.Duration {
	if d <= 0 {
		return fallback
	}
	return d
}
