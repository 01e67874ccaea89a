package dispatcher

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/heraldhq/herald/delivery"
)

// CertificateCheckInterval is how often one dispatcher looks for endpoint
// client certificates about to lapse (health.Tracker.WarnExpiringCertificates):
// hourly, so an owner hears of one within the hour it enters the warning
// period.
const CertificateCheckInterval = time.Hour

// certificateWarner publishes the operational events of certificates about
// to lapse; *health.Tracker is one.
type certificateWarner interface {
	WarnExpiringCertificates(ctx context.Context, tx pgx.Tx, now time.Time) (int, error)
}

// certificateCheckArgs is the periodic River job of the certificate check;
// River's leader inserts one every CertificateCheckInterval.
type certificateCheckArgs struct{}

// Kind implements river.JobArgs.
func (certificateCheckArgs) Kind() string { return "herald.certificate_check" }

// InsertOpts puts the job on the delivery queue, one waiting or running at
// a time (as reconcileArgs).
func (certificateCheckArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{
		Queue: delivery.Queue,
		UniqueOpts: river.UniqueOpts{ByState: []rivertype.JobState{
			rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
			rivertype.JobStateRunning, rivertype.JobStateScheduled,
		}},
	}
}

type certificateCheck struct {
	river.WorkerDefaults[certificateCheckArgs]

	pool   *pgxpool.Pool
	warner certificateWarner
	logger *slog.Logger
}

// Work warns of the certificates about to lapse, in one transaction with
// the events it publishes.
func (c *certificateCheck) Work(ctx context.Context, _ *river.Job[certificateCheckArgs]) error {
	var warned int
	err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		var err error
		warned, err = c.warner.WarnExpiringCertificates(ctx, tx, time.Now())
		return err
	})
	if err != nil {
		return fmt.Errorf("certificate check: %w", err)
	}
	if warned > 0 {
		c.logger.InfoContext(ctx, "warned of expiring client certificates", "count", warned)
	}
	return nil
}

func certificatePeriodicJob() *river.PeriodicJob {
	return river.NewPeriodicJob(
		river.PeriodicInterval(CertificateCheckInterval),
		func() (river.JobArgs, *river.InsertOpts) { return certificateCheckArgs{}, nil },
		&river.PeriodicJobOpts{RunOnStart: true},
	)
}
