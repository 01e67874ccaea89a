// Package testclock is a clock that a test sets by hand, shared by River
// (river.TestConfig.Time), Herald's workers and the rate limiter (their
// Now fields), so that all of them see the same simulated time.
//
// It plays the part of River's riversharedtest.TimeStub, except that it is
// always stubbed: a test starts it at a time of its choosing and moves it,
// typically to the time River scheduled the next run of a job for.
//
//	clock := testclock.New(time.Now().UTC().Truncate(time.Second))
//	cfg := &river.Config{Test: river.TestConfig{Time: clock}}
//	worker, err := delivery.NewWorker(delivery.Config{Now: clock.Now})
//	…
//	clock.Set(result.Job.ScheduledAt)
package testclock

import (
	"sync"
	"time"

	"github.com/riverqueue/river/rivertype"
)

// Clock is a stubbed clock; it never moves by itself. It is safe for
// concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

var _ rivertype.TimeGenerator = (*Clock)(nil)

// New returns a clock that reads now until it is Set.
func New(now time.Time) *Clock {
	return &Clock{now: now}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NowOrNil returns the clock's time; it is never nil, which tells River
// that time is stubbed.
func (c *Clock) NowOrNil() *time.Time {
	now := c.Now()
	return &now
}

// Set moves the clock to now, forwards or backwards.
func (c *Clock) Set(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = now
}
