package retention

import (
	"context"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// Args is the River job of a pass. River's leader inserts one every
// Period; any dispatcher works it.
type Args struct{}

// Kind implements river.JobArgs.
func (Args) Kind() string { return "herald.history_partitions" }

// InsertOpts lets one pass wait or run at a time, on queue.
func insertOpts(queue string) *river.InsertOpts {
	return &river.InsertOpts{
		Queue: queue,
		UniqueOpts: river.UniqueOpts{ByState: []rivertype.JobState{
			rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
			rivertype.JobStateRunning, rivertype.JobStateScheduled,
		}},
	}
}

// Worker runs a pass for each Args job.
type Worker struct {
	river.WorkerDefaults[Args]
	m *Maintainer
}

// NewWorker returns the worker of m's passes.
func NewWorker(m *Maintainer) *Worker { return &Worker{m: m} }

// Timeout implements river.Worker: a pass is a few catalogue changes and
// bounded deletes.
func (w *Worker) Timeout(*river.Job[Args]) time.Duration { return 5 * time.Minute }

// Work implements river.Worker.
func (w *Worker) Work(ctx context.Context, _ *river.Job[Args]) error {
	_, err := w.m.Pass(ctx)
	return err
}

// PeriodicJob is the periodic job that runs m's passes on queue every
// Period of its interval, and once when River starts.
func PeriodicJob(m *Maintainer, queue string) *river.PeriodicJob {
	return river.NewPeriodicJob(
		river.PeriodicInterval(Period(m.interval)),
		func() (river.JobArgs, *river.InsertOpts) { return Args{}, insertOpts(queue) },
		&river.PeriodicJobOpts{RunOnStart: true},
	)
}
