// Package ratelimit holds deliveries to an endpoint to the endpoint's
// messages-per-second limit without tying up workers.
//
// Each dispatcher replica keeps one token bucket (golang.org/x/time/rate,
// burst 1, so deliveries are evenly spaced) per rate-limited endpoint. A
// delivery job that finds no token free reserves the next free slot and is
// snoozed until it ([Limiter.Admit] returns river.JobSnooze): the worker is
// released at once, the job sleeps in the database, and any replica may run
// it when the slot comes. The reserved slot travels with the job in its River
// metadata, so the job does not pay for a second slot when it wakes.
//
// Several replicas: each one takes an equal share of every endpoint's limit,
// limit / N, where N is the number of live dispatchers counted through a
// heartbeat table ([Heartbeat]). Together they therefore send at most the
// limit. When jobs for an endpoint are spread unevenly, that endpoint gets
// less than its limit, never more. When a replica starts or dies, the others
// notice within one heartbeat interval (plus the expiry for a dead one);
// during that short time the shares add up to a little more, or less, than
// the limit.
package ratelimit

import (
	"sync"
	"time"

	"github.com/google/uuid"
	"golang.org/x/time/rate"
)

// Replicas reports how many dispatcher replicas share each endpoint's limit.
// [Heartbeat] implements it.
type Replicas interface {
	Replicas() int
}

// idleAfter is how long an endpoint's bucket is kept after its last
// reserved slot. A bucket with burst 1 whose last slot is in the past is
// full, exactly like a new one, so forgetting it changes nothing.
const idleAfter = time.Minute

// Limiter spaces deliveries to each rate-limited endpoint on this replica.
// The zero value is not usable; call [NewLimiter]. It is safe for concurrent
// use.
type Limiter struct {
	replicas Replicas
	// Now is the clock. Defaults to time.Now; tests replace it.
	Now func() time.Time

	mu        sync.Mutex
	buckets   map[uuid.UUID]*bucket
	lastSweep time.Time
}

type bucket struct {
	limiter  *rate.Limiter
	lastSlot time.Time
}

// NewLimiter returns a Limiter that divides each limit by replicas.Replicas().
// A nil replicas means this process is the only dispatcher.
func NewLimiter(replicas Replicas) *Limiter {
	return &Limiter{replicas: replicas, Now: time.Now, buckets: map[uuid.UUID]*bucket{}}
}

// Reserve takes the next free slot for one delivery to endpoint, whose limit
// is perSecond messages per second across all replicas, and returns it. A
// slot at or before now means "send now". perSecond zero or negative means
// no limit: the slot is now and nothing is recorded.
func (l *Limiter) Reserve(endpoint uuid.UUID, perSecond float64, now time.Time) time.Time {
	if perSecond <= 0 {
		return now
	}
	share := rate.Limit(perSecond / float64(l.replicaCount()))

	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep(now)
	b, ok := l.buckets[endpoint]
	if !ok {
		b = &bucket{limiter: rate.NewLimiter(share, 1)}
		l.buckets[endpoint] = b
	}
	if b.limiter.Limit() != share {
		b.limiter.SetLimitAt(now, share)
	}
	// Rounded to the microsecond, the precision Postgres keeps for the job's
	// scheduled time, which also hides the limiter's float rounding.
	slot := now.Add(b.limiter.ReserveN(now, 1).DelayFrom(now).Round(time.Microsecond))
	b.lastSlot = slot
	return slot
}

func (l *Limiter) replicaCount() int {
	if l.replicas == nil {
		return 1
	}
	return max(l.replicas.Replicas(), 1)
}

// sweep forgets idle buckets, at most once per idleAfter, so the map does
// not grow with every endpoint ever limited.
func (l *Limiter) sweep(now time.Time) {
	if now.Sub(l.lastSweep) < idleAfter {
		return
	}
	l.lastSweep = now
	for id, b := range l.buckets {
		if now.Sub(b.lastSlot) > idleAfter {
			delete(l.buckets, id)
		}
	}
}
