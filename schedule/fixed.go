package schedule

import "time"

// Fixed is a schedule with no randomness: Fixed[n−1] is how long retry n
// waits after the previous attempt failed, and the delivery is exhausted
// after the last entry. It expresses published provider schedules, for
// example Svix's:
//
//	schedule.Fixed{5 * time.Second, 5 * time.Minute, 30 * time.Minute,
//		2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}
//
// A negative entry counts as zero. An empty Fixed never retries.
type Fixed []time.Duration

// Next returns now plus the delay of retry attempt (attempt 1 is the first
// retry; below 1 is treated as 1). ok is false when attempt is past the end
// of the list. firstAttempt is not used: a fixed schedule ends with its list.
func (f Fixed) Next(attempt int, firstAttempt, now time.Time) (at time.Time, ok bool) {
	i := max(attempt, 1) - 1
	if i >= len(f) {
		return time.Time{}, false
	}
	return now.Add(max(f[i], 0)), true
}

// Offsets returns when each attempt runs, measured from the first attempt,
// if every attempt fails at once: 0 for the first attempt, then the running
// sum of the delays. The last entry is when the final retry runs.
func (f Fixed) Offsets() []time.Duration {
	offsets := make([]time.Duration, 0, len(f)+1)
	var at time.Duration
	offsets = append(offsets, at)
	for _, d := range f {
		at += max(d, 0)
		offsets = append(offsets, at)
	}
	return offsets
}
