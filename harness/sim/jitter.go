package sim

import (
	"math/rand/v2"
	"time"

	"github.com/heraldhq/herald/schedule"
)

// The jitter experiment's sender and receiver (the article's): every
// delivery fails at t=0 and keeps failing until the receiver is back.
const (
	recovery    = 300 * time.Second
	jitterBase  = time.Second
	jitterCap   = time.Hour
	jitterRange = 30 * day // long enough never to end a delivery here
)

// JitterRow is one retry strategy's result.
type JitterRow struct {
	Name string
	// Deliveries is how many deliveries failed together at t=0.
	Deliveries int
	// Attempts counts every attempt of every delivery.
	Attempts int
	// PeakAfterRecovery is the most attempts in one second at or after
	// the receiver came back.
	PeakAfterRecovery int
	// LastDelivered is when the last delivery succeeded.
	LastDelivered time.Duration
	// PerSecond[s] is how many attempts arrived in second s.
	PerSecond []int
}

// noJitter is exponential backoff without jitter: retry n waits exactly
// the ceiling of the same Policy.
type noJitter struct{ schedule.Policy }

func (p noJitter) Next(attempt int, firstAttempt, now time.Time) (time.Time, bool) {
	return now.Add(p.Ceiling(attempt)), true
}

// Jitter retries cfg.JitterDeliveries deliveries that all failed at t=0
// against a receiver that is back at t=300 s, under three strategies:
// exponential backoff from 1 s capped at 1 h without jitter and with full
// jitter (the article's two), and Herald's own default policy.
func Jitter(cfg Config) []JitterRow {
	article := schedule.Policy{Base: jitterBase, Cap: jitterCap, Window: jitterRange}
	full := article
	full.Rand = rand.New(ptr(stream(cfg.Seed + 1)))
	herald := schedule.Default()
	herald.Rand = rand.New(ptr(stream(cfg.Seed + 2)))
	return []JitterRow{
		retryStorm("exponential, no jitter", noJitter{article}, cfg.JitterDeliveries),
		retryStorm("exponential, full jitter", full, cfg.JitterDeliveries),
		retryStorm("Herald schedule.Default()", herald, cfg.JitterDeliveries),
	}
}

func retryStorm(name string, s schedule.Schedule, deliveries int) JitterRow {
	row := JitterRow{Name: name, Deliveries: deliveries}
	first := time.Unix(0, 0)
	for range deliveries {
		now := first
		for attempt := 1; ; attempt++ {
			t := now.Sub(first)
			row.Attempts++
			sec := int(t / time.Second)
			for len(row.PerSecond) <= sec {
				row.PerSecond = append(row.PerSecond, 0)
			}
			row.PerSecond[sec]++
			if t >= recovery {
				row.LastDelivered = max(row.LastDelivered, t)
				break
			}
			at, ok := s.Next(attempt, first, now)
			if !ok {
				break
			}
			now = at
		}
	}
	for sec := int(recovery / time.Second); sec < len(row.PerSecond); sec++ {
		row.PeakAfterRecovery = max(row.PeakAfterRecovery, row.PerSecond[sec])
	}
	return row
}

func ptr[T any](v T) *T { return &v }
