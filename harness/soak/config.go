package soak

import (
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald/retention"
)

// Config sets a run's traffic, the receiver's faults, the dispatchers'
// settings and the checks' thresholds. [Full] is the documented run,
// [Small] the one make test runs.
type Config struct {
	// Rate is how many events a second the producer publishes to the main
	// endpoint during Traffic.
	Rate int
	// Traffic is how long the producer publishes.
	Traffic time.Duration
	// PayloadBytes is the size of the padding in each event's data, so that
	// rows weigh what real events do.
	PayloadBytes int
	// Fail is the share of the main endpoint's requests answered 500.
	Fail float64
	// Hold is the share of the main endpoint's requests held until the
	// sender gives up (its --timeout).
	Hold float64

	// Backlog is how many events go to the lagging endpoint, all at once
	// before the steady traffic. Zero leaves the lagging endpoint out.
	Backlog int
	// BacklogRate is the lagging endpoint's rate limit, in messages per
	// second: the backlog takes Backlog/BacklogRate to drain, longer than
	// its partition takes to come due.
	BacklogRate float64
	// AlignTraffic starts the steady traffic at the next partition
	// boundary after the backlog, so that the backlog's partition set,
	// which is kept until the backlog drains, holds little else.
	AlignTraffic bool

	// Dispatchers is how many dispatcher processes run.
	Dispatchers int
	// Interval, Retention and RetryWindow are the dispatchers'
	// --partition-interval, --retention and --retry-window; Retention must
	// be at least RetryWindow plus Interval (retention.Config.Check).
	Interval, Retention, RetryWindow time.Duration
	// RetryBase and RetryCap are the dispatchers' --retry-base and
	// --retry-cap.
	RetryBase, RetryCap time.Duration
	// SenderTimeout is the dispatchers' --timeout.
	SenderTimeout time.Duration
	// ClockAhead, when positive, makes the run also work retention passes
	// of its own every Sample, with Interval and Retention but a clock
	// ClockAhead ahead of the real one: partitions come due ClockAhead
	// early, while their deliveries may still be pending, which the
	// dispatchers' settings alone never allow. It lets a run shorter than a
	// partition drop partitions; the full run leaves it at zero and
	// retention to the dispatchers.
	ClockAhead time.Duration

	// Sample is how often the size curve is sampled.
	Sample time.Duration
	// Settle bounds the wait after the traffic for every delivery to
	// settle and every set past retention to be dropped.
	Settle time.Duration

	// LevelTolerance is how far the largest size of history, and of the
	// database, in the traffic's last third may exceed the largest in its
	// middle third for the size to count as levelled off (0.2: 20 %).
	// Growing without retention, history would be 1.5 times as large at
	// the end of the traffic as at two thirds of it. Zero skips the check,
	// for runs too short to level off.
	LevelTolerance float64
	// MinDroppedInFlight is how many partition sets must be dropped while
	// the producer publishes and deliveries are pending in the sets that
	// remain.
	MinDroppedInFlight int
	// MinKeptPending is how many partition sets must be found past
	// retention and kept because they held a pending delivery or an
	// undispatched message.
	MinKeptPending int
}

// Full is the documented run, about 8 minutes: 40 events a second for 6
// minutes with 1 KB of data each, 10 % answered 500 and 2 % held past the
// 2 s timeout; a backlog of 150 events to an endpoint limited to 0.5 a
// second (5 minutes to drain); two dispatchers with one-minute partitions,
// a retention of 2 minutes and a retry window of 1 minute; the steady
// traffic starts at the partition boundary after the backlog; sampled
// every 10 s.
func Full() Config {
	return Config{
		Rate:               40,
		Traffic:            6 * time.Minute,
		PayloadBytes:       1024,
		Fail:               0.10,
		Hold:               0.02,
		Backlog:            150,
		BacklogRate:        0.5,
		AlignTraffic:       true,
		Dispatchers:        2,
		Interval:           time.Minute,
		Retention:          2 * time.Minute,
		RetryWindow:        time.Minute,
		RetryBase:          time.Second,
		RetryCap:           10 * time.Second,
		SenderTimeout:      2 * time.Second,
		Sample:             10 * time.Second,
		Settle:             3 * time.Minute,
		LevelTolerance:     0.2,
		MinDroppedInFlight: 2,
		MinKeptPending:     1,
	}
}

// Small is the run of make test, about 30 seconds: 30 events a second for
// 15 s, a backlog of 20 events at 4 a second, one dispatcher, and
// retention passes of the run's own with a clock three minutes ahead, so
// that the current partition is due from the start and is dropped once
// settled. It does not check the levelling off, which needs minutes.
func Small() Config {
	c := Full()
	c.Rate = 30
	c.Traffic = 15 * time.Second
	c.PayloadBytes = 256
	c.Backlog = 20
	c.BacklogRate = 4
	c.AlignTraffic = false
	c.Dispatchers = 1
	c.ClockAhead = 3 * time.Minute
	c.Sample = 2 * time.Second
	c.Settle = 45 * time.Second
	c.LevelTolerance = 0
	c.MinDroppedInFlight = 0
	return c
}

// Validate reports settings out of range.
func (c Config) Validate() error {
	var errs []error
	if c.Rate < 1 || c.Traffic <= 0 || c.Sample <= 0 || c.Settle <= 0 || c.Dispatchers < 1 {
		errs = append(errs, fmt.Errorf("soak: Rate (%d), Traffic (%s), Sample (%s), Settle (%s) and Dispatchers (%d) must be positive",
			c.Rate, c.Traffic, c.Sample, c.Settle, c.Dispatchers))
	}
	if c.PayloadBytes < 0 || c.Backlog < 0 || c.ClockAhead < 0 || c.LevelTolerance < 0 || c.MinDroppedInFlight < 0 || c.MinKeptPending < 0 {
		errs = append(errs, errors.New("soak: PayloadBytes, Backlog, ClockAhead, LevelTolerance, MinDroppedInFlight and MinKeptPending must not be negative"))
	}
	if c.Fail < 0 || c.Hold < 0 || c.Fail+c.Hold > 0.5 {
		errs = append(errs, fmt.Errorf("soak: Fail (%v) and Hold (%v) must not be negative and add up to at most 0.5, so that deliveries mostly succeed", c.Fail, c.Hold))
	}
	if c.Backlog > 0 && !(c.BacklogRate > 0) {
		errs = append(errs, fmt.Errorf("soak: a Backlog needs a positive BacklogRate, got %v", c.BacklogRate))
	}
	if c.RetryBase <= 0 || c.RetryCap <= 0 || c.SenderTimeout <= 0 {
		errs = append(errs, errors.New("soak: RetryBase, RetryCap and SenderTimeout must be positive"))
	}
	if c.Interval <= 0 || c.Retention <= 0 || c.RetryWindow <= 0 {
		errs = append(errs, errors.New("soak: Interval, Retention and RetryWindow must be positive"))
	} else if err := (retention.Config{Interval: c.Interval, Retention: c.Retention, RetryWindow: c.RetryWindow}).Check(); err != nil {
		errs = append(errs, fmt.Errorf("soak: %w", err))
	}
	// The middle third must reach the top of the band history settles in:
	// a set is dropped up to one pass after it is due.
	if band := c.Retention + c.Interval + retention.Period(c.Interval); c.LevelTolerance > 0 && c.Traffic*2/3 < band {
		errs = append(errs, fmt.Errorf("soak: to check the levelling off, two thirds of Traffic (%s) must reach Retention + Interval + one maintenance period (%s)", c.Traffic*2/3, band))
	}
	return errors.Join(errs...)
}
