package delivery

import (
	"math/rand/v2"
	"time"

	"github.com/riverqueue/river/rivertype"
)

// The bounds of JobRetryPolicy.
const (
	// FirstJobRetryDelay is the ceiling of the delay after a delivery job's
	// first error.
	FirstJobRetryDelay = time.Second
	// MaxJobRetryDelay is the largest ceiling of any delay after a job
	// error: however long a brownout lasted, a job waits at most this long
	// once it is over.
	MaxJobRetryDelay = 5 * time.Minute
)

// JobRetryPolicy is the river.ClientRetryPolicy of the dispatcher's River
// client: it decides when a job that returned an error (the database was
// unreachable, an attempt could not be recorded) or whose process died runs
// again. It is not the schedule of a delivery's HTTP attempts: a failed
// attempt is recorded and its job snoozes until the retry that package
// schedule drew.
//
// Error n of a job (n = 1 for its first) is retried after a delay drawn
// uniformly from [c/2, c), where c = min(MaxJobRetryDelay,
// FirstJobRetryDelay·2^(n−1)): under 1 s, 2 s, 4 s and so on, from the
// tenth error on 2.5 to 5 minutes. River's default, n⁴ seconds, stretched a
// job's 25 attempts over weeks, and after a brownout of ten errors a job
// waited 2.8 hours. The half that is not drawn keeps a database that is
// down from being asked again at once; the drawn half spreads the jobs that
// failed together. Errors are counted as River does, by the errors recorded
// on the job, since a snooze takes its attempt back.
//
// With MaxJobAttempts the delays add up to at least 3.8 hours before River
// discards a job; a job discarded anyway is found by the dispatcher's
// reconciler, which gives its delivery a new one.
//
// The zero JobRetryPolicy is ready to use.
type JobRetryPolicy struct {
	// Rand is the source of the jitter. Nil means the global source of
	// math/rand/v2. A seeded *rand.Rand makes the delays reproducible; it
	// is not safe for concurrent use, so such a policy must not be shared
	// by a running client.
	Rand *rand.Rand
	// Now is the clock the retry is scheduled from. Nil means time.Now.
	Now func() time.Time
}

// NextRetry implements river.ClientRetryPolicy.
func (p JobRetryPolicy) NextRetry(job *rivertype.JobRow) time.Time {
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	return now().Add(p.Delay(len(job.Errors) + 1))
}

// Delay draws the delay after error n of a job: uniformly from
// [JobRetryCeiling(n)/2, JobRetryCeiling(n)).
func (p JobRetryPolicy) Delay(n int) time.Duration {
	ceiling := JobRetryCeiling(n)
	half := int64(ceiling / 2)
	if p.Rand == nil {
		return time.Duration(half + rand.Int64N(int64(ceiling)-half))
	}
	return time.Duration(half + p.Rand.Int64N(int64(ceiling)-half))
}

// JobRetryCeiling returns min(MaxJobRetryDelay, FirstJobRetryDelay·2^(n−1)),
// the upper bound of the delay after error n. An n below 1 counts as 1; it
// does not overflow for any n.
func JobRetryCeiling(n int) time.Duration {
	shift := max(n, 1) - 1
	// FirstJobRetryDelay·2^shift > MaxJobRetryDelay exactly when
	// FirstJobRetryDelay > MaxJobRetryDelay>>shift, which needs no product
	// that might overflow.
	if shift >= 63 || FirstJobRetryDelay > MaxJobRetryDelay>>shift {
		return MaxJobRetryDelay
	}
	return FirstJobRetryDelay << shift
}
