package ratelimit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
)

// Admit decides, inside a River worker's Work, whether one delivery to
// endpoint, whose limit is perSecond messages per second across all
// dispatchers, may be sent now. It returns nil to go ahead, or the
// river.JobSnooze error the worker must return so that the job sleeps until
// it should ask again: at most MaxWait, whatever the limit. A job asks
// anew each time it runs; nothing it was told before is kept.
//
// perSecond zero, negative or NaN means no limit: Admit returns nil without
// asking the database. An error is returned when the database could not be
// asked; the delivery was not let through.
func (l *Limiter) Admit(ctx context.Context, endpoint uuid.UUID, perSecond float64) error {
	if !(perSecond > 0) {
		return nil
	}
	var now *time.Time
	if l.now != nil {
		t := l.now()
		now = &t
	}
	var wait *time.Duration
	if err := l.db.QueryRow(ctx, admitQuery, endpoint, interval(perSecond), l.maxWait, now).Scan(&wait); err != nil {
		return fmt.Errorf("rate limit of endpoint %s: %w", endpoint, err)
	}
	if wait == nil {
		return nil
	}
	return river.JobSnooze(l.spread(*wait))
}

// spread returns wait, unless it is MaxWait: the delivery is beyond the
// wake-ups handed out, and so are all the others of a backlog that would
// otherwise ask again together. They wake at a random time in
// (MaxWait/2, MaxWait] instead.
func (l *Limiter) spread(wait time.Duration) time.Duration {
	if wait < l.maxWait {
		return max(wait, 0)
	}
	return l.maxWait - rand.N(l.maxWait/2)
}
