package delivery

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// EarlierAttemptSnooze is how long a delivery's job waits before it looks
// again when an earlier job of the same delivery is still running.
//
// A requeue (resend, replay) or the reconciler moves a delivery on to a new
// job while an attempt of its old job, or of a batch job making its first
// attempt, may be in flight. The old job records nothing (the generation
// fence, see Args.Generation), but its request is still open at the
// receiver; the new job sends only once no earlier job of the delivery is
// running, so a delivery never has two attempts in flight at once. A job
// that starts after the requeue sees the new generation and ends without
// sending, so once the new job has found none running, none can start.
// A batch job checks only when it carries a requeue (generation above 0):
// the fan-out's batches are the first jobs their deliveries have. A
// replay's batch job of deliveries that had settled long before does not
// check either (BatchArgs.Quiet).
const EarlierAttemptSnooze = time.Second

// checkAlone returns a snooze of EarlierAttemptSnooze while a job other
// than job that may have an attempt of one of ds in flight is running, and
// nil otherwise.
func (w *Worker) checkAlone(ctx context.Context, job *rivertype.JobRow, ds ...loaded) error {
	ids := make([]string, len(ds))
	batched := false
	for i, d := range ds {
		ids[i] = d.id.String()
		batched = batched || d.attemptCount == d.attemptsBeforeRequeue
	}
	var running bool
	if err := w.db.QueryRow(ctx, earlierAttemptRunning, ids, job.ID, batched).Scan(&running); err != nil {
		return fmt.Errorf("look for an earlier attempt of %d deliveries in flight: %w", len(ds), err)
	}
	if running {
		w.logger.DebugContext(ctx, "an earlier job of a delivery is still running; waiting for it", "job", job.ID, "deliveries", len(ds))
		return river.JobSnooze(EarlierAttemptSnooze)
	}
	return nil
}
