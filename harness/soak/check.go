package soak

import (
	"fmt"
	"time"

	"github.com/heraldhq/herald/retention"
)

// Level is the levelling-off check's reading of one size of the curve.
type Level struct {
	// MiddleMax and LastMax are the largest size sampled in the middle and
	// the last third of the traffic.
	MiddleMax, LastMax int64
	// Samples counts the samples of the traffic.
	Samples int
}

// Ratio is LastMax over MiddleMax: at least 1.5 for history growing at a
// steady pace from nothing (1.5 sampled continuously, more with samples
// apart), about 1 for history held by retention.
func (l Level) Ratio() float64 {
	if l.MiddleMax == 0 {
		return 0
	}
	return float64(l.LastMax) / float64(l.MiddleMax)
}

// level reads size of the samples taken between from and to (elapsed
// times) in thirds: the middle third is [from+third, from+2·third), the
// last the rest up to to.
func level(samples []Sample, from, to time.Duration, size func(Sample) int64) Level {
	var l Level
	third := (to - from) / 3
	for _, s := range samples {
		switch {
		case s.Elapsed < from || s.Elapsed > to:
			continue
		case s.Elapsed >= from+2*third:
			l.LastMax = max(l.LastMax, size(s))
		case s.Elapsed >= from+third:
			l.MiddleMax = max(l.MiddleMax, size(s))
		}
		l.Samples++
	}
	return l
}

// Drop is a partition set a pass dropped.
type Drop struct {
	// Elapsed is when, since the run started.
	Elapsed time.Duration
	// Suffix names the set.
	Suffix string
	// Publishing: the producer's steady traffic was on.
	Publishing bool
	// PendingAfter counts the deliveries pending, all in other sets, at
	// the first sample after the drop; -1 when no sample followed.
	PendingAfter int
	// KeptBefore is why an earlier pass kept the set past retention;
	// empty when none did.
	KeptBefore retention.Outcome
}

// InFlight reports a drop made while the producer published and
// deliveries were pending in the sets that remained.
func (d Drop) InFlight() bool { return d.Publishing && d.PendingAfter > 0 }

// drops pairs each dropped set with the samples: started is when the run
// started, publishing says whether the traffic was on at a time.
func drops(outcomes []PassOutcome, samples []Sample, started time.Time, publishing func(time.Time) bool) (dropped []Drop, kept map[string]retention.Outcome) {
	kept = map[string]retention.Outcome{}
	for _, o := range outcomes {
		if o.Outcome != retention.Dropped {
			if _, seen := kept[o.Suffix]; !seen && o.Outcome != retention.Busy {
				kept[o.Suffix] = o.Outcome
			}
			continue
		}
		d := Drop{Elapsed: o.At.Sub(started), Suffix: o.Suffix, Publishing: publishing(o.At), PendingAfter: -1, KeptBefore: kept[o.Suffix]}
		for _, s := range samples {
			if s.Elapsed > d.Elapsed {
				d.PendingAfter = s.Pending
				break
			}
		}
		dropped = append(dropped, d)
	}
	return dropped, kept
}

// check fills r.Problems from what the run found.
func check(r *Report) {
	cfg := r.Config
	if r.LostMain > 0 || r.LostLagging > 0 {
		r.problem("%d of %d events to the main endpoint and %d of %d to the lagging one were never answered 200: lost", r.LostMain, r.Events, r.LostLagging, r.BacklogEvents)
	}
	if r.PendingAtEnd > 0 || r.UndispatchedAtEnd > 0 {
		r.problem("%d deliveries still pending and %d messages undispatched after settling for up to %s", r.PendingAtEnd, r.UndispatchedAtEnd, cfg.Settle)
	}
	if cfg.LevelTolerance > 0 {
		r.checkLevel("history", r.Level)
		r.checkLevel("the database", r.DatabaseLevel)
	}
	inFlight := 0
	dropped := map[string]bool{}
	for _, d := range r.Drops {
		if d.InFlight() {
			inFlight++
		}
		dropped[d.Suffix] = true
	}
	if len(r.Drops) == 0 {
		r.problem("no partition set was dropped")
	}
	if inFlight < cfg.MinDroppedInFlight {
		r.problem("%d partition sets were dropped while the traffic ran and deliveries were pending; at least %d expected", inFlight, cfg.MinDroppedInFlight)
	}
	if len(r.Kept) < cfg.MinKeptPending {
		r.problem("%d partition sets past retention were kept for a pending delivery or an undispatched message; at least %d expected", len(r.Kept), cfg.MinKeptPending)
	}
	for suffix, why := range r.Kept {
		if !dropped[suffix] {
			r.problem("partition set %s, kept past retention (%s), was not dropped once it settled", suffix, why)
		}
	}
}

// checkLevel checks that what levelled off, within the tolerance.
func (r *Report) checkLevel(what string, l Level) {
	switch ratio := l.Ratio(); {
	case l.MiddleMax == 0 || l.LastMax == 0:
		r.problem("the traffic's middle and last thirds have no samples of %s's size to compare (%d samples)", what, l.Samples)
	case ratio > 1+r.Config.LevelTolerance:
		r.problem("%s did not level off: its largest size in the traffic's last third is %.2f times that in its middle third (at most %.2f allowed)", what, ratio, 1+r.Config.LevelTolerance)
	}
}

func (r *Report) problem(format string, args ...any) {
	r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
}
