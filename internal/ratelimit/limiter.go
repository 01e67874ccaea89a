// Package ratelimit holds deliveries to an endpoint to the endpoint's
// messages-per-second limit, across every dispatcher, without tying up
// workers.
//
// The state of each rate-limited endpoint's limit is one row in Postgres
// (herald.endpoint_rate_limits), which every dispatcher asks with one
// statement per delivery ([Limiter.Admit]). The statement lets the
// delivery through or turns it away, and changes the row accordingly, under
// the row's lock. A delivery turned away is snoozed (its job sleeps in the
// database, no worker waits) and asks again when it wakes; it holds no
// reservation. So a changed or removed limit applies to the deliveries
// already waiting as soon as they wake, a dispatcher that restarts or joins
// finds the same state as the others, and the limit is reached however the
// jobs are spread between dispatchers. Endpoints without a limit never ask.
//
// The limit is a GCRA (generic cell rate algorithm) with an emission
// interval T = 1/limit and a tolerance of T/2. slot is the theoretical time
// of the latest delivery let through. An ask at time t is let through when
//
//	t ≥ slot + T/2,   and then   slot ← max(slot + T, t).
//
// Over any n deliveries, the first and the last are at least (n−1)·T − T/2
// apart: no window of length T holds more than 2 deliveries, and over time
// the rate never exceeds the limit. A delivery let through up to T/2 after
// the earliest moment it could have been costs no pace: slot still
// advances by exactly T.
//
// Waking a backlog: the row also remembers wake_at, the latest wake-up it
// handed out. A delivery turned away is told to wake at
//
//	w = max(wake_at + T, slot + 3T/4),   and wake_at ← w,   if w ≤ t + MaxWait,
//
// so a backlog wakes one delivery per interval, each in the middle of the
// window [slot + T/2, slot + T] in which it is let through without losing
// pace. A wake-up is a hint, not a reservation: the delivery must still
// find the slot free, and one that does not (a new delivery came first, or
// the limit changed) is handed a new wake-up. Past MaxWait no wake-up is
// handed out, so wake_at stays on the slots' grid; those deliveries wake at
// a random time in (MaxWait/2, MaxWait] and ask again. No delivery sleeps
// longer than MaxWait, and a backlog longer than MaxWait × limit costs
// about one ask per waiting delivery every 0.75 × MaxWait.
package ratelimit

import (
	"context"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultMaxWait is the default of [Config.MaxWait]. River makes a job
// snoozed for at most its scheduler interval (5 s) available at once, so it
// starts within one fetch poll of its time; a longer snooze would wait for
// River's scheduler, up to 5 s more.
const DefaultMaxWait = 5 * time.Second

// maxInterval bounds the emission interval of very small limits, so that
// it fits in a time.Duration (a limit below one message in 146 years is
// treated as one in 146 years).
const maxInterval = time.Duration(1 << 62)

// DB is what the limiter needs of Postgres; a *pgxpool.Pool is one.
type DB interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Config tunes a [Limiter]. The zero value is ready to use.
type Config struct {
	// MaxWait bounds how long a delivery turned away sleeps before it asks
	// again, and so how long a changed or removed limit takes to reach a
	// waiting delivery. Defaults to 5 s. Zero or negative means the
	// default.
	MaxWait time.Duration
	// Now is the clock the limits are kept by. Nil, the default, means the
	// database's clock, which every dispatcher shares whatever its host's
	// clock says; tests set it to step time by hand.
	Now func() time.Time
}

// Limiter holds deliveries to their endpoints' rate limits. It keeps no
// state of its own: any number of Limiters on one database, in one process
// or many, share every limit. It is safe for concurrent use.
type Limiter struct {
	db      DB
	maxWait time.Duration
	now     func() time.Time
}

// New returns a Limiter that keeps the limits in db.
func New(db DB, cfg Config) *Limiter {
	maxWait := cfg.MaxWait
	if maxWait <= 0 {
		maxWait = DefaultMaxWait
	}
	return &Limiter{db: db, maxWait: maxWait, now: cfg.Now}
}

// interval returns the emission interval of a limit of perSecond (> 0)
// messages per second, rounded up to the microsecond Postgres keeps, so
// that rounding never raises the limit.
func interval(perSecond float64) time.Duration {
	micros := math.Ceil(1e6 / perSecond)
	if micros >= float64(maxInterval/time.Microsecond) {
		return maxInterval
	}
	return time.Duration(micros) * time.Microsecond
}
